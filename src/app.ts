import { type IncomingMessage, type Server, type ServerResponse, STATUS_CODES } from 'node:http';
import { hostname } from 'node:os';
import type { Duplex } from 'node:stream';
import cors from '@fastify/cors';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import Fastify, {
  type FastifyBaseLogger,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import type { DestinationStream } from 'pino';
import { chatGroup } from './chat/index.js';
import { type Config, resolveConfig } from './config.js';
import { controlRoutes } from './control/index.js';
import { FAULT_HEADER, Faults, MAX_DELAY_MS } from './harness/faults.js';
import { Journal } from './harness/journal.js';
import { Metrics } from './harness/metrics.js';
import { type GatewayHooks, setupGatewayGroup } from './harness/pipeline.js';
import { MemoryRateLimiter } from './harness/rate-limit.js';
import { SESSION_HEADER, SESSION_PATTERN, setupSessions } from './harness/session.js';
import { Stats } from './harness/stats.js';
import { messagesGroup } from './messages/index.js';
import { resigned } from './messages/resign.js';
import { Keyring } from './platform/auth.js';
import type { Clock } from './platform/clock.js';
import { createDeps, type Deps } from './platform/deps.js';
import { type DrainReport, drain } from './platform/drain.js';
import { GatewayError, neutralError } from './platform/errors.js';
import { Features } from './platform/features.js';
import type { GroupDescriptor } from './platform/group.js';
import type { Ids } from './platform/ids.js';
import { type RequestLine, requestLineOf, stdoutDestination } from './platform/log-destination.js';
import { registerOpenapi } from './platform/openapi.js';
import {
  answering,
  BODY_LIMIT,
  CLIENT_HEADERS,
  mayContinue,
  pathOf,
  REDACTED,
  reqIdField,
  setupRequests,
} from './platform/request.js';
import { Scheduler } from './platform/scheduler.js';
import { redactUrl, SECRET_HEADERS } from './platform/secrets.js';
import { lazySerializers, normalizeError, validatorFactory } from './platform/validation.js';
import { checkDrift } from './record/drift.js';
import { Recordings } from './record/recordings.js';
import { Upstream } from './record/upstream.js';
import type { SharedState } from './state/index.js';
import { FixtureError } from './text/fixtures.js';
import { createText, type TextEngine } from './text/index.js';
import type { CallbackLog } from './video/callbacks.js';
import { type VideoGroup, videoGroup } from './video/index.js';
import type { VideoService } from './video/service.js';

/** What an embedding test or `startEmulator` may reach; no plugin receives it. */
export interface EmulatorInternals {
  /**
   * Empties every store and puts the clock back to real time; or only the parts named; or,
   * with a session, only what that session made.
   */
  reset(only?: readonly string[], session?: string): void | Promise<void>;
  /** Emulator time (the shared one, with STATE_URL). */
  clock: Clock;
  /** Resolves once the state store is connected (at once in memory). */
  ready(): Promise<void>;
  metrics: Metrics;
  tasks: VideoService;
  callbacks: CallbackLog;
  scheduler: Scheduler;
  /**
   * Stops taking connections and waits, up to `graceMs` (SHUTDOWN_GRACE_MS), for requests,
   * streams and callbacks in progress; says what it had to leave. Call `close` after it.
   */
  drain(graceMs?: number): Promise<DrainReport>;
}

declare module 'fastify' {
  interface FastifyInstance {
    emulator: EmulatorInternals;
  }
}

export { BODY_LIMIT };

/**
 * Logs each request once, when it completes (Fastify's default also logs its arrival), and
 * journals gateway requests at the same moment: Fastify calls this for every response, so an
 * `onResponse` hook per request would only repeat the call.
 */
class OneLinePerRequest extends LogController {
  /** The info line written directly (log-destination.ts), once the logger is known; null: through pino. */
  private line: RequestLine | null | undefined;

  constructor(private readonly logs: boolean) {
    super();
  }

  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    request.gateway?.completed(request, reply);
    if (!this.logs && !error) return;
    if (!error) {
      this.line ??= requestLineOf(reply.log) ?? null;
      if (this.line) {
        this.line(
          request.id,
          request.method,
          redactUrl(request.url),
          reply.statusCode,
          reply.elapsedTime,
        );
        return;
      }
    }
    const line = {
      reqId: request.id,
      method: request.method,
      url: redactUrl(request.url),
      statusCode: reply.statusCode,
      responseTime: reply.elapsedTime,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/** A client error as Node raises it: a code, and the bytes it kept up to the failure. */
type ClientError = Error & { code?: string; rawPacket?: Buffer; bytesParsed?: number };

/** Whether logs are pretty: asked for, or `auto` writing to a terminal (not a given stream). */
export const prettyLogs = (
  format: Config['logFormat'],
  hasStream: boolean,
  isTTY: boolean | undefined,
): boolean => format === 'pretty' || (format === 'auto' && !hasStream && isTTY === true);

/**
 * Where pino writes: JSON lines (to `stream`, or stdout in batches: log-destination.ts), or
 * readable lines through pino-pretty when asked, or by default on a terminal. pino-pretty
 * loads only then.
 */
async function logStream(
  format: Config['logFormat'],
  stream: NodeJS.WritableStream | undefined,
  silent: boolean,
): Promise<{ stream?: NodeJS.WritableStream | DestinationStream }> {
  const pretty = prettyLogs(format, stream !== undefined, process.stdout.isTTY);
  if (!pretty) return stream ? { stream } : silent ? {} : { stream: stdoutDestination() };
  const { default: prettyStream } = await import('pino-pretty');
  return {
    stream: prettyStream({
      ...(stream ? { destination: stream } : {}),
      sync: true,
      colorize: format === 'auto',
      translateTime: 'SYS:HH:MM:ss.l',
      ignore: 'pid,hostname',
    }),
  };
}

/**
 * The path of the request a parse error stopped in: the last request line before the point of
 * failure in the bytes Node kept (they may hold earlier, complete requests of the connection).
 */
function lastRequestPath(raw: Buffer | undefined, failedAt: number | undefined): string {
  if (!raw) return '';
  const text = raw.toString('latin1', 0, Math.min(failedAt ?? raw.length, raw.length, 65_536));
  let path = '';
  // A request line cut off by the limit (a 20 KB URL) still says which group it was for.
  for (const match of text.matchAll(/(?:^|\r\n\r\n)[A-Z]+ (\/\S*)(?: HTTP\/1\.[01]\r\n|$)/g)) {
    path = match[1] ?? '';
  }
  return path;
}

/**
 * What buildApp's steps share: the state store (STATE_URL, else none), emulator time, the
 * registry of stores, and the platform pieces every group's request hooks use.
 */
interface Platform {
  shared: SharedState | undefined;
  clock: Clock;
  /** Signs media tokens and fingerprints keys (the store's, with shared state). */
  secret: () => Buffer;
  features: Features;
  scheduler: Scheduler;
  hashKey: (key: string) => string;
  hooks: GatewayHooks;
  /** Traffic by emulator second: the hooks count into it, `/_emulator/stats` reads it. */
  stats: Stats;
}

/**
 * Builds the whole emulator as a Fastify instance: the platform pieces, then each API group from
 * its descriptor. It never listens and never reads env. Throws FixtureError for bad fixtures.
 */
export async function buildApp(
  config: Config,
  deps: Deps = createDeps(),
): Promise<FastifyInstance> {
  // (`app` is read by the platform only once requests come)
  const platform = await openPlatform(config, deps, () => app.log);
  const { shared, clock, features, scheduler, hooks, stats } = platform;
  // `app` is made below, once the groups it answers for are known; these read it only later.
  const text = textEngine(config, platform, () => app.log);
  const { metrics, video, groups } = apiGroups(config, deps, platform, text, () => app.server);
  const reset = (only?: readonly string[], session?: string) => features.reset(only, session);
  const answers = answersByPath(groups, deps.ids);
  const app = await createFastify(config, deps, answers);
  answerServerEvents(app.server, answers);

  app.decorate('emulator', {
    reset,
    clock,
    metrics,
    ready: () =>
      shared ? new Promise<void>((resolve) => shared.store.onReady(resolve)) : Promise.resolve(),
    tasks: video.service,
    callbacks: video.callbacks,
    scheduler,
    drain: (graceMs = config.shutdownGraceMs) => {
      hooks.journal.close(); // its waits and live streams would hold the drain to its deadline
      stats.close(); // and so would the live stats streams
      return drain(app.server, [video.callbacks], graceMs, deps);
    },
  } satisfies EmulatorInternals);
  setupRequests(app);
  setupSessions(app);
  app.addHook('onClose', async () => {
    await features.close();
    // The store last: the features' own closing may still use it.
    await shared?.close();
  });

  if (config.corsOrigins) {
    // Opt-in CORS for browser apps: preflights are answered before any key check, and the
    // headers clients read (request ids, retry and rate-limit headers) are exposed.
    await app.register(cors, {
      origin: config.corsOrigins.includes('*') ? true : config.corsOrigins,
      methods: ['GET', 'HEAD', 'POST', 'DELETE', 'OPTIONS'],
      exposedHeaders: CLIENT_HEADERS,
      maxAge: 600,
    });
  }

  registerOpenapi(app, {
    fault: { name: FAULT_HEADER, maxDelayMs: MAX_DELAY_MS },
    session: { name: SESSION_HEADER, pattern: SESSION_PATTERN },
  });

  await app.register(
    controlRoutes({
      adminToken: config.adminToken,
      clock,
      journal: hooks.journal,
      faults: hooks.faults,
      video: video.service,
      callbacks: video.callbacks,
      text,
      setTimer: deps.setTimer,
      metrics,
      stats,
      recordingsDir: config.recordingsDir,
      knownHosts: [
        config.host,
        hostname(),
        ...(config.publicBaseUrl ? [new URL(config.publicBaseUrl).hostname] : []),
      ],
      drift: (dir) =>
        checkDrift(
          dir,
          () => driftEmulator(config),
          {
            queueMs: config.videoQueueMs,
            renderMs: config.videoRenderMs,
          },
          resigned,
        ),
      reset,
      listening: () => app.server.listening,
      ...(shared
        ? {
            begin: shared.begin,
            storeProblem: () => shared.store.problem(),
            fixturesReloaded: () => shared.epoch.bump('fixtures'),
          }
        : {}),
    }),
    { prefix: '/_emulator' },
  );
  await registerGroups(app, hooks, groups);
  answerOutsideGroups(app);

  if (hooks.keyring.open) {
    app.log.warn('GATEWAY_API_KEYS is not set: every non-empty API key is accepted');
  }
  return app;
}

/**
 * The state store (STATE_URL: every store in Redis, shared by the replicas, docs/replicas.md), emulator time, and the stores every group's request hooks use.
 */
async function openPlatform(
  config: Config,
  deps: Deps,
  log: () => FastifyBaseLogger,
): Promise<Platform> {
  const shared = config.stateUrl
    ? // Loaded only then: memory users never load the Redis clients (ioredis, BullMQ).
      await (await import('./state/index.js')).openSharedState(
        { ...config, stateUrl: config.stateUrl },
        deps.clock,
      )
    : undefined;
  const clock = shared ? shared.clock : deps.clock;
  const secret = shared ? () => shared.store.secret() : () => deps.secret;
  const features = new Features();
  const scheduler = features.add(new Scheduler(clock, deps.setTimer));
  const keyring = new Keyring(config.apiKeys, secret);
  const hashKey = (key: string) => keyring.ownerOf(key);
  // (added to the features below, in its place among them)
  const stats = new Stats(
    shared?.stats((err) => log().warn({ err }, 'stats of a turn not stored: not counted')),
  );
  const hooks: GatewayHooks = {
    clock,
    monotonic: deps.monotonic,
    setTimer: deps.setTimer,
    keyring,
    journal: features.add(
      new Journal(config.journalLimit, hashKey, shared?.journalLog(config.journalLimit)),
    ),
    faults: features.add(new Faults(hashKey, shared?.faults)),
    rateLimiter: config.rateLimitRpm
      ? features.add(
          shared
            ? shared.rateLimiter(config.rateLimitRpm)
            : new MemoryRateLimiter(config.rateLimitRpm),
        )
      : undefined,
    ...(shared ? { begin: shared.begin } : {}),
    metrics: undefined,
    stats: features.add(stats),
    upstream: undefined,
    refusedUpload: {
      maxBytes: config.refusedUploadMaxBytes,
      timeoutMs: config.refusedUploadTimeoutMs,
    },
  };
  const recordings = features.add(new Recordings(config.recordingsDir));
  if (config.upstreamMode !== 'off') hooks.upstream = upstreamOf(config, deps, recordings);
  return { shared, clock, secret, features, scheduler, hashKey, hooks, stats };
}

/** Record, replay or proxy (UPSTREAM_MODE), to each group's upstream URL. */
function upstreamOf(config: Config, deps: Deps, recordings: Recordings): Upstream {
  const base = config.upstreamUrl;
  return new Upstream({
    mode: config.upstreamMode,
    urls: {
      ...((config.upstreamUrlVideo ?? base) ? { video: config.upstreamUrlVideo ?? base } : {}),
      ...((config.upstreamUrlMessages ?? base)
        ? { messages: config.upstreamUrlMessages ?? base }
        : {}),
      ...((config.upstreamUrlChat ?? base) ? { chat: config.upstreamUrlChat ?? base } : {}),
    },
    recordings,
    strict: config.replayStrict,
    pacing: config.replayPacing,
    wait: deps.wait,
    monotonic: deps.monotonic,
    maxRecordedBytes: config.recordingMaxBytes,
    setTimer: deps.setTimer,
    stallMs: config.streamStallTimeoutMs,
    timeoutMs: config.upstreamTimeoutMs,
  });
}

/** The text engine chat and messages share (replies, fixtures, prompt cache, content filter). */
function textEngine(
  config: Config,
  { shared, hashKey }: Pick<Platform, 'shared' | 'hashKey'>,
  log: () => FastifyBaseLogger,
): TextEngine {
  const text = createText(config, hashKey, shared);
  // Fixtures reloaded on one replica are read again by every other (their sequences stay).
  shared?.epoch.watch('fixtures', async () => {
    try {
      await text.reloadFixtures(true);
    } catch (err) {
      // Files another replica read well but this one cannot: the active fixtures stay.
      if (!(err instanceof FixtureError)) throw err;
      log().warn({ err: err.message }, 'fixtures not reloaded: the active ones stay');
    }
  });
  return text;
}

/**
 * The API groups' descriptors (video, messages, chat) and the metrics they count into; their
 * stores join the registry, then the clock (last, so that stores are empty before it jumps back).
 */
function apiGroups(
  config: Config,
  deps: Deps,
  platform: Platform,
  text: TextEngine,
  server: () => Server,
): { metrics: Metrics; video: VideoGroup; groups: GroupDescriptor[] } {
  const { shared, clock, features, hooks } = platform;
  const { ids } = deps;
  // Tasks are read at each scrape, through `video` (made below).
  const metrics = new Metrics(() => video.service.countByStatus(clock.now()));
  hooks.metrics = metrics;
  text.promptCache.onLookup = (group, hit) => metrics.cacheLookup(group, hit);
  const streaming = {
    wait: deps.wait,
    monotonic: deps.monotonic,
    setTimer: deps.setTimer,
    stallMs: config.streamStallTimeoutMs,
    pacing: { ttftMs: config.streamTtftMs, chunkDelayMs: config.streamChunkDelayMs },
  };
  const video = videoGroupOf(config, deps, platform, server);
  video.callbacks.onAttempt = (outcome) => metrics.callback(outcome);
  const { replies, contentFilter, promptCache } = text;
  const groups: GroupDescriptor[] = [
    video,
    messagesGroup({ replies, promptCache, ids, streaming }),
    chatGroup({ replies, contentFilter, promptCache, ids, streaming }),
  ];
  for (const store of [...text.stores, ...groups.flatMap((g) => g.stores)]) features.add(store);
  // Last, so that stores are empty before the clock jumps back.
  features.add(shared ? shared.clockFeature : { name: 'clock', reset: () => clock.reset() });
  return { metrics, video, groups };
}

/** The video group, its callbacks kept from the emulator's own addresses (read once it listens). */
function videoGroupOf(
  config: Config,
  deps: Deps,
  { shared, clock, scheduler, secret, hooks }: Platform,
  server: () => Server,
): VideoGroup {
  return videoGroup({
    clock,
    ids: deps.ids,
    scheduler,
    setTimer: deps.setTimer,
    refusedUpload: hooks.refusedUpload,
    guard: {
      // Read at delivery, once the app listens.
      selfPorts: () => {
        const address = server().address();
        return typeof address === 'object' && address ? [address.port] : [];
      },
      selfHosts: [
        config.host,
        ...(config.publicBaseUrl ? [new URL(config.publicBaseUrl).hostname] : []),
      ],
      allowedHosts: config.callbackAllowedHosts,
    },
    settings: {
      queueMs: config.videoQueueMs,
      renderMs: config.videoRenderMs,
      maxTasks: config.maxTasks,
    },
    publicBaseUrl: config.publicBaseUrl,
    fixturesDir: config.fixturesDir,
    secret,
    ...(shared
      ? {
          tasks: () => shared.tasks(config.maxTasks),
          begin: shared.begin,
          sharedCallbacks: (guard, options, service) =>
            shared.callbacks(guard, options, deps.setTimer, service),
        }
      : {}),
  });
}

/** The drift check runs the recordings against a fresh emulator of this configuration. */
function driftEmulator(config: Config): Promise<FastifyInstance> {
  return buildApp(
    resolveConfig({
      ...config,
      upstreamMode: 'off',
      logLevel: 'silent',
      adminToken: undefined,
      apiKeys: undefined,
      rateLimitRpm: undefined,
      journalLimit: 0,
      // A fresh emulator of its own: in memory, never the live one's shared state.
      stateUrl: undefined,
      workers: 1,
    }),
    createDeps(),
  );
}

/** Errors answered outside a group's hooks, each in the envelope of the group its path is in. */
type Answers = ReturnType<typeof answersByPath>;

function answersByPath(groups: readonly GroupDescriptor[], ids: Ids) {
  /**
   * An error raised before a group's hooks ran, in the envelope of the group the path belongs
   * to, or a neutral `{error: {type, message}}` for a path of no group (or none known yet).
   */
  function renderByPath(path: string, status: number, message: string, id: string) {
    const group = groups.find(
      (g) =>
        path.startsWith(`${g.prefix}/`) ||
        (g.alsoAt !== undefined && path.startsWith(`${g.alsoAt.prefix}/`)),
    );
    const body = group
      ? group.spec.render(new GatewayError(status, message), { id }).body
      : neutralError(status, message);
    return { status, body, idHeader: group?.spec.requestIdHeader };
  }

  /** Router-level failures (a bad URL, an over-long path parameter) in the group's own shape. */
  function renderFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
    const { status, body, idHeader } = renderByPath(
      request.url,
      error.statusCode ?? 400,
      // Fastify's words quote the URL, its query string (and the credentials in it) included.
      error.code === 'FST_ERR_BAD_URL'
        ? 'The request path is not a valid URL: a percent-escape in it does not decode.'
        : error.message,
      request.id,
    );
    if (idHeader) reply.header(idHeader, request.id);
    reply.code(status).send(body);
  }

  /**
   * A refusal answered outside Fastify (on a socket, or a response Node holds), in the group's
   * envelope by its path: the JSON body and the headers to send it with, the connection closed.
   */
  function closingAnswer(path: string, status: number, message: string) {
    const id = ids.next('request');
    const rendered = renderByPath(path, status, message, id);
    const body = JSON.stringify(rendered.body);
    const headers: Record<string, string> = {
      'Content-Type': 'application/json; charset=utf-8',
      'Content-Length': String(Buffer.byteLength(body)),
      ...(rendered.idHeader ? { [rendered.idHeader]: id } : {}),
      Connection: 'close',
    };
    return { body, headers };
  }

  /** closingAnswer as the bytes written on a bare socket (no ServerResponse to write it). */
  function closingAnswerBytes(path: string, status: number, message: string): string {
    const { body, headers } = closingAnswer(path, status, message);
    const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
    return `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\n${lines.join('')}\r\n${body}`;
  }

  /**
   * A request Node could not parse or that timed out before it was read: answered in the
   * group's envelope, found by its path when that much is known.
   */
  function answerClientError(err: ClientError, socket: Duplex) {
    if (err.code === 'ECONNRESET' || socket.destroyed) return;
    const [status, message] =
      err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'The request was not received in time.']
        : err.code === 'HPE_HEADER_OVERFLOW'
          ? [431, 'Request header fields are too large.']
          : [400, 'The request is not valid HTTP.'];
    // A request whose headers arrived has its URL on the parser's message; otherwise the path
    // is read from the bytes Node kept (a parse error); a headers timeout has neither.
    // (the parser's message is the previous request's once that one is complete)
    const incoming = (socket as { parser?: { incoming?: { url?: string; complete?: boolean } } })
      .parser?.incoming;
    const current = incoming?.complete === false ? incoming : undefined;
    const path = current?.url ?? lastRequestPath(err.rawPacket, err.bytesParsed);
    const answer = closingAnswerBytes(path, status, message);
    // A response already under way on the socket (a stream, and a pipelined request behind it
    // that failed) must not get these bytes in its body: the socket is only closed, as Node's
    // own handler does.
    if (socket.writable && !answering(socket)) socket.write(answer);
    socket.destroy();
  }

  return { renderFrameworkError, closingAnswer, closingAnswerBytes, answerClientError };
}

/** The Fastify instance: logs, ids, limits and every timeout on a client, never listening. */
async function createFastify(
  config: Config,
  deps: Deps,
  { renderFrameworkError, answerClientError }: Answers,
) {
  const perRequestLogs = ['info', 'debug', 'trace'].includes(config.logLevel);
  // Node refuses a headers timeout longer than the whole request's.
  const headersTimeout = Math.min(config.headersTimeoutMs, config.requestTimeoutMs);
  return Fastify({
    logger: {
      level: config.logLevel,
      redact: {
        paths: [...SECRET_HEADERS].map((h) => `req.headers["${h}"]`),
        censor: REDACTED,
      },
      ...(await logStream(config.logFormat, deps.logStream, config.logLevel === 'silent')),
    },
    logController: new OneLinePerRequest(perRequestLogs),
    // No child logger per request (it cost a logger and its bindings' JSON each time): every
    // per-request line names its request itself (`reqId`, reqIdField), in the same place.
    childLoggerFactory: (logger) => logger,
    bodyLimit: BODY_LIMIT,
    // close() ends open connections and streams at once instead of waiting for them.
    forceCloseConnections: true,
    genReqId: () => deps.ids.next('request'),
    requestIdHeader: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    frameworkErrors: renderFrameworkError,
    // Each schema's validator and serializer is loaded precompiled, or compiled, on its first
    // use, and shared by every app of the process (Fastify loads neither compiler of its own).
    schemaController: {
      compilersFactory: { buildValidator: validatorFactory, buildSerializer: lazySerializers() },
    },
    // Fastify types `rawPacket` as the JSON of a Buffer; Node hands the Buffer itself.
    clientErrorHandler: (err, socket) => answerClientError(err as unknown as ClientError, socket),
    // Every wait on a client is bounded (docs/configuration.md "Configuration"): the whole request, its
    // headers, an idle keep-alive connection, and a socket with no traffic (a stalled upload).
    // Streams answer to their own write-stall timeout instead of the idle one.
    requestTimeout: config.requestTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    connectionTimeout: config.idleTimeoutMs,
    http: {
      requestTimeout: config.requestTimeoutMs,
      headersTimeout,
      // How often Node checks the two above (its default, 30 s, would make them that coarse).
      connectionsCheckingInterval: Math.max(10, Math.min(1000, Math.floor(headersTimeout / 4))),
    },
  }).withTypeProvider<TypeBoxTypeProvider>();
}

/** What Node's server would answer on its own, bare: answered in the group's envelope. */
function answerServerEvents(server: Server, { closingAnswer, closingAnswerBytes }: Answers) {
  // An `Expect` other than 100-continue: Node would answer its bare 417 with no envelope.
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) => {
    const message = 'The Expect header must be 100-continue, or left out.';
    const { body, headers } = closingAnswer(pathOf(request.url ?? '/'), 417, message);
    response.writeHead(417, headers).end(body);
  });

  // `Expect: 100-continue`: the 100 goes when the body is first read, which is once the request
  // has passed what is checked before it (key, headers, rate limit, faults), so a refused client
  // never uploads it (Node would send the 100 at once). Refused without its 100, the request's
  // body may never come: its connection is closed after the answer, never reused. (No hook: the
  // request's own first read sends it, and other requests pay nothing.)
  server.on('checkContinue', (request: IncomingMessage, response: ServerResponse) => {
    const keepAlive = response.shouldKeepAlive;
    response.shouldKeepAlive = false;
    const read = request._read;
    request._read = function (this: IncomingMessage, size: number) {
      request._read = read;
      response.shouldKeepAlive = keepAlive;
      if (!response.headersSent && mayContinue(request)) response.writeContinue();
      return read.call(this, size);
    };
    server.emit('request', request, response);
  });

  // CONNECT (a tunnel): Node hands it over as a bare socket and, unheard, closes it unanswered.
  server.on('connect', (request: IncomingMessage, socket: Duplex) => {
    const target = request.url ?? '/';
    const message = 'CONNECT is not supported: the emulator is no proxy.';
    socket.on('error', () => {});
    socket.end(closingAnswerBytes(target.startsWith('/') ? pathOf(target) : '/', 405, message));
  });
}

