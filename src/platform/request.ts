import { isUtf8 } from 'node:buffer';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { GatewayError } from './errors.js';
import { parseJsonBody } from './json-body.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Opaque id of the API key and session that made the request (never the key itself). */
    owner: string;
    /** The key's fingerprint (an HMAC under the process secret). */
    keyHash: string;
    /** Emulator time at arrival: the one clock reading a request's work uses. */
    receivedAt: number;
    /** The monotonic clock at arrival (ms), where a stream's timeline starts. */
    arrivedMono: number;
    /** The request body as received, kept for the journal. */
    rawBody: string | undefined;
    /** The answer's tokens as its API reports them, when it has a usage (for the stats). */
    usageTokens: UsageTokens | undefined;
    /** The JSON answer as sent, for the journal. */
    responseBody: string | Buffer | undefined;
    /** The first bytes of an event stream answer, for the journal. */
    streamCapture: StreamCapture | undefined;
    /** Where the answer came from: the emulator, the upstream gateway, or a recording. */
    source: 'emulator' | 'upstream' | 'replay';
    /** The injected fault this request got, for the journal. */
    fault: string | undefined;
    /** A `stream_error` fault the route applies while streaming. */
    streamFault: StreamFault | undefined;
    /** Journaled already (shared state journals before the answer ends). */
    journaled: boolean | undefined;
  }
}

/**
 * How much of a stream the journal keeps. Under half of Node's buffer pool size, so that each
 * stream's capture is a slice of the pool rather than an allocation of its own.
 */
export const STREAM_CAPTURE_BYTES = 4000;

/**
 * The writes of a stream whose time is kept (its timeline), apart from the bytes: each write is
 * two numbers, so a stream's timeline is at most 16 KB however long it runs. A constant, as
 * STREAM_CAPTURE_BYTES is: what the journal keeps of one request.
 */
export const STREAM_TIMELINE_WRITES = 1000;

/** How a stream was cut short on purpose: a `stream_error` fault's frame, or `after_bytes`. */
export type StreamCut = 'stream_error' | 'after_bytes';

/** A stream's timeline, as the journal keeps it (docs/control.md "Dashboard", docs/dashboard.md). */
export interface StreamTimeline {
  /** Per write to the socket: ms from the request's arrival, then frames written so far. */
  writes: number[];
  /** Writes past STREAM_TIMELINE_WRITES, not timed. */
  writesDropped: number;
  /** Frames written in all (an error frame of a fault included). */
  frames: number;
  /** The frame the first content (a delta) is, when the stream has one. */
  contentFrame: number | undefined;
  cut: { kind: StreamCut; atMs: number } | undefined;
}

/**
 * The first bytes of a stream as sent, for the journal: one buffer, copied into; and the time
 * of each write (`wrote`), two numbers pushed per write into a bounded array.
 */
export class StreamCapture {
  private readonly buffer = Buffer.allocUnsafe(STREAM_CAPTURE_BYTES);
  private used = 0;
  /** Every byte sent, kept or not. */
  seen = 0;
  private readonly writes: number[] = [];
  private writesDropped = 0;
  private frames = 0;
  private cutBy: StreamTimeline['cut'];
  /** The frame the first content is (set by the producer through the sink). */
  contentFrame: number | undefined;

  /** `arrivedMono`: the monotonic clock at the request's arrival. */
  constructor(private readonly arrivedMono = 0) {}

  /** A write went to the socket at `mono` (the monotonic clock), `frames` written so far. */
  wrote(mono: number, frames: number): void {
    this.frames = frames;
    if (this.writes.length < 2 * STREAM_TIMELINE_WRITES) {
      this.writes.push(Math.round((mono - this.arrivedMono) * 10) / 10, frames);
    } else {
      this.writesDropped++;
    }
  }

  /** The stream was cut short by a fault at `mono`. */
  cut(kind: StreamCut, mono: number): void {
    this.cutBy = { kind, atMs: Math.round((mono - this.arrivedMono) * 10) / 10 };
  }

  timeline(): StreamTimeline {
    return {
      writes: this.writes,
      writesDropped: this.writesDropped,
      frames: this.frames,
      contentFrame: this.contentFrame,
      cut: this.cutBy,
    };
  }

  add(bytes: Buffer): void {
    this.seen += bytes.length;
    if (this.used < STREAM_CAPTURE_BYTES) {
      this.used += bytes.copy(this.buffer, this.used, 0, STREAM_CAPTURE_BYTES - this.used);
    }
  }

  get truncated(): boolean {
    return this.seen > this.used;
  }

  /** The bytes kept, as sent (a view: the capture is not written to after the stream ends). */
  bytes(): Buffer {
    return this.buffer.subarray(0, this.used);
  }
}

/**
 * A stream fault as a streaming route applies it: an error frame after some events
 * (`stream_error`), or the connection cut after some bytes (`after_bytes`).
 */
export type StreamFault = { afterEvents: number; status: number } | { afterBytes: number };

/** A URL's path, without its query. */
export const pathOf = (url: string) => {
  const query = url.indexOf('?');
  return query === -1 ? url : url.slice(0, query);
};

/** Tokens as each API reports them (messages' input without the cache's; chat's prompt). */
export interface UsageTokens {
  input: number;
  cacheRead: number;
  cacheCreation: number;
  output: number;
}

