import type { FastifyInstance, FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { Upstream } from '../record/upstream.js';
import type { Keyring } from './auth.js';
import type { Clock, SetTimer } from './clock.js';
import { GatewayError, RETRY_AFTER_STATUSES, statusMessage } from './errors.js';
import {
  FAULT_HEADER,
  type Fault,
  type Faults,
  HANG_MS,
  MAX_DELAY_MS,
  MAX_HELD,
  MAX_HELD_BYTES,
  parseFaultHeader,
} from './faults.js';
import type { Feature } from './features.js';
import { JOURNAL_BODY_LIMIT, type Journal } from './journal.js';
import { heldWeight } from './json-body.js';
import { type MatchContext, type MatchTarget, matchWork, regexScan } from './match.js';
import { whenReady } from './maybe.js';
import type { Metrics } from './metrics.js';
import { formatDuration, type RateDecision, type RateLimiter } from './rate-limit.js';
import {
  BODY_LIMIT,
  type GatewayRuntime,
  holdOpen,
  pathOf,
  refuseContinue,
  reqIdField,
  type UsageTokens,
} from './request.js';
import { journalBody, redactUrl } from './secrets.js';
import { ownerIn, readSession } from './session.js';
import { normalizeError } from './validation.js';

export interface RenderedError {
  status: number;
  body: unknown;
}

/** The API groups' names, as the journal, `?group=` and metrics use them. */
export type GroupName = 'video' | 'messages' | 'chat';

/**
 * One API group: its URL prefix, how it authenticates and renders errors, its routes, and the
 * stores it owns. `app.ts` mounts each descriptor the same way; a new group is a new folder.
 */
export interface GroupDescriptor {
  name: GroupName;
  prefix: string;
  spec: GroupSpec;
  /** The group's routes, mounted under `prefix` behind the shared request hooks. */
  routes: FastifyPluginAsync;
  /** More routes of the group at another prefix, behind the same hooks (Azure's chat path). */
  alsoAt?: { prefix: string; routes: FastifyPluginAsync };
  /** Routes that need no key (video results, like a CDN link), mounted at their own prefix. */
  public?: { prefix: string; routes: FastifyPluginAsync };
  /** What `/_emulator/reset` empties and `close` stops. */
  stores: Feature[];
  /** What stubs, faults and the journal read of a request's body. */
  facts: RequestFacts;
}

/** What a match or the journal reads of a parsed request (README "Stubs"). */
export interface RequestFacts {
  /** The model the request names (chat: the Azure deployment's, else the body's), from a body
   * of any JSON value (`null` included, as a refused request has); undefined when none. */
  model(request: FastifyRequest): string | undefined;
  /** The text a `prompt_regex` is tried on, and the user turn it is (text groups). */
  prompt(body: unknown): { prompt: string | undefined; turn: number | undefined };
}

const BEARER = /^bearer /i;

/** The key from `Authorization: Bearer <key>` (the video and chat groups). */
export function readBearerKey(request: FastifyRequest): string | undefined {
  const auth = request.headers.authorization;
  if (typeof auth !== 'string' || !BEARER.test(auth)) return undefined;
  return auth.slice(7).trim() || undefined;
}

/** What differs between the API groups; everything else is shared below. */
export interface GroupSpec {
  /** The API key the caller sent, or undefined when none was sent. */
  readKey(request: FastifyRequest): string | undefined;
  missingKey(request: FastifyRequest): GatewayError;
  invalidKey(request: FastifyRequest): GatewayError;
  unknownRoute(request: FastifyRequest): GatewayError;
  render(error: GatewayError, request: { id: string }): RenderedError;
  /** Other headers the group requires, checked after the key: the refusal, if any. */
  checkHeaders?(request: FastifyRequest): GatewayError | undefined;
  /** The header every response of the group carries the request id in, if any. */
  requestIdHeader?: string;
  /** Status of a `stream_error` fault that names none. */
  streamErrorStatus: number;
  /** OpenAI-style `x-ratelimit-*-requests` headers when rate limiting is on. */
  rateLimitHeaders?: boolean;
  /** Azure's `retry-after-ms` beside `retry-after`. */
  retryAfterMs?: boolean;
}

/** Where finished requests and streams are counted by emulator second (`/_emulator/stats`). */
export interface StatsSink {
  request(r: StatsRequest): void;
  stream(group: GroupName, session: string, at: number, by: 1 | -1): void;
}

/** One finished request, as the stats count it. */
export interface StatsRequest {
  group: GroupName;
  session: string;
  /** Emulator time of its arrival (ms): it counts in that second. */
  at: number;
  status: number;
  /** A client that went away before the answer ended (or no answer: a fault's cut). */
  aborted: boolean;
  durationMs: number;
  tokens?: UsageTokens | undefined;
}

/** The platform pieces every group's request hooks use. */
export interface GatewayHooks {
  clock: Clock;
  /** Wall-clock timers (a `delay` fault's wait, a `hang`'s bound). */
  setTimer: SetTimer;
  keyring: Keyring;
  journal: Journal;
  faults: Faults;
  rateLimiter: RateLimiter | undefined;
  /** Requests and streams counted for `/_emulator/metrics`. */
  metrics: Metrics | undefined;
  /** Requests and streams by emulator second, for `/_emulator/stats` (harness/stats.ts). */
  stats: StatsSink | undefined;
  /** Record, replay or proxy (UPSTREAM_MODE), when on. */
  upstream: Upstream | undefined;
  /**
   * Shared state: what every request waits for first (the clock offset and the rules as they
   * are in the store). Unset in memory, where there is nothing to wait for.
   */
  begin?: () => Promise<void> | undefined;
  /** What a request refused before its body was read may still send (`readTheRest`). */
  refusedUpload: { maxBytes: number; timeoutMs: number };
}

const DEFAULT_RETRY_AFTER_S = 1;

const DEBUGGING = new Set(['debug', 'trace']);

/** How long a request took, in ms to the microsecond, as the journal keeps it. */
const elapsedMs = (reply: FastifyReply) => Math.round(reply.elapsedTime * 1000) / 1000;

/** A refusal in one line: the field and its problem, or the message. */
const reasonOf = (error: GatewayError) => {
  const issue = error.options.issue;
  return issue && issue.path.length > 0
    ? `${issue.path.join('.')} ${issue.problem}`
    : error.message;
};

/** Renders any error in the group's envelope, with its retry headers; logs what is a bug. */
export function sendGroupError(
  spec: GroupSpec,
  err: unknown,
  request: FastifyRequest,
  reply: FastifyReply,
  hooks: Pick<GatewayHooks, 'refusedUpload' | 'setTimer'>,
): FastifyReply {
  const error = normalizeError(err, request.body);
  if (error.status >= 500 && request.fault === undefined) {
    request.log.error({ ...reqIdField(request), err }, 'request failed');
  } else if (error.status < 500 && DEBUGGING.has(request.log.level)) {
    // Why a request was refused, for whoever debugs a client (LOG_LEVEL=debug).
    request.log.debug(
      { ...reqIdField(request), statusCode: error.status, reason: reasonOf(error) },
      'request refused',
    );
  }
  const { status, body } = spec.render(error, request);
  if (request.raw.complete === false) {
    // Refused: no `100 Continue` for it, whenever its answer goes (app.ts, checkContinue).
    refuseContinue(request.raw);
    readTheRest(request, reply, hooks);
  }
  const retryAfterS = error.options.retryAfterS;
  if (retryAfterS !== undefined) {
    reply.header('retry-after', String(retryAfterS));
    if (spec.retryAfterMs) reply.header('retry-after-ms', String(retryAfterS * 1000));
  }
  return reply.code(status).send(body);
}

/** A request's session and match view, for the reply engine's stubs. */
export function matchContext(request: FastifyRequest): MatchContext | undefined {
  const runtime = request.gateway;
  if (!runtime) return undefined;
  // Made only when a rule reads the request itself (once: the runtime keeps it).
  return { session: request.session, target: () => runtime.target(request) };
}

/**
 * A request refused before its body was read (too large, a wrong content type, a bad key): if
 * the connection closed at once, the client, still sending, would get a reset and lose the
 * answer. So the rest of the body is read and thrown away, and the connection kept, up to
 * REFUSED_UPLOAD_MAX_BYTES and REFUSED_UPLOAD_TIMEOUT_MS (wall clock); past either it is dropped.
 */
function readTheRest(
  request: FastifyRequest,
  reply: FastifyReply,
  { refusedUpload, setTimer }: Pick<GatewayHooks, 'refusedUpload' | 'setTimer'>,
): void {
  const raw = request.raw;
  if (reply.getHeader('connection') === 'close') reply.removeHeader('connection');
  const drop = () => {
    const socket = raw.socket as { destroy?: () => void } | null;
    const destroy = () => {
      if (typeof socket?.destroy === 'function') socket.destroy();
    };
    // The answer goes first (with shared state it waits for its journal entry).
    if (reply.raw.headersSent) destroy();
    else reply.raw.once('finish', destroy);
  };
  let seen = 0;
  const cancel = setTimer(() => {
    done();
    drop();
  }, refusedUpload.timeoutMs);
  const onData = (chunk: Buffer) => {
    seen += chunk.length;
    if (seen > refusedUpload.maxBytes) {
      done();
      drop();
    }
  };
  const done = () => {
    cancel();
    raw.off('data', onData);
  };
  raw.on('data', onData);
  raw.once('end', done);
  raw.once('close', done);
  raw.resume();
}

/** A hook's callback: on with the request, or an error to answer. */
type Done = (err?: Error) => void;

/** What a group's hooks journal a request with (and count it in the metrics). */
interface GroupJournal {
  /** Journals the request; with shared state, the promise of the entry stored. */
  record(
    request: FastifyRequest,
    status: number,
    durationMs: number,
    stream?: { aborted: boolean; bytesSent: number },
  ): void | Promise<void>;
  /** A journal write nobody waits for (the client left): its failure is logged, not thrown. */
  settle(stored: void | Promise<void>): void;
}

/** Fails the request as the fault says: an error in the group's shape, or a dropped socket. */
type Strike = (fault: Fault, request: FastifyRequest, reply: FastifyReply, done: Done) => void;

/**
 * Wires one API group inside its encapsulated plugin: key check, rate limit, injected faults,
 * error envelope, not-found route, request-id header and the request journal.
 */
export function setupGatewayGroup(
  app: FastifyInstance,
  hooks: GatewayHooks,
  group: Pick<GroupDescriptor, 'name' | 'spec' | 'facts'>,
) {
  const targetOf = matchTargets(group);
  const journaling = groupJournal(app, hooks, group);
  const runtime = groupRuntime(hooks, group.name, targetOf, journaling);
  const strike = faultStrikes(hooks, group.spec, journaling);
  addArrivalHooks(app, hooks, group.spec, runtime, strike);
  addBodyHooks(app, hooks, group, targetOf, strike);
  addAnswerHooks(app, hooks, group.spec, journaling);
}

/**
 * The request as a match sees it, one for the request (its fault phases and its stubs share
 * the request's match budgets); the body as it is when read, its facts only if a rule asks.
 */
function matchTargets({
  name,
  facts,
}: Pick<GroupDescriptor, 'name' | 'facts'>): (request: FastifyRequest) => MatchTarget {
  /**
   * The prompt facts of a body, or none: a rule may be tried on a body no schema has checked
   * (a path no route has, a method the route does not take), whatever its shape.
   */
  const promptOf = (body: unknown) => {
    if (typeof body === 'object' && body !== null) {
      try {
        return facts.prompt(body);
      } catch {
        // a shape the group's reader does not expect: no prompt
      }
    }
    return { prompt: undefined, turn: undefined };
  };

  const targets = new WeakMap<FastifyRequest, MatchTarget>();
  return function targetOf(request: FastifyRequest): MatchTarget {
    let target = targets.get(request);
    if (target) return target;
    let read: { prompt: string | undefined; turn: number | undefined } | undefined;
    const promptFacts = () => {
      read ??= promptOf(request.body);
      return read;
    };
    target = {
      group: name,
      method: request.method,
      path: pathOf(request.url),
      keyHash: request.keyHash,
      headers: request.headers,
      get body() {
        return request.body;
      },
      model: () => facts.model(request),
      prompt: () => promptFacts().prompt,
      turn: () => promptFacts().turn,
      work: matchWork(),
      scan: regexScan(),
    };
    targets.set(request, target);
    return target;
  };
}

/** The journal entry of a request, and the metrics' count of it. */
function groupJournal(
  app: FastifyInstance,
  hooks: Pick<GatewayHooks, 'journal' | 'metrics' | 'stats'>,
  { name, facts }: Pick<GroupDescriptor, 'name' | 'facts'>,
): GroupJournal {
  const { journal } = hooks;
  return {
    settle(stored) {
      if (stored) stored.catch((err: unknown) => app.log.warn({ err }, 'journal entry not stored'));
    },
    record(request, status, durationMs, stream) {
      hooks.metrics?.request(name, status);
      hooks.stats?.request({
        group: name,
        session: request.session,
        at: request.receivedAt,
        status,
        // (status 0: the emulator cut it, a fault's disconnect or hang: no answer either)
        aborted: stream?.aborted === true || status === 0,
        durationMs,
        tokens: request.usageTokens,
      });
      const capture = request.streamCapture;
      // (the credentials of the URLs it carries hidden, in what the journal keeps of it)
      const kept =
        request.rawBody === undefined
          ? undefined
          : journalBody(request.rawBody, request.body, JOURNAL_BODY_LIMIT);
      // A stream that may echo a credential of the request (an echo rule) cut into pieces across
      // its events, which no search of its text would find: not kept.
      const withheld = capture !== undefined && kept?.redacted === true;
      return journal.record({
        id: request.id,
        group: name,
        session: request.session,
        keyHash: request.keyHash,
        model: facts.model(request),
        source: request.source,
        at: request.receivedAt,
        method: request.method,
        url: request.url,
        status,
        durationMs,
        headers: request.headers,
        rawBody: kept?.text,
        bodyBytes: kept?.bytes,
        response: withheld ? undefined : capture ? capture.bytes() : request.responseBody,
        responseTruncated: !withheld && capture?.truncated === true,
        responseWithheld: withheld,
        fault: request.fault,
        aborted: stream?.aborted === true,
        bytesSent: stream?.bytesSent,
      });
    },
  };
}

/** What the group's routes and streams call back on a request (`request.gateway`). */
function groupRuntime(
  hooks: Pick<GatewayHooks, 'begin' | 'metrics' | 'stats' | 'clock'>,
  name: GroupName,
  targetOf: (request: FastifyRequest) => MatchTarget,
  { record, settle }: GroupJournal,
): GatewayRuntime {
  /** Whether the state is shared (a store to wait for): the journal then writes before the end. */
  const shared = hooks.begin !== undefined;
  return {
    target: targetOf,
    streamEnded(seconds, completed) {
      hooks.metrics?.stream(name, seconds, completed);
    },
    streamOpen(request, by) {
      hooks.stats?.stream(name, request.session, hooks.clock.now(), by);
    },
    completed(request, reply) {
      if (request.journaled) return;
      settle(record(request, reply.statusCode, elapsedMs(reply)));
    },
    ...(shared
      ? {
          beforeEnd(request: FastifyRequest, reply: FastifyReply) {
            request.journaled = true;
            return record(request, 200, elapsedMs(reply)) ?? Promise.resolve();
          },
        }
      : {}),
    streamAborted(request, reply, result) {
      const durationMs = elapsedMs(reply);
      if (!request.journaled) {
        settle(record(request, 200, durationMs, { aborted: true, bytesSent: result.bytes }));
      }
      request.log.warn(
        {
          ...reqIdField(request),
          method: request.method,
          url: redactUrl(request.url),
          statusCode: 200,
          aborted: true,
          bytesSent: result.bytes,
          reason: result.reason,
          responseTime: reply.elapsedTime,
        },
        'stream aborted',
      );
    },
  };
}

/**
 * On arrival, before the body is read: the key, the session and the group's headers, then the
 * key's fingerprint, the rate limit and the faults of arrival.
 */
function addArrivalHooks(
  app: FastifyInstance,
  hooks: GatewayHooks,
  spec: GroupSpec,
  runtime: GatewayRuntime,
  strike: Strike,
) {
  const { keyring, faults, rateLimiter, clock } = hooks;

  app.addHook('onRequest', (request, reply, done) => {
    request.receivedAt = clock.now();
    request.gateway = runtime;
    if (spec.requestIdHeader) reply.header(spec.requestIdHeader, request.id);
    // What needs no state first (the key, the session, the group's headers): refused before the
    // store is read. (With the store down, even a refusal is a 503: its journal entry is not stored.)
    try {
      request.session = readSession(request);
    } catch (err) {
      return done(err as Error);
    }
    const key = spec.readKey(request);
    if (!key) return done(spec.missingKey(request));
    if (!keyring.accepts(key)) return done(spec.invalidKey(request));
    const refused = spec.checkHeaders?.(request);
    if (refused) return done(refused);
    // Shared state: the clock and the rules as they are now, for every replica alike (at once
    // while the last read of them stands, see state/epoch.ts).
    const begun = hooks.begin?.();
    if (begun === undefined) return admit(key, request, reply, done);
    whenReady(
      begun,
      () => {
        request.receivedAt = clock.now();
        admit(key, request, reply, done);
      },
      done,
    );
  });

  /** The key's fingerprint, the rate limit and the faults of arrival. */
  function admit(key: string, request: FastifyRequest, reply: FastifyReply, done: Done) {
    request.keyHash = keyring.ownerOf(key);
    request.owner = ownerIn(request.keyHash, request.session);
    if (!rateLimiter) return arrive(request, reply, done);
    whenReady(
      rateLimiter.hit(request.keyHash, request.receivedAt),
      (rate) => limited(rate, request, reply, done),
      done,
    );
  }

  function limited(rate: RateDecision, request: FastifyRequest, reply: FastifyReply, done: Done) {
    if (spec.rateLimitHeaders) {
      reply.header('x-ratelimit-limit-requests', String(rate.limit));
      reply.header('x-ratelimit-remaining-requests', String(rate.remaining));
      reply.header('x-ratelimit-reset-requests', formatDuration(rate.resetMs));
    }
    if (!rate.allowed) {
      const retryAfterS = Math.ceil(rate.resetMs / 1000);
      return done(new GatewayError(429, statusMessage(429), { retryAfterS }));
    }
    arrive(request, reply, done);
  }

  /** Error and disconnect faults strike before the body is read, like an overloaded gateway. */
  function arrive(request: FastifyRequest, reply: FastifyReply, done: Done) {
    const header = request.headers[FAULT_HEADER];
    if (header === undefined && faults.size === 0) return done();
    if (header !== undefined) {
      const fault = typeof header === 'string' ? parseFaultHeader(header) : undefined;
      if (!fault) {
        const message = `${FAULT_HEADER} must be a status 400-599, "disconnect", "stream_error", "hang" or "delay=<ms>" (at most ${MAX_DELAY_MS})`;
        return done(new GatewayError(400, message));
      }
      if (fault.kind === 'stream_error') {
        request.pendingFault = fault;
        return done();
      }
      return struck(fault, request, reply, done);
    }
    whenReady(
      faults.take(runtime.target(request), request.session, 'now'),
      (fault) => struck(fault, request, reply, done),
      done,
    );
  }

  function struck(
    fault: Fault | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    done: Done,
  ) {
    if (!fault) return done();
    if (fault.kind === 'delay') {
      // A delay waits with the body read: a body left unread would keep the request incomplete,
      // and Node would answer it 408 at REQUEST_TIMEOUT_MS.
      request.pendingFault = fault;
      return done();
    }
    strike(fault, request, reply, done);
  }
}

/**
 * Once the body is read: a delay's wait, the faults that need the body (a stream fault: does the
 * request stream at all?), then record, replay or proxy, before the emulator's own route.
 */
function addBodyHooks(
  app: FastifyInstance,
  hooks: GatewayHooks,
  { name, spec, facts }: Pick<GroupDescriptor, 'name' | 'spec' | 'facts'>,
  targetOf: (request: FastifyRequest) => MatchTarget,
  strike: Strike,
) {
  const { faults } = hooks;

  app.addHook('preValidation', (request, reply, done) => {
    const fault = request.pendingFault;
    if (fault?.kind !== 'delay') return done();
    request.pendingFault = undefined;
    strike(fault, request, reply, done);
  });

  // A stream fault waits for the body, which tells whether the request streams at all.
  app.addHook('preHandler', (request, reply, done) => {
    if (request.pendingFault === undefined && faults.size === 0) return done();
    const streaming = (request.body as { stream?: unknown } | undefined)?.stream === true;
    whenReady(
      request.pendingFault ?? faults.take(targetOf(request), request.session, 'body', streaming),
      (fault) => onBody(fault, streaming, request, reply, done),
      done,
    );
  });

  function onBody(
    fault: Fault | undefined,
    streaming: boolean,
    request: FastifyRequest,
    reply: FastifyReply,
    done: Done,
  ) {
    if (!fault) return done();
    if (!streaming || (fault.kind !== 'stream_error' && fault.afterBytes === undefined)) {
      strike(fault, request, reply, done);
      return;
    }
    request.fault = fault.label;
    request.streamFault = {
      ...(fault.afterBytes === undefined
        ? { afterEvents: fault.afterEvents, status: fault.status ?? spec.streamErrorStatus }
        : { afterBytes: fault.afterBytes }),
    };
    done();
  }

  // Record, replay or proxy: after the key, the faults and the body's validation, before the
  // emulator's own route.
  const upstream = hooks.upstream;
  if (upstream?.active) {
    app.addHook('preHandler', async (request, reply) => {
      if (await upstream.handle(request, reply, name, facts)) return reply;
    });
  }
}

/** How each kind of fault fails a request: an error, a delay, a hang or a dropped connection. */
function faultStrikes(
  hooks: Pick<GatewayHooks, 'faults' | 'setTimer'>,
  spec: GroupSpec,
  { record, settle }: GroupJournal,
): Strike {
  const { faults } = hooks;

  /** Fails the request as the fault says: an error in the group's shape, or a dropped socket. */
  function strike(fault: Fault, request: FastifyRequest, reply: FastifyReply, done: Done): void {
    request.fault = fault.label;
    if (fault.kind === 'disconnect') {
      disconnect(request, reply);
      return;
    }
    if (fault.kind === 'delay') {
      delay(request, reply, fault.delayMs ?? 0, done);
      return;
    }
    if (fault.kind === 'hang') {
      hang(request, reply, done);
      return;
    }
    const status = fault.status ?? (fault.kind === 'stream_error' ? spec.streamErrorStatus : 500);
    const retryAfterS =
      fault.retryAfterS ?? (RETRY_AFTER_STATUSES.has(status) ? DEFAULT_RETRY_AFTER_S : undefined);
    const options = retryAfterS === undefined ? {} : { retryAfterS };
    done(new GatewayError(status, statusMessage(status), options));
  }

  /**
   * A slow gateway: the request waits (at most MAX_DELAY_MS), then goes on as usual. A client
   * that leaves meanwhile is journaled then (status 0), as a hang's is, and nothing more is done.
   */
  function delay(request: FastifyRequest, reply: FastifyReply, ms: number, done: Done): void {
    const release = faults.hold(heldWeight(request.rawBody ?? ''));
    if (!release) {
      done(heldTooMany());
      return;
    }
    holdOpen(reply.raw);
    const left = () => {
      cancel();
      release();
      reply.hijack();
      settle(record(request, 0, elapsedMs(reply)));
    };
    const cancel = hooks.setTimer(() => {
      reply.raw.off('close', left);
      release();
      done();
    }, ms);
    reply.raw.once('close', left);
  }

  const heldTooMany = () =>
    new GatewayError(
      429,
      `At most ${MAX_HELD} delayed or hung requests (${MAX_HELD_BYTES} bytes of delayed bodies, parsed) can be held at once.`,
    );

  /**
   * Never answers: the request is held until the client gives up (journaled then, status 0), or
   * HANG_MS passes and the connection is dropped, so that a hang is bounded too.
   */
  function hang(request: FastifyRequest, reply: FastifyReply, done: Done): void {
    const release = faults.hold(0);
    if (!release) {
      done(heldTooMany());
      return;
    }
    reply.hijack();
    holdOpen(reply.raw);
    // The body is read and dropped (up to BODY_LIMIT), so that the request is complete and Node
    // does not answer it 408 at REQUEST_TIMEOUT_MS.
    let read = 0;
    request.raw.on('data', (chunk: Buffer) => {
      read += chunk.length;
      if (read > BODY_LIMIT) reply.raw.destroy();
    });
    request.raw.resume();
    const drop = hooks.setTimer(() => reply.raw.destroy(), HANG_MS);
    reply.raw.once('close', () => {
      drop();
      release();
      settle(record(request, 0, elapsedMs(reply)));
    });
  }

  /** Destroys the connection without a response; the journal still records the request. */
  function disconnect(request: FastifyRequest, reply: FastifyReply): void {
    reply.hijack();
    settle(record(request, 0, 0));
    reply.raw.destroy();
  }

  return strike;
}

/** The answer: its bytes kept for the journal, the group's error envelope, its 404. */
function addAnswerHooks(
  app: FastifyInstance,
  hooks: GatewayHooks,
  spec: GroupSpec,
  { record }: GroupJournal,
) {
  /** Whether the state is shared (a store to wait for): the journal then writes before the end. */
  const shared = hooks.begin !== undefined;

  // What was answered, for the journal: the serialized answer encoded once, here, and those
  // bytes are what the socket is given. Kept as a string, it would be encoded again by the
  // socket write and held on the heap (a rope of the serializer's pieces) for as long as the
  // journal holds the entry, which the garbage collector copies on every young collection.
  app.addHook('onSend', (request, reply, payload, done) => {
    if (!shared) {
      const bytes = typeof payload === 'string' ? Buffer.from(payload) : payload;
      if (typeof payload === 'string') request.responseBody = bytes as Buffer;
      return done(null, bytes);
    }
    // Shared state: the entry is stored before the answer goes, so that any replica lists it
    // once the client has it (the answer's text is written to the store, not held).
    // Not stored (the store is down): the answer is its 503.
    if (typeof payload === 'string') request.responseBody = payload;
    request.journaled = true;
    const stored = record(request, reply.statusCode, elapsedMs(reply));
    if (!stored) return done(null, payload);
    stored.then(
      () => done(null, payload),
      (err: unknown) => (reply.statusCode === 503 ? done(null, payload) : done(err as Error)),
    );
  });

  app.setErrorHandler((err, request, reply) => sendGroupError(spec, err, request, reply, hooks));

  app.setNotFoundHandler((request) => {
    throw spec.unknownRoute(request);
  });
}
