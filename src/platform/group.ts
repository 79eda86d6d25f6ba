import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Config } from '../config.js';
import type { EmulatorState } from '../state.js';
import { GatewayError, normalizeError, RETRY_AFTER_STATUSES, statusMessage } from './errors.js';
import { FAULT_HEADER, type Fault, parseFaultHeader } from './faults.js';
import { formatDuration } from './rate-limit.js';
import type { Pacing } from './sse.js';

export interface RenderedError {
  status: number;
  body: unknown;
}

const BEARER = /^bearer /i;

/** The key from `Authorization: Bearer <key>` (seed part 5, video and chat groups). */
export function readBearerKey(request: FastifyRequest): string | undefined {
  const auth = request.headers.authorization;
  if (typeof auth !== 'string' || !BEARER.test(auth)) return undefined;
  return auth.slice(7).trim() || undefined;
}

/** What differs between the three API groups; everything else is shared below. */
export interface GroupSpec {
  /** The API key the caller sent, or undefined when none was sent. */
  readKey(request: FastifyRequest): string | undefined;
  missingKey(): GatewayError;
  invalidKey(): GatewayError;
  unknownRoute(request: FastifyRequest): GatewayError;
  render(error: GatewayError, request: FastifyRequest): RenderedError;
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

const DEFAULT_RETRY_AFTER_S = 1;

const pathOf = (url: string) => {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
};

/**
 * Wires one API group inside its encapsulated plugin: key check, rate limit, injected faults,
 * error envelope, not-found route, request-id header and the request journal.
 */
export function setupGatewayGroup(app: FastifyInstance, state: EmulatorState, spec: GroupSpec) {
  const { keyring, journal, faults, rateLimiter } = state;
  const { clock } = state.deps;

  app.addHook('onRequest', (request, reply, done) => {
    request.receivedAt = clock.now();
    if (spec.requestIdHeader) reply.header(spec.requestIdHeader, request.id);
    const key = spec.readKey(request);
    if (!key) return done(spec.missingKey());
    if (!keyring.accepts(key)) return done(spec.invalidKey());
    request.owner = keyring.ownerOf(key);
    const refused = spec.checkHeaders?.(request);
    if (refused) return done(refused);
    if (rateLimiter) {
      const rate = rateLimiter.hit(request.owner, request.receivedAt);
      if (spec.rateLimitHeaders) {
        reply.header('x-ratelimit-limit-requests', String(rate.limit));
        reply.header('x-ratelimit-remaining-requests', String(rate.remaining));
        reply.header('x-ratelimit-reset-requests', formatDuration(rate.resetMs));
      }
      if (!rate.allowed) {
        const retryAfterS = Math.ceil(rate.resetMs / 1000);
        return done(new GatewayError(429, statusMessage(429), { retryAfterS }));
      }
    }
    // Error and disconnect faults strike before the body is read, like an overloaded gateway.
    const header = request.headers[FAULT_HEADER];
    if (header === undefined && faults.size === 0) return done();
    let fault: Fault | undefined;
    if (header !== undefined) {
      fault = typeof header === 'string' ? parseFaultHeader(header) : undefined;
      if (!fault) {
        const message = `${FAULT_HEADER} must be a status 400-599, "disconnect" or "stream_error"`;
        return done(new GatewayError(400, message));
      }
      if (fault.kind === 'stream_error') {
        request.pendingFault = fault;
        return done();
      }
    } else {
      fault = faults.take(request.method, pathOf(request.url), 'now');
      if (!fault) return done();
    }
    strike(fault, request, reply, done);
  });

  // A stream fault waits for the body, which tells whether the request streams at all.
  app.addHook('preHandler', (request, reply, done) => {
    if (request.pendingFault === undefined && faults.size === 0) return done();
    const streaming = (request.body as { stream?: unknown } | undefined)?.stream === true;
    const fault =
      request.pendingFault ??
      (streaming ? faults.take(request.method, pathOf(request.url), 'stream') : undefined);
    if (!fault) return done();
    if (!streaming) {
      strike(fault, request, reply, done);
      return;
    }
    request.fault = fault.label;
    request.streamFault = {
      afterEvents: fault.afterEvents,
      status: fault.status ?? spec.streamErrorStatus,
    };
    done();
  });

  /** Fails the request as the fault says: an error in the group's shape, or a dropped socket. */
  function strike(
    fault: Fault,
    request: FastifyRequest,
    reply: FastifyReply,
    done: (err?: Error) => void,
  ): void {
    request.fault = fault.label;
    if (fault.kind === 'disconnect') {
      disconnect(request, reply);
      return;
    }
    const status = fault.status ?? (fault.kind === 'stream_error' ? spec.streamErrorStatus : 500);
    const retryAfterS =
      fault.retryAfterS ?? (RETRY_AFTER_STATUSES.has(status) ? DEFAULT_RETRY_AFTER_S : undefined);
    const options = retryAfterS === undefined ? {} : { retryAfterS };
    done(new GatewayError(status, statusMessage(status), options));
  }

  /** Destroys the connection without a response; the journal still records the request. */
  function disconnect(request: FastifyRequest, reply: FastifyReply): void {
    reply.hijack();
    record(request, 0, 0);
    reply.raw.destroy();
  }

  app.setErrorHandler((err, request, reply) => {
    const error = normalizeError(err);
    if (error.status >= 500 && request.fault === undefined) {
      app.log.error({ reqId: request.id, err }, 'request failed');
    }
    const { status, body } = spec.render(error, request);
    const retryAfterS = error.options.retryAfterS;
    if (retryAfterS !== undefined) {
      reply.header('retry-after', String(retryAfterS));
      if (spec.retryAfterMs) reply.header('retry-after-ms', String(retryAfterS * 1000));
    }
    return reply.code(status).send(body);
  });

  app.setNotFoundHandler((request) => {
    throw spec.unknownRoute(request);
  });

  function record(request: FastifyRequest, status: number, durationMs: number): void {
    journal.record({
      id: request.id,
      at: request.receivedAt,
      method: request.method,
      url: request.url,
      status,
      durationMs,
      headers: request.headers,
      rawBody: request.rawBody,
      ...(request.fault === undefined ? {} : { fault: request.fault }),
    });
  }

  app.addHook('onResponse', (request, reply, done) => {
    record(request, reply.statusCode, Math.round(reply.elapsedTime * 1000) / 1000);
    done();
  });
}

export const STREAM_DELAY_HEADER = 'x-emulator-stream-delay-ms';

/** The stream's pauses: configured, or the chunk delay one request asks for by header. */
export function streamPacing(request: FastifyRequest, config: Config): Pacing {
  const header = request.headers[STREAM_DELAY_HEADER];
  const firstMs = config.streamTtftMs;
  if (header === undefined) return { firstMs, betweenMs: config.streamChunkDelayMs };
  if (typeof header !== 'string' || !/^\d{1,5}$/.test(header) || Number(header) > 60_000) {
    throw new GatewayError(
      400,
      `${STREAM_DELAY_HEADER} must be a whole number of milliseconds from 0 to 60000`,
    );
  }
  return { firstMs, betweenMs: Number(header) };
}

/** A `stream_error` fault as a streaming route applies it. */
export interface StreamFault {
  afterEvents: number;
  status: number;
}

/**
 * Cuts a stream for a `stream_error` fault: the first `afterEvents` events (never the stream's
 * closing one, `message_stop` or `[DONE]`), then `error`. `frames` must hold one event each.
 */
export function cutStream<T>(frames: T[], fault: StreamFault, error: T): T[] {
  return [...frames.slice(0, Math.min(fault.afterEvents, frames.length - 1)), error];
}