/** What stands for a credential wherever one would be shown: log, journal, recordings, views. */
export const REDACTED = '[REDACTED]';

/**
 * The emulator keeps this answer back on purpose (a paced stream's pause, a delay or hang fault,
 * a journal wait): the socket's idle timeout (IDLE_TIMEOUT_MS), which is for stalled clients,
 * must not cut it. Each holder has its own bound. (An injected request has no real socket.)
 */
export function holdOpen(res: {
  socket: unknown;
  once?: (event: 'close', fn: () => void) => unknown;
}): void {
  const socket = res.socket as { setTimeout?: (ms: number) => void } | null;
  if (typeof socket?.setTimeout !== 'function') return;
  socket.setTimeout(0);
  // Held answers are under way (see answering): counted per socket until each closes.
  const key = socket as object;
  held.set(key, (held.get(key) ?? 0) + 1);
  res.once?.('close', () => {
    const left = (held.get(key) ?? 1) - 1;
    if (left > 0) held.set(key, left);
    else held.delete(key);
  });
}

/** The sockets with held answers (see holdOpen), and how many. */
const held = new WeakMap<object, number>();

/**
 * Whether an answer is under way on a socket: a held one (a stream, a delay, a wait), or bytes
 * of one still queued to be written. A client error behind it must not write into it.
 */
export const answering = (socket: { writableLength?: number }): boolean =>
  held.has(socket) || (socket.writableLength ?? 0) > 0;

/**
 * A string field of a parsed body, or undefined: a body may be any JSON value (`null`, a
 * number, an array) until its schema has checked it, and facts are read from refused ones too.
 */
export function bodyString(body: unknown, field: string): string | undefined {
  if (typeof body !== 'object' || body === null) return undefined;
  const value = (body as Record<string, unknown>)[field];
  return typeof value === 'string' ? value : undefined;
}

/**
 * The answer headers clients read (request ids, retry and rate-limit headers): what CORS
 * exposes and what a recording keeps (with the content type).
 */
export const CLIENT_HEADERS = [
  'request-id',
  'x-request-id',
  'retry-after',
  'retry-after-ms',
  'x-ratelimit-limit-requests',
  'x-ratelimit-remaining-requests',
  'x-ratelimit-reset-requests',
];

/** Upstream accepts 32 MB request bodies. @see https://platform.claude.com/docs/en/api/errors */
export const BODY_LIMIT = 32 * 1024 * 1024;

/**
 * Adds the per-request fields the group hooks fill in, and the one body parser: JSON only,
 * refusing `__proto__` and `constructor` keys, keeping the raw text for the journal.
 */
export function setupRequests(app: FastifyInstance): void {
  app.decorateRequest('owner', '');
  app.decorateRequest('keyHash', '');
  app.decorateRequest('receivedAt', 0);
  app.decorateRequest('arrivedMono', 0);
  app.decorateRequest('rawBody', undefined);
  app.decorateRequest('fault', undefined);
  app.decorateRequest('source', 'emulator');
  app.decorateRequest('responseBody', undefined);
  app.decorateRequest('usageTokens', undefined);
  app.decorateRequest('streamCapture', undefined);
  app.decorateRequest('pendingFault', undefined);
  app.decorateRequest('streamFault', undefined);
  app.decorateRequest('gateway', undefined);

  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'buffer', bodyLimit: BODY_LIMIT },
    (request, body, done) => {
      const bytes = body as Buffer;
      const text = bytes.toString();
      request.rawBody = text;
      try {
        checkEncoding(request);
        // Decoding would put U+FFFD in place of each bad byte: a prompt the client never sent.
        if (!isUtf8(bytes)) throw new GatewayError(400, 'Request body is not valid UTF-8.');
        done(null, parseJsonBody(text));
      } catch (err) {
        done(err as Error);
      }
    },
  );
}

/**
 * Bodies are read as uncompressed UTF-8, as upstream sends and reads them: a compressed body
 * or another charset is a 415 rather than a body misread.
 */
function checkEncoding(request: FastifyRequest): void {
  const encoding = request.headers['content-encoding'];
  if (encoding !== undefined && encoding.trim().toLowerCase() !== 'identity') {
    throw new GatewayError(
      415,
      `Content-Encoding ${encoding} is not supported; send the JSON body uncompressed.`,
    );
  }
  const type = request.headers['content-type'] ?? '';
  const charset =
    type.indexOf(';') === -1 ? undefined : /;\s*charset\s*=\s*"?([^";\s]*)/i.exec(type)?.[1];
  if (charset !== undefined && !/^utf-?8$/i.test(charset)) {
    throw new GatewayError(415, `Content-Type charset must be utf-8 (got ${charset}).`);
  }
}

/**
 * The request id for a log line about a request: requests get no child logger of their own (see
 * app.ts), so each such line names its request itself.
 */
export const reqIdField = (request: FastifyRequest): { reqId: string } => ({ reqId: request.id });

/** Requests refused before their body was read: they never get a `100 Continue`. */
const refused = new WeakSet<object>();

export const refuseContinue = (raw: object): void => {
  refused.add(raw);
};

/** Whether a request may still get its `100 Continue` (it was not refused). */
export const mayContinue = (raw: object): boolean => !refused.has(raw);
