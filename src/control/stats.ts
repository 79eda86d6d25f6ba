import { type Static, Type } from '@sinclair/typebox';
import { MAX_STATS_WATCHERS, STATS_SECONDS, STATUS_CLASSES } from '../harness/stats.js';
import { GatewayError } from '../platform/errors.js';
import { reqIdField } from '../platform/request.js';
import {
  type ControlApp,
  type ControlOptions,
  errors,
  liveStreamHead,
  openLiveStream,
  SessionField,
  sessionOf,
} from './context.js';
import { JOURNAL_STREAM_MAX_BUFFERED } from './journal.js';

/** The widest step (s); and the default window and step. */
export const STATS_MAX_STEP_S = 300;
const DEFAULT_WINDOW_S = 900;
const DEFAULT_STEP_S = 5;

const Count = Type.Integer({ minimum: 0 });
const Percentile = Type.Union([Type.Number({ minimum: 0 }), Type.Null()]);
const GroupStepSchema = Type.Object({
  requests: Type.Object(Object.fromEntries(STATUS_CLASSES.map((c) => [c, Count])), {
    description: 'Requests that arrived in the step, by status class (`aborted`: the client left)',
  }),
  rate: Type.Number({ minimum: 0, description: 'requests per second over the step' }),
  latency_ms: Type.Object(
    { p50: Percentile, p95: Percentile, p99: Percentile },
    { description: 'Within about 10 % (a histogram of buckets 19 % wide); null: no request' },
  ),
  tokens: Type.Object(
    { input: Count, cache_read: Count, cache_creation: Count, output: Count },
    { description: "As each API reports them: messages' input without the cache's, chat's prompt" },
  ),
  open_streams: Type.Integer({ minimum: 0, description: 'the most streams open at once' }),
});
const Groups = Type.Object({
  chat: GroupStepSchema,
  messages: GroupStepSchema,
  video: GroupStepSchema,
});
const StepSchema = Type.Object({
  at: Type.Integer({ description: 'emulator time the step starts at, Unix ms' }),
  groups: Groups,
});
const TasksSchema = Type.Object(
  { submitted: Count, processing: Count, succeed: Count, failed: Count },
  { description: 'Video tasks by status now' },
);
const StatsSchema = Type.Object({
  now: Type.Integer({ description: 'emulator time, Unix ms' }),
  window_s: Type.Integer(),
  step_s: Type.Integer(),
  steps: Type.Array(StepSchema, {
    maxItems: STATS_SECONDS,
    description: 'Oldest first; the last is the unfinished step',
  }),
  tasks: TasksSchema,
});

const StatsQuery = Type.Object(
  {
    window_s: Type.Optional(
      Type.Integer({ minimum: 1, maximum: STATS_SECONDS, default: DEFAULT_WINDOW_S }),
    ),
    step_s: Type.Optional(
      Type.Integer({ minimum: 1, maximum: STATS_MAX_STEP_S, default: DEFAULT_STEP_S }),
    ),
    session: SessionField,
  },
  { additionalProperties: false },
);
export type StatsView = Static<typeof StatsSchema>;

/** Traffic by step, per API group, and tasks by status (docs/control.md "Stats", docs/dashboard.md). */
export function statsRoutes(
  app: ControlApp,
  options: Pick<ControlOptions, 'clock' | 'video' | 'stats' | 'setTimer'>,
): void {
  const { clock } = options;
  app.get(
    '/stats',
    {
      schema: {
        summary:
          'Traffic per step of the emulator clock, per API group (of one session, or all): requests by status class, latency percentiles, tokens, open streams; and video tasks by status now',
        querystring: StatsQuery,
        response: { 200: StatsSchema, ...errors },
      },
    },
    async (request) => {
      const { window_s = DEFAULT_WINDOW_S, step_s = DEFAULT_STEP_S } = request.query;
      return view(
        options,
        clock.now(),
        window_s,
        step_s,
        sessionOf(request, request.query.session),
      );
    },
  );
  streamRoute(app, options);
}

type StatsOptions = Pick<ControlOptions, 'clock' | 'video' | 'stats' | 'setTimer'>;

async function view(
  { video, stats }: StatsOptions,
  now: number,
  window_s: number,
  step_s: number,
  session: string | undefined,
): Promise<StatsView> {
  return {
    now,
    window_s,
    step_s,
    steps: await stats.steps(now, window_s, step_s, session),
    tasks: await video.statusCounts(now, session),
  };
}

