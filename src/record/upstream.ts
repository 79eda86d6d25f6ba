import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { type SetTimer, sleepWith, type Wait } from '../platform/clock.js';
import { GatewayError } from '../platform/errors.js';
import type { GroupName, RequestFacts } from '../platform/group.js';
import { holdOpen, pathOf, reqIdField, StreamCapture } from '../platform/request.js';
import {
  credentialsOf,
  redactCredentials,
  redactUrl,
  withUrlsRedacted,
} from '../platform/secrets.js';
import { type SseResult, YIELD_BYTES } from '../platform/sse.js';
import {
  blockOf,
  bodyHash,
  bodyTextOf,
  keptHeaders,
  MAX_BETAS,
  parseStream,
  type RecordedResponse,
  type RecordingMatch,
  type Recordings,
  recordedBody,
} from './recordings.js';

/**
 * Resolves once a response can take more (`drain`) or is gone (`close`), true; false when it
 * took nothing for `stallMs` (a client that stopped reading), which the caller cuts.
 */
const writable = (raw: ServerResponse, setTimer: SetTimer, stallMs: number) =>
  new Promise<boolean>((resolve) => {
    const done = (ok: boolean) => {
      raw.off('drain', drained);
      raw.off('close', drained);
      cancel();
      resolve(ok);
    };
    const drained = () => done(true);
    const cancel = setTimer(() => done(false), stallMs);
    raw.once('drain', drained);
    raw.once('close', drained);
  });

/**
 * The most bytes of an upstream's JSON answer read (the request body's own limit): the answer
 * is read whole before it is sent on, and a 1 GB one took 2 GB and ended in a 500.
 */
export const MAX_UPSTREAM_BYTES = 32 * 1024 * 1024;

/** An upstream answer the emulator will not pass on, or one that broke off: a 502. */
const badGateway = (why: string) => new GatewayError(502, `The upstream gateway ${why}.`);

/** The bytes of a body, read up to `max` (undefined past it: the rest is not read). */
async function readCapped(
  body: ReadableStream<Uint8Array>,
  max: number,
): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  const reader = body.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return Buffer.concat(chunks, size);
    size += value.length;
    if (size > max) {
      await reader.cancel().catch(() => {});
      return undefined;
    }
    chunks.push(Buffer.from(value.buffer, value.byteOffset, value.length));
  }
}

/**
 * The upstream modes (docs/record-replay.md "Record and replay"): `record` forwards every request to the real
 * gateway, answers with its answer and keeps it; `replay` answers from the recordings (an
 * unrecorded request gets the emulator's own answer, or a 404 when strict); `proxy` replays
 * what is recorded and forwards the rest (keeping it when RECORDINGS_DIR is set).
 */
export type UpstreamMode = 'off' | 'record' | 'replay' | 'proxy';

export interface UpstreamOptions {
  mode: UpstreamMode;
  /** The upstream base URL of each group (UPSTREAM_URL, or UPSTREAM_URL_<GROUP>). */
  urls: Partial<Record<GroupName, string>>;
  recordings: Recordings;
  strict: boolean;
  pacing: 'recorded' | 'instant';
  wait: Wait;
  monotonic: () => number;
  /** An answer larger than this is passed on but not recorded (RECORDING_MAX_BYTES). */
  maxRecordedBytes: number;
  setTimer: SetTimer;
  /** A stream to a client that takes nothing for this long is cut (STREAM_STALL_TIMEOUT_MS). */
  stallMs: number;
  /** The longest a forwarded request may take, its answer's end included (UPSTREAM_TIMEOUT_MS). */
  timeoutMs: number;
}

/** Where an answer came from, as the journal says. */
export type AnswerSource = 'emulator' | 'upstream' | 'replay';

/** Request headers never forwarded: the connection's own, and the emulator's. */
const NOT_FORWARDED = new Set([
  'host',
  'connection',
  'content-length',
  'transfer-encoding',
  'keep-alive',
  'upgrade',
  'expect',
  'te',
  'accept-encoding',
]);

export class Upstream {
  constructor(private readonly options: UpstreamOptions) {}

  get active(): boolean {
    return this.options.mode !== 'off';
  }

