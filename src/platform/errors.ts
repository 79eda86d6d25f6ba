/**
 * The wire-error catalogue shared by the API groups. A route throws a GatewayError (or Fastify
 * throws one of its own, translated by validation.ts); each group renders it in its own envelope.
 */

export type PathSegment = string | number;

/** A problem with one request field; each group phrases it in its own words. */
export interface FieldIssue {
  path: PathSegment[];
  /**
   * `extra`: a field the object does not have (problem: "is not a permitted field"); `empty`: an
   * array that must have items has none.
   */
  kind: 'missing' | 'type' | 'value' | 'extra' | 'empty';
  /** Lower-case phrase completing "<field> ...", e.g. "must be one of 'std', 'pro'". */
  problem: string;
  /**
   * The whole message, in the group's words, where a schema words it so (`Worded`): `{param}`
   * stands for the field as the group names it. With the code it goes with.
   */
  message?: string;
  code?: string;
}

export interface GatewayErrorOptions {
  issue?: FieldIssue;
  /** Upstream error code when it is not the group's default for the status. */
  code?: string | number;
  retryAfterS?: number;
  /** Extra fields a group adds to its error object (e.g. Azure's `innererror`). */
  extra?: Record<string, unknown>;
  /**
   * The whole body, when what refuses is not the API but a gateway in front of it, in that
   * gateway's own shape (Azure's `{"error":{"code","message"}}` for an unknown API version).
   */
  body?: Record<string, unknown>;
}

/** What a failure of each status says when it was injected or rate limited. */
export function statusMessage(status: number): string {
  switch (status) {
    case 429:
      return 'Rate limit reached for requests. Please retry after a short wait.';
    case 500:
      return 'The server had an error while processing your request.';
    case 502:
      return 'Bad gateway.';
    case 503:
      return 'The service is temporarily unavailable. Please try again later.';
    case 504:
      return 'The request timed out.';
    case 529:
      return 'Overloaded';
    default:
      return `The request failed with status ${status}.`;
  }
}

/**
 * The error body outside the API groups (the control surface, unknown paths, errors raised
 * before a path is known): `{"error": {"type", "message"}}`, its type by status.
 */
export function neutralError(status: number, message: string) {
  const type =
    status === 401
      ? 'authentication_error'
      : status === 403
        ? 'permission_error'
        : status === 404
          ? 'not_found_error'
          : status >= 500
            ? 'api_error'
            : 'invalid_request_error';
  return { error: { type, message } };
}

/** Statuses whose responses tell the client when to retry. */
export const RETRY_AFTER_STATUSES = new Set([429, 503, 529]);

export class GatewayError extends Error {
  override name = 'GatewayError';
  constructor(
    readonly status: number,
    message: string,
    readonly options: GatewayErrorOptions = {},
  ) {
    super(message);
  }
}

export function fieldError(
  path: PathSegment[],
  problem: string,
  kind: FieldIssue['kind'] = 'value',
): GatewayError {
  return new GatewayError(400, problem, { issue: { path, kind, problem } });
}

export const notFound = (message: string) => new GatewayError(404, message);

/** `messages[0].content`-style path, as the chat API names parameters. */
export const bracketPath = (path: PathSegment[]) =>
  path.reduce<string>(
    (acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg),
    '',
  );

/** `messages.0.content`-style path, as the messages API names fields. */
export const dottedPath = (path: PathSegment[]) => path.join('.');

/** How the shared state store is named in a 503 (`STATE_URL` without its credentials). */
let storeName = 'STATE_URL';
export const nameStateStore = (where: string) => {
  storeName = where;
};

/** The state store cannot answer: a 503 naming it, in the envelope of whoever asked. */
export function stateStoreUnavailable(reason: string): GatewayError {
  return new GatewayError(
    503,
    `The state store (${storeName}) is unavailable: ${reason.replace(/\s+/g, ' ').slice(0, 200)}. The emulator keeps its state there (STATE_URL) and answers again once it is back.`,
    { retryAfterS: 1 },
  );
}

/** What the Redis client (ioredis) and BullMQ throw when the store is down, slow or refuses. */
const STORE_FAILURE =
  /Connection is closed|Stream isn't writeable|Command timed out|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|enableOfflineQueue|max retries|LOADING|READONLY|MASTERDOWN|NOAUTH|WRONGPASS|MISCONF|state store/;

/** Whether an error is the state store failing (answered 503), not a bug of the emulator's. */
export function isStoreFailure(err: unknown): err is Error {
  if (!(err instanceof Error)) return false;
  return (
    err.name === 'ReplyError' ||
    err.name === 'MaxRetriesPerRequestError' ||
    STORE_FAILURE.test(err.message)
  );
}