/** The live stats stream's document: SSE events, bounded like the journal's stream. */
const STREAM_SCHEMA = {
  summary:
    'The live stats: `event: window` with the window so far, then `event: step` with each step as it closes on the emulator clock',
  querystring: StatsQuery,
  produces: ['text/event-stream'],
  response: {
    200: {
      description: `\`event: window\` (data as GET /_emulator/stats answers), then one \`event: step\` per closed step (data: \`now\`, \`step_s\`, \`step\` as an item of \`steps\`, \`tasks\`). At most ${MAX_STATS_WATCHERS} at once`,
      content: { 'text/event-stream': { schema: { type: 'string' } } },
    },
    ...errors,
  },
};

/**
 * The live stats: the window so far (`event: window`, as `/stats` answers it), then each step
 * as it closes on the emulator clock (`event: step`): a timer to the step's end, and at once
 * when the clock is moved (an advance may close many steps: each its event, at most a window's).
 */
function streamRoute(app: ControlApp, options: StatsOptions) {
  const { clock, stats, setTimer } = options;
  /** Live stats streams dropped for not reading (each is logged with this count). */
  let dropped = 0;
  app.get('/stats/stream', { schema: STREAM_SCHEMA }, async (request, reply) => {
    const { window_s = DEFAULT_WINDOW_S, step_s = DEFAULT_STEP_S } = request.query;
    const session = sessionOf(request, request.query.session);
    if (request.method === 'HEAD') return liveStreamHead(reply);
    const raw = reply.raw;
    let over = false;
    let cancelTimer: (() => void) | undefined;
    let unsubscribe: (() => unknown) | undefined;
    const stop = stats.watch(() => raw.end());
    if (stop === 'closed') throw new GatewayError(503, 'The emulator is shutting down.');
    if (!stop) {
      throw new GatewayError(429, `At most ${MAX_STATS_WATCHERS} live stats streams at once.`);
    }
    const end = () => {
      over = true;
      stop();
      cancelTimer?.();
      unsubscribe?.();
    };
    const now = clock.now();
    let first: StatsView;
    try {
      first = await view(options, now, window_s, step_s, session);
    } catch (err) {
      end();
      throw err;
    }
    openLiveStream(reply);
    raw.once('close', end);
    const stepMs = step_s * 1000;
    /** The start (ms) of the step the next event is for: the one under way in the window. */
    let next = Math.floor(now / stepMs) * stepMs;
    /** Writes a frame; false when the client stopped reading and was dropped. */
    const send = (frame: string): boolean => {
      if (over || raw.destroyed) return false;
      raw.write(frame);
      const buffered = raw.writableLength;
      if (buffered <= JOURNAL_STREAM_MAX_BUFFERED) return true;
      dropped++;
      request.log.warn(
        { ...reqIdField(request), bufferedBytes: buffered, dropped },
        'live stats dropped: its client stopped reading',
      );
      end();
      raw.destroy();
      return false;
    };
    let busy = false;
    const closeSteps = async () => {
      if (over || busy) return;
      busy = true;
      cancelTimer?.();
      try {
        const at = clock.now();
        // The clock moved back (a reset): the window starts again from the step under way.
        if (at < next) next = Math.floor(at / stepMs) * stepMs;
        const closed = Math.floor(at / stepMs) * stepMs - stepMs;
        if (closed >= next) {
          // At most a window's steps, however far the clock jumped.
          const from = Math.max(next, closed - (Math.ceil(window_s / step_s) - 1) * stepMs);
          const count = (closed - from) / stepMs + 1;
          const [steps, tasks] = await Promise.all([
            stats.steps(at, count * step_s, step_s, session, true),
            options.video.statusCounts(at, session),
          ]);
          next = closed + stepMs;
          for (const step of steps) {
            if (!send(`event: step\ndata: ${JSON.stringify({ now: at, step_s, step, tasks })}\n\n`))
              return;
          }
        }
        if (!over) cancelTimer = setTimer(closeSteps, Math.max(1, next + stepMs - clock.now()));
      } catch (err) {
        request.log.warn({ ...reqIdField(request), err }, 'live stats not read');
        end();
        raw.destroy();
      } finally {
        busy = false;
      }
    };
    if (!send(`event: window\ndata: ${JSON.stringify(first)}\n\n`)) return;
    unsubscribe = clock.onChange(() => {
      void closeSteps();
    });
    cancelTimer = setTimer(closeSteps, Math.max(1, next + stepMs - clock.now()));
  });
}