  /**
   * Answers a request from a recording or from upstream, as the mode says; false when the
   * emulator should answer it itself.
   */
  async handle(
    request: FastifyRequest,
    reply: FastifyReply,
    group: GroupName,
    facts: RequestFacts,
  ): Promise<boolean> {
    const { mode, recordings, strict } = this.options;
    const model = facts.model(request);
    const hash = bodyHash(request.body);
    const match: RecordingMatch = {
      group,
      method: request.method,
      path: pathOf(request.url),
      ...(model === undefined ? {} : { model }),
      ...(hash === undefined ? {} : { body_hash: hash }),
    };
    if (mode === 'replay' || mode === 'proxy') {
      const recorded = recordings.next(match, request.session);
      if (recorded) {
        request.source = 'replay';
        await this.replay(request, reply, recorded);
        return true;
      }
      if (mode === 'replay') {
        if (strict) {
          throw new GatewayError(404, `No recording of ${request.method} ${match.path} matches.`);
        }
        return false;
      }
    }
    const base = this.options.urls[group];
    if (base === undefined) return false;
    request.source = 'upstream';
    const response = await this.forward(request, reply, base);
    if (response === 'cut') return true;
    if (response === 'too large') {
      request.log.warn(
        {
          ...reqIdField(request),
          url: redactUrl(request.url),
          maxBytes: this.options.maxRecordedBytes,
        },
        'answer not recorded: larger than RECORDING_MAX_BYTES',
      );
      return true;
    }
    const query = request.url.includes('?') ? redactUrl(request.url).split('?')[1] : undefined;
    const betas = facts.betas ? [...facts.betas(request.headers)].slice(0, MAX_BETAS) : [];
    const kept = recordings.add(
      match,
      {
        ...(query === undefined ? {} : { query }),
        ...(request.body === undefined ? {} : { body: withUrlsRedacted(request.body) }),
        ...(betas.length === 0 ? {} : { betas }),
      },
      new URL(base).origin,
      response,
    );
    if (!kept) {
      request.log.warn(
        {
          ...reqIdField(request),
          url: redactUrl(request.url),
          maxFileBytes: recordings.maxFileBytes,
        },
        'answer not recorded: its recording file would be larger than a start-up reads',
      );
    }
    return true;
  }

  /**
   * Sends the request on, and the answer back as it comes; returns the answer as recorded, or
   * why it is not: too large to record, or a stream cut off before its end.
   */
  private async forward(
    request: FastifyRequest,
    reply: FastifyReply,
    base: string,
  ): Promise<RecordedResponse | 'too large' | 'cut'> {
    const limit = this.options.maxRecordedBytes;
    const headers: Record<string, string> = {};
    for (const [name, value] of Object.entries(request.headers)) {
      if (value === undefined || NOT_FORWARDED.has(name) || name.startsWith('x-emulator-'))
        continue;
      headers[name] = Array.isArray(value) ? value.join(', ') : value;
    }
    headers['accept-encoding'] = 'identity';
    const gone = new AbortController();
    reply.raw.once('close', () => gone.abort());
    // Upstream may think for longer than IDLE_TIMEOUT_MS, not for longer than UPSTREAM_TIMEOUT_MS
    // (fetch's own timeouts restart at every byte: a trickle would hold the request for ever).
    // The timer is held here, not by AbortSignal.timeout, which can be collected before it fires.
    holdOpen(reply.raw);
    let late = false;
    // (cancelled below once the exchange ends, which a client that leaves ends too)
    const cancelTimer = this.options.setTimer(() => {
      late = true;
      gone.abort();
    }, this.options.timeoutMs);
    try {
      return await this.exchange(request, reply, base, headers, gone, limit);
    } catch (err) {
      if (late && !reply.raw.headersSent) {
        throw new GatewayError(
          504,
          `The upstream gateway did not answer within ${this.options.timeoutMs} ms.`,
        );
      }
      throw err;
    } finally {
      cancelTimer();
    }
  }

