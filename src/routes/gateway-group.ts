import type { FastifyInstance, FastifyRequest } from 'fastify';
import { type GatewayError, normalizeError } from '../errors.js';
import type { EmulatorState } from '../state.js';

export interface RenderedError {
  status: number;
  body: unknown;
}

/** The key from `Authorization: Bearer <key>` (seed part 5, video and chat groups). */
export function readBearerKey(request: FastifyRequest): string | undefined {
  const auth = request.headers.authorization;
  if (typeof auth !== 'string' || auth.slice(0, 7).toLowerCase() !== 'bearer ') return undefined;
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
  /** The header every response of the group carries the request id in, if any. */
  requestIdHeader?: string;
}

/**
 * Wires one API group inside its encapsulated plugin: key check, error envelope, not-found
 * route, per-response headers and the request journal.
 */
export function setupGatewayGroup(app: FastifyInstance, state: EmulatorState, spec: GroupSpec) {
  const { keyring, journal } = state;
  const { clock } = state.deps;

  app.addHook('onRequest', (request, reply, done) => {
    request.receivedAt = clock.now();
    if (spec.requestIdHeader) reply.header(spec.requestIdHeader, request.id);
    const key = spec.readKey(request);
    if (!key) return done(spec.missingKey());
    if (!keyring.accepts(key)) return done(spec.invalidKey());
    request.owner = keyring.ownerOf(key);
    done();
  });

  app.setErrorHandler((err, request, reply) => {
    const error = normalizeError(err);
    if (error.status >= 500) app.log.error({ reqId: request.id, err }, 'request failed');
    const { status, body } = spec.render(error, request);
    if (error.options.retryAfterS !== undefined) {
      reply.header('retry-after', String(error.options.retryAfterS));
    }
    return reply.code(status).send(body);
  });

  app.setNotFoundHandler((request) => {
    throw spec.unknownRoute(request);
  });

  app.addHook('onResponse', (request, reply, done) => {
    journal.record({
      id: request.id,
      at: request.receivedAt,
      method: request.method,
      url: request.url,
      status: reply.statusCode,
      durationMs: Math.round(reply.elapsedTime * 1000) / 1000,
      headers: request.headers,
      rawBody: request.rawBody,
      ...(request.fault === undefined ? {} : { fault: request.fault }),
    });
    done();
  });
}
