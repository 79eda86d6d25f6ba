import { existsSync } from 'node:fs';
import { isIP } from 'node:net';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Clock, SetTimer } from '../platform/clock.js';
import { GatewayError, neutralError } from '../platform/errors.js';
import { defaultKind, type Faults, MAX_FAULT_BYTES, MAX_FAULT_RULES } from '../platform/faults.js';
import { canonicalHost, hostOfHeader, isLocalhostName } from '../platform/host.js';
import {
  type Journal,
  type JournalFilter,
  MAX_JOURNAL_WAITS,
  MAX_JOURNAL_WATCHERS,
} from '../platform/journal.js';
import { MatchError } from '../platform/match.js';
import type { Metrics } from '../platform/metrics.js';
import { holdOpen, reqIdField } from '../platform/request.js';
import { redactUrl } from '../platform/secrets.js';
import {
  DEFAULT_SESSION,
  readSession,
  SESSION_HEADER,
  SESSION_PATTERN,
} from '../platform/session.js';
import { normalizeError } from '../platform/validation.js';
import type { DriftReport } from '../record/drift.js';
import { RecordingsError } from '../record/recordings.js';
import { FixtureError, type Fixtures, ruleProblem } from '../text/fixtures.js';
import type { TextEngine } from '../text/index.js';
import { MAX_STUB_BYTES, MAX_STUBS } from '../text/replies.js';
import type { CallbackLog } from '../video/callbacks.js';
import { TaskRecordSchema } from '../video/schemas.js';
import type { VideoService } from '../video/service.js';
import {
  AdvanceSchema,
  CacheListSchema,
  CallbackListSchema,
  ClockSchema,
  ControlErrorSchema,
  DriftReportSchema,
  FaultListSchema,
  FaultRuleSchema,
  FaultViewSchema,
  FixturesViewSchema,
  ForceTaskSchema,
  HealthSchema,
  JournalDetailSchema,
  JournalEntrySchema,
  JournalQuerySchema,
  JournalSchema,
  JournalWaitQuerySchema,
  ReadySchema,
  StubListSchema,
  StubSchema,
  StubViewSchema,
  TaskListSchema,
  VerifiedSchema,
  VerifyFailedSchema,
  VerifySchema,
  WaitTimeoutSchema,
} from './schemas.js';
import { UI_PATHS, uiRoutes } from './ui.js';

const errors = { '4xx': ControlErrorSchema };

export interface ControlOptions {
  /** Whether the server listens (fixtures are loaded before the app exists). */
  listening(): boolean;
  /** When set, every route but health, ready and openapi.json needs `x-emulator-admin-token`. */
  adminToken: string | undefined;
  clock: Clock;
  journal: Journal;
  faults: Faults;
  video: VideoService;
  callbacks: CallbackLog;
  text: Pick<TextEngine, 'fixtures' | 'reloadFixtures' | 'replies' | 'promptCache'>;
  /** Wall-clock timers, for `journal/wait`. */
  setTimer: SetTimer;
  metrics: Metrics;
  /**
   * Names a browser page may reach the emulator by to change its state when no admin token is
   * set, besides localhost and IP addresses: HOST, PUBLIC_BASE_URL's host, the machine's name.
   */
  knownHosts: string[];
  /** RECORDINGS_DIR, the drift check's default directory. */
  recordingsDir: string | undefined;
  drift(dir: string): Promise<DriftReport>;
  /** Empties every store and puts the clock back to real time; or parts; or one session's. */
  reset(only?: readonly string[], session?: string): void | Promise<void>;
  /** Shared state: what a call waits for first (the clock and the rules as they are now). */
  begin?: () => Promise<void> | undefined;
  /** Shared state: why the store cannot be used now, if it cannot (`/ready` says it). */
  storeProblem?: () => string | undefined;
  /** Shared state: tells every replica the fixtures were read again. */
  fixturesReloaded?: () => Promise<void>;
}

/**
 * The session a control call acts on: its `x-emulator-session` header, else the `session` it
 * names in its query (reads and resets), else none (reads see every session).
 */
function sessionOf(request: FastifyRequest, named?: string): string | undefined {
  if (request.headers[SESSION_HEADER] === undefined) return named;
  const session = readSession(request);
  if (named !== undefined && named !== session) {
    throw new GatewayError(400, `session: ${named} differs from the ${SESSION_HEADER} header`);
  }
  return session;
}