/** Each group at its prefix (and its other one), behind the shared request hooks. */
async function registerGroups(
  app: FastifyInstance,
  hooks: GatewayHooks,
  groups: readonly GroupDescriptor[],
) {
  for (const group of groups) {
    if (group.public) await app.register(group.public.routes, { prefix: group.public.prefix });
    for (const { prefix, routes } of [group, ...(group.alsoAt ? [group.alsoAt] : [])]) {
      await app.register(
        async (scope) => {
          setupGatewayGroup(scope, hooks, group);
          await scope.register(routes);
        },
        { prefix },
      );
    }
  }
}

/**
 * Outside the groups (an unknown path, /media): Fastify's own shape never reaches a client. A
 * path no route has is a 404 whatever its body (its JSON is parsed before that is known).
 */
function answerOutsideGroups(app: FastifyInstance) {
  const notFound = (request: FastifyRequest) =>
    neutralError(404, `No route ${request.method} ${pathOf(request.url)}`);
  app.setNotFoundHandler((request, reply) => reply.code(404).send(notFound(request)));
  app.setErrorHandler((err, request, reply) => {
    if (request.is404) return reply.code(404).send(notFound(request));
    const error = normalizeError(err);
    if (error.status >= 500) request.log.error({ ...reqIdField(request), err }, 'request failed');
    return reply.code(error.status).send(neutralError(error.status, error.message));
  });
}
