import type { IncomingHttpHeaders } from 'node:http';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { SetTimer } from './clock.js';
import type { GatewayError } from './errors.js';
import type { Feature } from './features.js';
import { refuseContinue, reqIdField } from './request.js';
import { normalizeError } from './validation.js';

/**
 * What an API group is to the platform: its descriptor (prefix, key, envelope, routes, stores)
 * and how any error reaches its client in the group's envelope. The per-request pipeline every
 * group runs (key, rate limit, faults, journal) is the harness's: harness/pipeline.ts.
 */

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

/** What a match or the journal reads of a parsed request (docs/stubs.md "Stubs"). */
export interface RequestFacts {
  /** The model the request names (chat: the Azure deployment's, else the body's), from a body
   * of any JSON value (`null` included, as a refused request has); undefined when none. */
  model(request: FastifyRequest): string | undefined;
  /** The text a `prompt_regex` is tried on, and the user turn it is (text groups). */
  prompt(body: unknown): { prompt: string | undefined; turn: number | undefined };
  /** The betas the request's headers turn on, for a recording to keep (messages). */
  betas?(headers: IncomingHttpHeaders): ReadonlySet<string>;
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

/** What a request refused before its body was read may still send, and the timer that bounds it. */
export interface RefusedUploads {
  /** Wall-clock timers. */
  setTimer: SetTimer;
  /** What a request refused before its body was read may still send (`readTheRest`). */
  refusedUpload: { maxBytes: number; timeoutMs: number };
}

const DEBUGGING = new Set(['debug', 'trace']);

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
  hooks: RefusedUploads,
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

/**
 * A request refused before its body was read (too large, a wrong content type, a bad key): if
 * the connection closed at once, the client, still sending, would get a reset and lose the
 * answer. So the rest of the body is read and thrown away, and the connection kept, up to
 * REFUSED_UPLOAD_MAX_BYTES and REFUSED_UPLOAD_TIMEOUT_MS (wall clock); past either it is dropped.
 */
function readTheRest(
  request: FastifyRequest,
  reply: FastifyReply,
  { refusedUpload, setTimer }: RefusedUploads,
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