const SessionField = Type.Optional(Type.String({ pattern: SESSION_PATTERN }));

/** `?session=`: narrows a read, or a removal, to one session, as the session header does. */
const SessionQuery = Type.Object({ session: SessionField }, { additionalProperties: false });

/** No query parameter at all (see the onRoute hook of controlRoutes). */
const NoQuery = Type.Object({}, { additionalProperties: false });

/** `?session=&limit=`: a list of one session (or of all), at most `limit` long. */
const ListQuery = (most: number, fallback: number) =>
  Type.Object(
    {
      session: SessionField,
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: most, default: fallback })),
    },
    { additionalProperties: false },
  );

/** The tasks and the cache entries listed when no `limit` is given. */
const TASKS_LISTED = 1000;
const CACHE_LISTED = 200;

/** A match that cannot be compiled is the caller's 400, naming the field. */
function compiled<T>(make: () => T): T {
  try {
    return make();
  } catch (err) {
    if (err instanceof MatchError) throw new GatewayError(400, err.message);
    throw err;
  }
}

const WAIT_DEFAULT_MS = 30_000;

/**
 * What a live journal (`journal/stream`) may hold written but not yet taken by its client's
 * socket. A watcher past it has stopped reading: it is dropped (its connection closed), so that
 * a paused or stuck client cannot make the emulator buffer every request for it.
 */
export const JOURNAL_STREAM_MAX_BUFFERED = 1024 * 1024;

/** Each entry's event, made once however many watchers send it. */
const entryFrames = new WeakMap<object, string>();
const entryFrame = (entry: object): string => {
  let frame = entryFrames.get(entry);
  if (frame === undefined) {
    frame = `event: entry\ndata: ${JSON.stringify(entry)}\n\n`;
    entryFrames.set(entry, frame);
  }
  return frame;
};

/** Methods that change the emulator's state, which a page of another origin may not call. */
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Whether an `Origin` names this emulator: the same host and port as the request's `Host`. */
function isOwnOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed page, a file) and anything else that is no origin
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const defaultPort = url.protocol === 'http:' ? ':80' : ':443';
  const own = host.toLowerCase();
  const normalized = own.endsWith(defaultPort) ? own.slice(0, -defaultPort.length) : own;
  return url.host === normalized;
}

/**
 * Why a control call from a browser page is refused, or undefined. A page of another origin can
 * send a "simple" POST (no preflight) and wipe the emulator's state, token or not: a
 * state-changing call is let through when it carries no `Origin` (curl, SDKs, tests), when its
 * `Origin` is the emulator's own (the dashboard) or the browser says `Sec-Fetch-Site:
 * same-origin`, or when CORS_ORIGINS lets that origin in (@fastify/cors, registered before this
 * plugin, has then answered it with `Access-Control-Allow-Origin` in its own onRequest hook).
 * A page of another origin cannot read an answer (CORS), but through DNS rebinding a page of the
 * attacker's name is same-origin (its name now points here): so, without an admin token, a page
 * of the emulator's own origin must have reached it by a name it knows, to read as to write.
 */
function crossSiteProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  trustedHost: ((host: string | undefined) => boolean) | undefined,
): string | undefined {
  const origin = request.headers.origin;
  const site = request.headers['sec-fetch-site'];
  const { host } = request.headers;
  const rebound = () =>
    trustedHost === undefined || trustedHost(host)
      ? undefined
      : `Host ${host} is not a name this emulator knows: a page reached through it may not call ${request.method} /_emulator routes (a page of another site can point a name of its own here: DNS rebinding). Open it through localhost, an IP address, HOST or PUBLIC_BASE_URL, or set EMULATOR_ADMIN_TOKEN.`;
  if (!STATE_CHANGING.has(request.method)) {
    // The dashboard's files hold no data: they load, and its data calls say what is wrong.
    const data = site === 'same-origin' && !OPEN_ROUTES.has(request.routeOptions.url ?? '');
    return data ? rebound() : undefined;
  }
  const allowed = origin !== undefined && reply.getHeader('access-control-allow-origin');
  if (allowed === origin || allowed === '*') return undefined;
  if (site === 'same-origin' || (origin !== undefined && isOwnOrigin(origin, host))) {
    return rebound();
  }
  if (origin !== undefined) {
    return `Origin ${origin} is not this emulator's: a page of another origin may not call ${request.method} /_emulator routes (set CORS_ORIGINS to let it).`;
  }
  if (site === 'cross-site') {
    return `A cross-site page may not call ${request.method} /_emulator routes (Sec-Fetch-Site: cross-site).`;
  }
  return undefined;
}

