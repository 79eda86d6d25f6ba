import { type Static, Type } from '@sinclair/typebox';
import { STATS_SECONDS, STATUS_CLASSES } from '../harness/stats.js';
import {
  type ControlApp,
  type ControlOptions,
  errors,
  SessionField,
  sessionOf,
} from './context.js';

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
const StatsSchema = Type.Object({
  now: Type.Integer({ description: 'emulator time, Unix ms' }),
  window_s: Type.Integer(),
  step_s: Type.Integer(),
  steps: Type.Array(
    Type.Object({
      at: Type.Integer({ description: 'emulator time the step starts at, Unix ms' }),
      groups: Groups,
    }),
    { maxItems: STATS_SECONDS, description: 'Oldest first; the last is the unfinished step' },
  ),
  tasks: Type.Object(
    { submitted: Count, processing: Count, succeed: Count, failed: Count },
    { description: 'Video tasks by status now' },
  ),
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

/** Traffic by step, per API group, and tasks by status (README "Dashboard"). */
export function statsRoutes(
  app: ControlApp,
  { clock, video, stats }: Pick<ControlOptions, 'clock' | 'video' | 'stats'>,
): void {
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
      const session = sessionOf(request, request.query.session);
      const now = clock.now();
      return {
        now,
        window_s,
        step_s,
        steps: stats.steps(now, window_s, step_s, session),
        tasks: await video.statusCounts(now, session),
      };
    },
  );
}
