import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from '../platform/errors.js';

/**
 * Sessions (docs/control.md "Sessions"): a request's `x-emulator-session` header scopes what it creates
 * and sees (tasks, prompt cache, faults, stubs, journal), so parallel test files do not meet.
 * Requests without the header belong to the default session; the clock is shared.
 */
export const SESSION_HEADER = 'x-emulator-session';
export const DEFAULT_SESSION = 'default';

declare module 'fastify' {
  interface FastifyRequest {
    /** The request's session (`x-emulator-session`, else the default one). */
    session: string;
  }
}

/** Every request's session, the default one until a group's hooks read the header. */
export function setupSessions(app: FastifyInstance): void {
  app.decorateRequest('session', DEFAULT_SESSION);
}

/** Printable ASCII without spaces: a test file's path or a worker id fits. */
const SESSION_NAME = /^[\x21-\x7e]{1,200}$/;

export const SESSION_PATTERN = SESSION_NAME.source;

/** The session a request names, or the default; a malformed name is a 400 naming the header. */
export function readSession(request: FastifyRequest): string {
  const value = request.headers[SESSION_HEADER];
  if (value === undefined) return DEFAULT_SESSION;
  if (typeof value !== 'string' || !SESSION_NAME.test(value)) {
    throw new GatewayError(
      400,
      `${SESSION_HEADER} must be 1 to 200 printable ASCII characters without spaces`,
    );
  }
  return value;
}

/**
 * The owner stores key things by: the key's fingerprint, and the session unless it is the
 * default one (so a default-session owner is the fingerprint alone).
 */
export const ownerIn = (keyHash: string, session: string) =>
  session === DEFAULT_SESSION ? keyHash : `${keyHash}\u0000${session}`;

/** The session an owner id belongs to. */
export const sessionOfOwner = (owner: string) => {
  const at = owner.indexOf('\u0000');
  return at === -1 ? DEFAULT_SESSION : owner.slice(at + 1);
};

/** The key fingerprint an owner id holds. */
export const keyOfOwner = (owner: string) => {
  const at = owner.indexOf('\u0000');
  return at === -1 ? owner : owner.slice(0, at);
};