  /** The exchange with the upstream, within forward's timer (`gone` aborts it). */
  private async exchange(
    request: FastifyRequest,
    reply: FastifyReply,
    base: string,
    headers: Record<string, string>,
    gone: AbortController,
    limit: number,
  ): Promise<RecordedResponse | 'too large' | 'cut'> {
    let res: Response;
    try {
      res = await fetch(`${base.replace(/\/$/, '')}${request.url}`, {
        method: request.method,
        headers,
        ...(request.rawBody === undefined ? {} : { body: request.rawBody }),
        redirect: 'manual',
        signal: gone.signal,
      });
    } catch (err) {
      const cause = (err as { cause?: { code?: string } }).cause?.code ?? (err as Error).message;
      throw new GatewayError(502, `The upstream gateway could not be reached (${cause}).`);
    }
    const pairs: Array<[string, string]> = [];
    res.headers.forEach((value, name) => {
      pairs.push([name, value]);
    });
    const kept = keptHeaders(pairs);
    // What the request's credentials would leave in a recording, were the upstream to echo one.
    const credentials = credentialsOf(request.headers, request.url);
    const hidden = (text: string) => redactCredentials(text, credentials);
    const recordedHeaders = Object.fromEntries(
      Object.entries(kept).map(([name, value]) => [name, hidden(value)]),
    );
    const type = res.headers.get('content-type') ?? '';
    // The answer was asked for uncompressed: fetch would inflate a compressed one unbounded.
    const encoding = res.headers.get('content-encoding');
    if (encoding !== null && encoding.trim().toLowerCase() !== 'identity') {
      await res.body?.cancel().catch(() => {});
      throw badGateway(`answered with Content-Encoding ${encoding}, though asked for identity`);
    }
    if (!type.includes('text/event-stream') || !res.body) {
      let bytes: Buffer | undefined;
      try {
        bytes = res.body ? await readCapped(res.body, MAX_UPSTREAM_BYTES) : Buffer.alloc(0);
      } catch {
        throw badGateway('broke off its answer');
      }
      if (bytes === undefined) {
        throw badGateway(`answered with more than ${MAX_UPSTREAM_BYTES} bytes`);
      }
      const text = bytes.toString();
      reply.code(res.status).headers(kept).send(text);
      if (bytes.length > limit) return 'too large';
      return { status: res.status, headers: recordedHeaders, ...recordedBody(hidden(text)) };
    }
    // A stream goes through as it arrives; its events are kept with their times.
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(res.status, kept);
    const capture = this.capture(request);
    const started = this.options.monotonic();
    const events: RecordedResponse['stream'] = [];
    const decoder = new TextDecoder();
    let pending = '';
    let seen = 0;
    let broken = false;
    let stalled = false;
    const pace = this.pacer(raw);
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const bytes = Buffer.from(chunk);
        const room = raw.write(bytes);
        capture(bytes);
        seen += bytes.length;
        if (seen <= limit) {
          // Only the new text is searched for an event's end: a stream without one would
          // otherwise be searched whole at every chunk.
          const from = Math.max(0, pending.length - 1);
          pending += decoder.decode(bytes, { stream: true });
          if (pending.indexOf('\n\n', from) !== -1) {
            const end = pending.lastIndexOf('\n\n');
            const at = Math.round(this.options.monotonic() - started);
            for (const event of parseStream(hidden(pending.slice(0, end + 2)), at)) {
              events.push(event); // (not a spread: a chunk may hold more events than arguments)
            }
            pending = pending.slice(end + 2);
          }
        } // else passed on, no longer kept
        if (!(await pace(room, seen))) {
          stalled = true;
          gone.abort();
          break;
        }
      }
    } catch {
      broken = true;
    }
    if (broken || stalled || raw.destroyed) {
      // The upstream broke off, the client stopped reading, or it left (which aborts the
      // fetch): journaled and logged as an aborted stream, and not recorded.
      this.cut(
        request,
        reply,
        seen,
        stalled ? 'write stalled' : raw.destroyed ? 'client closed' : 'error',
      );
      return 'cut';
    }
    raw.end();
    if (seen > limit) return 'too large';
    if (pending !== '') {
      const at = Math.round(this.options.monotonic() - started);
      for (const event of parseStream(hidden(`${pending}\n\n`), at)) events.push(event);
    }
    return { status: res.status, headers: recordedHeaders, stream: events };
  }

  /** Sends a recorded answer: a stream paced as recorded (or at once), else the body. */
  private async replay(
    request: FastifyRequest,
    reply: FastifyReply,
    recorded: RecordedResponse,
  ): Promise<void> {
    if (!recorded.stream) {
      reply.code(recorded.status).headers(recorded.headers).send(bodyTextOf(recorded));
      return;
    }
    reply.hijack();
    const raw = reply.raw;
    const capture = this.capture(request);
    const started = this.options.monotonic();
    let sent = 0;
    const pace = this.pacer(raw);
    // (start-up checks the status and headers with node:http's own rules: this cannot throw)
    raw.writeHead(recorded.status, recorded.headers);
    holdOpen(raw); // recorded pauses, as a paced stream's
    for (const event of recorded.stream) {
      if (this.options.pacing === 'recorded') {
        const wait = event.at_ms - (this.options.monotonic() - started);
        if (wait > 0) await sleepWith(this.options.wait, wait);
      }
      if (raw.destroyed) {
        this.cut(request, reply, sent, 'client closed');
        return;
      }
      const bytes = Buffer.from(blockOf(event));
      const room = raw.write(bytes);
      capture(bytes);
      sent += bytes.length;
      if (!(await pace(room, sent))) {
        this.cut(request, reply, sent, 'write stalled');
        return;
      }
    }
    if (raw.destroyed) this.cut(request, reply, sent, 'client closed');
    else raw.end();
  }

  /**
   * What a stream passed on does after each write, as the emulator's own streams do: waits
   * for the client to take it (false when it took nothing for STREAM_STALL_TIMEOUT_MS), or
   * lets other requests run after every YIELD_BYTES.
   */
  private pacer(raw: ServerResponse): (room: boolean, sent: number) => Promise<boolean> {
    let yieldedAt = 0;
    return async (room, sent) => {
      if (!room) return writable(raw, this.options.setTimer, this.options.stallMs);
      if (sent - yieldedAt > YIELD_BYTES) {
        yieldedAt = sent;
        await new Promise((resolve) => setImmediate(resolve));
      }
      return true;
    };
  }

  /** A stream cut off (the upstream broke off, the client left or stopped reading): journaled and logged as aborted, not recorded. */
  private cut(
    request: FastifyRequest,
    reply: FastifyReply,
    bytes: number,
    reason: NonNullable<SseResult['reason']>,
  ): void {
    reply.raw.destroy();
    request.gateway?.streamAborted(request, reply, { completed: false, bytes, reason });
  }

  /** Keeps the first bytes of a stream for the journal, as the emulator's own streams do. */
  private capture(request: FastifyRequest): (bytes: Buffer) => void {
    const capture = new StreamCapture(request.arrivedMono);
    request.streamCapture = capture;
    return (bytes) => capture.add(bytes);
  }
}