/**
 * Routes that never need the admin token: the probes, and the OpenAPI document, which holds no
 * data (the docs UI at /_emulator/docs, mounted outside this plugin, serves it too).
 */
const OPEN_ROUTES = new Set([
  '/_emulator/health',
  '/_emulator/ready',
  '/_emulator/openapi.json',
  ...UI_PATHS,
]);

/** What `POST /_emulator/reset?only=` can name: each is a registered feature's name. */
export const RESETTABLE = [
  'tasks',
  'cache',
  'faults',
  'stubs',
  'journal',
  'callbacks',
  'limits',
  'clock',
];

/** The emulator-only surface under `/_emulator`: clock, journal, faults, tasks, fixtures. */
export const controlRoutes =
  (options: ControlOptions): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { adminToken, clock, journal, faults, video, callbacks, text } = options;
    const knownHosts = new Set(options.knownHosts.map(canonicalHost));
    /** Whether a Host header names localhost, an IP address, or a name the emulator knows. */
    const trustedHost = (header: string | undefined): boolean => {
      const host = hostOfHeader(header);
      return (
        host !== undefined && (isIP(host) !== 0 || isLocalhostName(host) || knownHosts.has(host))
      );
    };
    const { replies } = text;

    // A change (POST, PUT, DELETE) that declares no query takes none: `/reset?onyl=faults`
    // mistyped would otherwise reset everything. (Reads may be given a cache-buster.)
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      if (methods.every((m) => m === 'GET' || m === 'HEAD') || route.schema?.querystring) return;
      route.schema = { ...route.schema, querystring: NoQuery };
    });

    app.addHook('onRequest', (request, reply, done) => {
      const crossSite = crossSiteProblem(request, reply, adminToken ? undefined : trustedHost);
      if (crossSite !== undefined) return done(new GatewayError(403, crossSite));
      const open = OPEN_ROUTES.has(request.routeOptions.url ?? '');
      if (
        !open &&
        adminToken !== undefined &&
        request.headers['x-emulator-admin-token'] !== adminToken
      ) {
        return done(new GatewayError(401, 'x-emulator-admin-token header is missing or wrong.'));
      }
      const begun = open ? undefined : options.begin?.();
      if (begun === undefined) return done();
      begun.then(() => done(), done);
    });

    app.setErrorHandler((err, request, reply) => {
      const error = normalizeError(err);
      // A 500 is a bug: logged with the request id, as the API groups log theirs.
      if (error.status >= 500) request.log.error({ ...reqIdField(request), err }, 'request failed');
      const where = error.options.issue?.path.join('.');
      const message = where ? `${where} ${error.options.issue?.problem}` : error.message;
      return reply.code(error.status).send(neutralError(error.status, message));
    });

    app.setNotFoundHandler((request) => {
      throw new GatewayError(404, `No emulator route ${request.method} ${redactUrl(request.url)}`);
    });

    const clockView = () => ({ now: clock.now(), offset_ms: clock.offsetMs() });
    /** Live journals dropped for not reading (each is logged with this count). */
    let journalStreamsDropped = 0;

    app.get(
      '/health',
      { schema: { summary: 'Liveness', response: { 200: HealthSchema } } },
      async () => ({ status: 'ok' as const }),
    );

    app.get(
      '/ready',
      {
        schema: {
          summary:
            'Readiness: 503 until the fixtures are loaded and the server listens, and while the state store (STATE_URL) cannot be used',
          response: { 200: ReadySchema, 503: ReadySchema },
        },
      },
      async (_request, reply) => {
        if (!options.listening()) return reply.code(503).send({ status: 'starting' as const });
        const problem = options.storeProblem?.();
        if (problem !== undefined) {
          return reply.code(503).send({ status: 'unavailable' as const, reason: problem });
        }
        return { status: 'ready' as const };
      },
    );

    app.post(
      '/reset',
      {
        schema: {
          summary: 'Empty every store, or only the parts named in `only`',
          querystring: Type.Object(
            {
              only: Type.Optional(
                Type.String({
                  pattern: `^(${RESETTABLE.join('|')})(,(${RESETTABLE.join('|')}))*$`,
                  description: `comma-separated: ${RESETTABLE.join(', ')}`,
                }),
              ),
              session: Type.Optional(
                Type.String({
                  pattern: SESSION_PATTERN,
                  description: 'only what this session made (the clock is shared and stays)',
                }),
              ),
            },
            { additionalProperties: false },
          ),
          response: { 200: HealthSchema, ...errors },
        },
      },
      async (request) => {
        const session = sessionOf(request, request.query.session);
        await options.reset(request.query.only?.split(','), session);
        return { status: 'ok' as const };
      },
    );

    app.get(
      '/clock',
      { schema: { summary: 'Emulator time', response: { 200: ClockSchema, ...errors } } },
      async () => clockView(),
    );

    app.post(
      '/clock/advance',
      {
        schema: {
          summary: 'Move emulator time forward; due work runs at once',
          body: AdvanceSchema,
          response: { 200: ClockSchema, ...errors },
        },
      },
      async (request) => {
        await clock.advance(request.body.ms);
        return clockView();
      },
    );

    const journalFilter = (request: FastifyRequest, query: JournalFilter) =>
      compiled(() => journal.compile({ ...query, session: sessionOf(request, query.session) }));

    for (const url of ['/journal', '/requests']) {
      app.get(
        url,
        {
          schema: {
            summary:
              url === '/journal'
                ? 'Journal of gateway requests, oldest first, filtered'
                : 'The journal (alias of /_emulator/journal)',
            querystring: JournalQuerySchema,
            response: { 200: JournalSchema, ...errors },
          },
        },
        async (request) => ({
          requests: await journal.list(journalFilter(request, request.query)),
        }),
      );
      app.delete(
        url,
        {
          schema: {
            summary: "Empty the journal (or one session's part of it)",
            querystring: SessionQuery,
            response: { 200: HealthSchema, ...errors },
          },
        },
        async (request) => {
          const session = sessionOf(request, request.query.session);
          if (session === undefined) await journal.reset();
          else await journal.resetSession(session);
          return { status: 'ok' as const };
        },
      );
    }

    app.get(
      '/journal/stream',
      {
        schema: {
          summary:
            'The live journal: each request as it is journaled, as server-sent events (`event: entry`)',
          querystring: Type.Object(
            { session: Type.Optional(Type.String({ pattern: SESSION_PATTERN })) },
            { additionalProperties: false },
          ),
          produces: ['text/event-stream'],
          response: {
            200: {
              description: 'one `event: entry` with a journal entry (without its response) each',
              content: { 'text/event-stream': { schema: { type: 'string' } } },
            },
            ...errors,
          },
        },
      },
      async (request, reply) => {
        const session = sessionOf(request, request.query.session);
        if (request.method === 'HEAD') {
          // A GET's headers, without a stream to hold: Node drops a HEAD's body writes, so a
          // watch would never flush its headers and would hold a live-journal slot for ever.
          return reply
            .header('content-type', 'text/event-stream; charset=utf-8')
            .header('cache-control', 'no-cache')
            .send();
        }
        const raw = reply.raw;
        const stop = journal.watch(
          (entry) => {
            if (session !== undefined && entry.session !== session) return;
            if (raw.destroyed) return; // gone: its 'close' stops the watch
            raw.write(entryFrame(entry));
            // Bytes the socket has not taken: a client that reads keeps this near zero.
            const buffered = raw.writableLength;
            if (buffered > JOURNAL_STREAM_MAX_BUFFERED) {
              if (typeof stop === 'function') stop();
              journalStreamsDropped++;
              request.log.warn(
                {
                  ...reqIdField(request),
                  bufferedBytes: buffered,
                  limitBytes: JOURNAL_STREAM_MAX_BUFFERED,
                  dropped: journalStreamsDropped,
                },
                'live journal dropped: its client stopped reading',
              );
              raw.destroy();
            }
          },
          () => raw.end(),
        );
        if (stop === 'closed') throw new GatewayError(503, 'The emulator is shutting down.');
        if (!stop) {
          throw new GatewayError(429, `At most ${MAX_JOURNAL_WATCHERS} live journals at once.`);
        }
        reply.hijack();
        raw.writeHead(200, {
          'content-type': 'text/event-stream; charset=utf-8',
          'cache-control': 'no-cache',
          'x-accel-buffering': 'no',
        });
        holdOpen(raw);
        raw.write(': live journal\n\n');
        raw.once('close', stop);
      },
    );

    app.get(
      '/journal/:id',
      {
        schema: {
          summary: 'One journal entry, with what was answered (a JSON body, or the stream as sent)',
          params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
          response: { 200: JournalDetailSchema, ...errors },
        },
      },
      async (request) => {
        const entry = await journal.get(request.params.id);
        const session = sessionOf(request);
        if (!entry || (session !== undefined && entry.session !== session)) {
          throw new GatewayError(404, `No journal entry ${request.params.id}`);
        }
        return entry;
      },
    );

    app.post(
      '/journal/verify',
      {
        schema: {
          summary: 'Check how many journaled requests match: 200, or 409 with the near misses',
          body: VerifySchema,
          response: { 200: VerifiedSchema, 409: VerifyFailedSchema, ...errors },
        },
      },
      async (request, reply) => {
        const count = request.body.count ?? { at_least: 1 };
        const result = await journal.verify(journalFilter(request, request.body.match), count);
        if (result.ok) return { status: 'ok' as const, matched: result.matched };
        const wanted = Object.entries(count)
          .map(([how, n]) => `${how.replace('_', ' ')} ${n}`)
          .join(' and ');
        return reply.code(409).send({
          error: {
            type: 'verification_failed' as const,
            message: `Expected ${wanted} matching request(s), found ${result.matched}.`,
          },
          matched: result.matched,
          near_misses: result.nearMisses,
        });
      },
    );

    app.get(
      '/journal/wait',
      {
        schema: {
          summary: 'Wait for a matching request: 200 with the first, or 408 after timeout_ms',
          querystring: JournalWaitQuerySchema,
          response: { 200: JournalEntrySchema, 408: WaitTimeoutSchema, ...errors },
        },
      },
      async (request, reply) => {
        const { timeout_ms: timeoutMs = WAIT_DEFAULT_MS, ...query } = request.query;
        const gone = new AbortController();
        reply.raw.once('close', () => gone.abort());
        holdOpen(reply.raw); // the wait has its own bound (timeout_ms)
        const found = journal.wait(
          journalFilter(request, query),
          timeoutMs,
          options.setTimer,
          gone.signal,
        );
        if (found === 'busy') {
          throw new GatewayError(429, `At most ${MAX_JOURNAL_WAITS} waits can be held at once.`);
        }
        const entry = await found;
        if (entry) return entry;
        return reply.code(408).send({
          error: {
            type: 'timeout' as const,
            message: `No matching request within ${timeoutMs} ms.`,
          },
        });
      },
    );

    app.get(
      '/tasks',
      {
        schema: {
          summary:
            'Video tasks of every key (or of one session), as they are now: the newest `limit`, oldest first',
          querystring: ListQuery(10_000, TASKS_LISTED),
          response: { 200: TaskListSchema, ...errors },
        },
      },
      async (request) => {
        const session = sessionOf(request, request.query.session);
        const now = clock.now();
        return { now, ...(await video.all(now, request.query.limit ?? TASKS_LISTED, session)) };
      },
    );

    app.get(
      '/cache',
      {
        schema: {
          summary:
            'Live prompt-cache entries, most recently used first: tokens, reads, time left (never the text)',
          querystring: ListQuery(1000, CACHE_LISTED),
          response: { 200: CacheListSchema, ...errors },
        },
      },
      async (request) => {
        const session = sessionOf(request, request.query.session);
        const now = clock.now();
        const [size, entries] = await Promise.all([
          text.promptCache.count(),
          text.promptCache.list(now, request.query.limit ?? CACHE_LISTED, session),
        ]);
        return { now, size, entries };
      },
    );

    app.post(
      '/tasks/:task_id',
      {
        schema: {
          summary: 'Force a video task into a status (final from now on); its callback fires',
          params: Type.Object({ task_id: Type.String() }),
          body: ForceTaskSchema,
          response: { 200: TaskRecordSchema, ...errors },
        },
      },
      async (request) => {
        const { status, message } = request.body;
        const session = sessionOf(request);
        const record = await video.force(
          request.params.task_id,
          status,
          message,
          clock.now(),
          session,
        );
        if (!record) throw new GatewayError(404, `No task ${request.params.task_id}`);
        return record;
      },
    );

    app.get(
      '/callbacks',
      {
        schema: {
          summary: 'Video callback deliveries, oldest first',
          querystring: SessionQuery,
          response: { 200: CallbackListSchema, ...errors },
        },
      },
      async (request) => {
        const session = sessionOf(request, request.query.session);
        const { list, dropped } = await callbacks.view();
        return {
          callbacks: session === undefined ? list : list.filter((d) => d.session === session),
          dropped,
        };
      },
    );

    app.post(
      '/faults',
      {
        schema: {
          summary: "Add a fault rule: matching requests fail in their group's own way",
          body: FaultRuleSchema,
          response: { 200: FaultViewSchema, ...errors },
        },
      },
      async (request) => {
        const rule = request.body;
        const kind = rule.kind ?? defaultKind(rule);
        if (rule.match?.path !== undefined && rule.path !== undefined) {
          throw new GatewayError(400, 'path is given twice: as path and as match.path');
        }
        if (rule.match?.method !== undefined && rule.method !== undefined) {
          throw new GatewayError(400, 'method is given twice: as method and as match.method');
        }
        if (rule.after_bytes !== undefined && kind !== 'disconnect') {
          throw new GatewayError(400, `after_bytes is only for kind "disconnect" (not "${kind}")`);
        }
        if (rule.seed !== undefined && rule.probability === undefined) {
          throw new GatewayError(400, 'seed needs probability');
        }
        if (kind === 'error' && rule.status === undefined) {
          throw new GatewayError(400, 'status is required for kind "error"');
        }
        if (kind === 'delay' && rule.delay_ms === undefined) {
          throw new GatewayError(400, 'delay_ms is required for kind "delay"');
        }
        if (kind !== 'delay' && rule.delay_ms !== undefined) {
          throw new GatewayError(400, `delay_ms is only for kind "delay" (not "${kind}")`);
        }
        const session = sessionOf(request) ?? DEFAULT_SESSION;
        const added = await compiled(() => faults.add(rule, session));
        if (!added)
          throw new GatewayError(
            400,
            `At most ${MAX_FAULT_RULES} fault rules, ${MAX_FAULT_BYTES} bytes of JSON in all, can be active.`,
          );
        return added;
      },
    );

    app.get(
      '/faults',
      {
        schema: {
          summary: 'Active fault rules',
          querystring: SessionQuery,
          response: { 200: FaultListSchema, ...errors },
        },
      },
      async (request) => ({
        faults: await faults.list(sessionOf(request, request.query.session)),
      }),
    );

    app.delete(
      '/faults',
      {
        schema: {
          summary: "Remove every fault rule (or one session's)",
          querystring: SessionQuery,
          response: { 200: HealthSchema, ...errors },
        },
      },
      async (request) => {
        const session = sessionOf(request, request.query.session);
        if (session === undefined) await faults.reset();
        else await faults.resetSession(session);
        return { status: 'ok' as const };
      },
    );

    app.delete(
      '/faults/:id',
      {
        schema: {
          summary: 'Remove one fault rule',
          params: Type.Object({
            id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
          }),
          response: { 200: HealthSchema, ...errors },
        },
      },
      async (request) => {
        if (!(await faults.remove(request.params.id, sessionOf(request)))) {
          throw new GatewayError(404, `No fault rule ${request.params.id}`);
        }
        return { status: 'ok' as const };
      },
    );

    app.post(
      '/replies',
      {
        schema: {
          summary: 'Add a stub: a reply rule for this session that wins over fixture files',
          body: StubSchema,
          response: { 200: StubViewSchema, ...errors },
        },
      },
      async (request) => {
        const problem = ruleProblem(request.body);
        if (problem) throw new GatewayError(400, problem);
        const session = sessionOf(request) ?? DEFAULT_SESSION;
        const added = await compiled(() => replies.addStub(request.body, session));
        if (!added) {
          throw new GatewayError(
            400,
            `At most ${MAX_STUBS} stubs, ${MAX_STUB_BYTES} bytes of JSON in all, can be held.`,
          );
        }
        return added;
      },
    );

    app.get(
      '/replies',
      {
        schema: {
          summary: 'Stubs, in the order they are tried',
          querystring: SessionQuery,
          response: { 200: StubListSchema, ...errors },
        },
      },
      async (request) => ({
        replies: await replies.listStubs(sessionOf(request, request.query.session)),
      }),
    );

    app.delete(
      '/replies',
      {
        schema: {
          summary: "Remove every stub (or one session's)",
          querystring: SessionQuery,
          response: { 200: HealthSchema, ...errors },
        },
      },
      async (request) => {
        await replies.clearStubs(sessionOf(request, request.query.session));
        return { status: 'ok' as const };
      },
    );

    app.delete(
      '/replies/:id',
      {
        schema: {
          summary: 'Remove one stub',
          params: Type.Object({
            id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
          }),
          response: { 200: HealthSchema, ...errors },
        },
      },
      async (request) => {
        if (!(await replies.removeStub(request.params.id, sessionOf(request)))) {
          throw new GatewayError(404, `No stub ${request.params.id}`);
        }
        return { status: 'ok' as const };
      },
    );

    const fixturesView = (fixtures: Fixtures) => ({
      rules: fixtures.rules,
      blocked_terms: fixtures.blockedTerms,
    });

    app.get(
      '/fixtures',
      {
        schema: {
          summary: 'Active scripted-reply rules (first match wins) and blocked terms',
          response: { 200: FixturesViewSchema, ...errors },
        },
      },
      async () => fixturesView(text.fixtures()),
    );

    app.post(
      '/fixtures/reload',
      {
        schema: {
          summary: 'Read FIXTURES_DIR again (on an error the active fixtures stay)',
          response: { 200: FixturesViewSchema, ...errors },
        },
      },
      async () => {
        try {
          const reloaded = await text.reloadFixtures();
          await options.fixturesReloaded?.();
          return fixturesView(reloaded);
        } catch (err) {
          if (err instanceof FixtureError) throw new GatewayError(400, err.message);
          throw err;
        }
      },
    );

    app.get(
      '/metrics',
      {
        schema: {
          summary:
            'Prometheus metrics: requests by group and status, stream durations, tasks by status, cache hits and misses, callback attempts, and the process (CPU, memory, event-loop delay, GC)',
          produces: ['text/plain'],
          response: {
            200: {
              description: 'Prometheus text exposition format 0.0.4',
              content: { 'text/plain': { schema: { type: 'string' } } },
            },
            ...errors,
          },
        },
      },
      async (_request, reply) => {
        const { contentType, body } = await options.metrics.text();
        return reply
          .type(contentType)
          .serializer((payload: unknown) => payload as string)
          .send(body);
      },
    );

    app.post(
      '/drift',
      {
        schema: {
          summary:
            'Replay the recordings against the emulator and report where their shapes differ',
          description:
            'Body (optional): `{"recordings": "<dir>"}`; without it, RECORDINGS_DIR is read.',
          response: { 200: DriftReportSchema, ...errors },
        },
      },
      async (request) => {
        // The body is optional (`curl -X POST` works), so it is checked here.
        const body = request.body as { recordings?: unknown } | null | undefined;
        if (
          body !== undefined &&
          body !== null &&
          (typeof body !== 'object' || Array.isArray(body))
        )
          throw new GatewayError(400, 'the body must be a JSON object, or none');
        const extra = body ? Object.keys(body).find((k) => k !== 'recordings') : undefined;
        if (extra !== undefined)
          throw new GatewayError(400, `${extra} is not a field of this body`);
        if (
          body?.recordings !== undefined &&
          (typeof body.recordings !== 'string' || body.recordings === '')
        ) {
          throw new GatewayError(400, 'recordings must be a directory path');
        }
        const dir = (body?.recordings as string | undefined) ?? options.recordingsDir;
        if (dir === undefined) {
          throw new GatewayError(400, 'recordings: give a directory, or set RECORDINGS_DIR');
        }
        if (!existsSync(dir)) throw new GatewayError(400, `recordings: ${dir} does not exist`);
        try {
          return await options.drift(dir);
        } catch (err) {
          // Not a directory, cannot be read, or a .json file that is not a recording.
          if (err instanceof RecordingsError)
            throw new GatewayError(400, `recordings: ${err.message}`);
          throw err;
        }
      },
    );

    await app.register(uiRoutes(adminToken !== undefined));

    app.get('/openapi.json', { schema: { hide: true } }, () => app.openapi());
  };
