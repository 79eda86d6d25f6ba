import type { ServerResponse } from 'node:http';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { sleepWith, type Wait } from '../platform/clock.js';
import { GatewayError } from '../platform/errors.js';
import type { GroupName, RequestFacts } from '../platform/group.js';
import { holdOpen, pathOf, StreamCapture } from '../platform/request.js';
import { redactUrl } from '../platform/secrets.js';
import { YIELD_BYTES } from '../platform/sse.js';
import {
  blockOf,
  bodyHash,
  bodyTextOf,
  keptHeaders,
  parseStream,
  type RecordedResponse,
  type RecordingMatch,
  type Recordings,
  recordedBody,
} from './recordings.js';

/** The body as a recording keeps it: what the group hides in it (keptBody) hidden. */
const keptBody = (request: FastifyRequest, facts: RequestFacts): unknown =>
  facts.keptBody && request.rawBody !== undefined
    ? JSON.parse(facts.keptBody(request.rawBody))
    : request.body;

/** Resolves once a response can take more (`drain`) or is gone (`close`). */
const writable = (raw: ServerResponse) =>
  new Promise<void>((resolve) => {
    const done = () => {
      raw.off('drain', done);
      raw.off('close', done);
      resolve();
    };
    raw.once('drain', done);
    raw.once('close', done);
  });

/**
 * The upstream modes (README "Record and replay"): `record` forwards every request to the real
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
        { url: redactUrl(request.url), maxBytes: this.options.maxRecordedBytes },
        'answer not recorded: larger than RECORDING_MAX_BYTES',
      );
      return true;
    }
    const query = request.url.includes('?') ? redactUrl(request.url).split('?')[1] : undefined;
    const kept = recordings.add(
      match,
      {
        ...(query === undefined ? {} : { query }),
        ...(request.body === undefined ? {} : { body: keptBody(request, facts) }),
      },
      new URL(base).origin,
      response,
    );
    if (!kept) {
      request.log.warn(
        { url: redactUrl(request.url), maxFileBytes: recordings.maxFileBytes },
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
    // Upstream may think for longer than IDLE_TIMEOUT_MS; fetch's own timeouts (300 s) bound it.
    holdOpen(reply.raw);
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
    const type = res.headers.get('content-type') ?? '';
    if (!type.includes('text/event-stream') || !res.body) {
      const text = await res.text();
      reply.code(res.status).headers(kept).send(text);
      if (Buffer.byteLength(text) > limit) return 'too large';
      return { status: res.status, headers: kept, ...recordedBody(text) };
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
    try {
      for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
        const bytes = Buffer.from(chunk);
        raw.write(bytes);
        capture(bytes);
        seen += bytes.length;
        if (seen > limit) continue; // passed on, no longer kept
        pending += decoder.decode(bytes, { stream: true });
        const end = pending.lastIndexOf('\n\n');
        if (end === -1) continue;
        events.push(
          ...parseStream(pending.slice(0, end + 2), Math.round(this.options.monotonic() - started)),
        );
        pending = pending.slice(end + 2);
      }
    } catch {
      broken = true;
    }
    if (broken || raw.destroyed) {
      // The upstream broke off, or the client left (which aborts the fetch): journaled and
      // logged as an aborted stream, and not recorded.
      const reason = raw.destroyed ? 'client closed' : 'error';
      raw.destroy();
      request.gateway?.streamAborted(request, reply, { completed: false, bytes: seen, reason });
      return 'cut';
    }
    raw.end();
    if (seen > limit) return 'too large';
    if (pending !== '') {
      events.push(...parseStream(`${pending}\n\n`, Math.round(this.options.monotonic() - started)));
    }
    return { status: res.status, headers: kept, stream: events };
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
    let yieldedAt = 0;
    /** The client left: journaled and logged as an aborted stream. */
    const cut = () => {
      raw.destroy();
      const result = { completed: false, bytes: sent, reason: 'client closed' as const };
      request.gateway?.streamAborted(request, reply, result);
    };
    // (start-up checks the status and headers with node:http's own rules: this cannot throw)
    raw.writeHead(recorded.status, recorded.headers);
    holdOpen(raw); // recorded pauses, as a paced stream's
    for (const event of recorded.stream) {
      if (this.options.pacing === 'recorded') {
        const wait = event.at_ms - (this.options.monotonic() - started);
        if (wait > 0) await sleepWith(this.options.wait, wait);
      }
      if (raw.destroyed) {
        cut();
        return;
      }
      const bytes = Buffer.from(blockOf(event));
      const room = raw.write(bytes);
      capture(bytes);
      sent += bytes.length;
      // As the emulator's own streams: the client's pace, and other requests' turn.
      if (!room) await writable(raw);
      else if (sent - yieldedAt > YIELD_BYTES) {
        yieldedAt = sent;
        await new Promise((resolve) => setImmediate(resolve));
      }
    }
    if (raw.destroyed) cut();
    else raw.end();
  }

  /** Keeps the first bytes of a stream for the journal, as the emulator's own streams do. */
  private capture(request: FastifyRequest): (bytes: Buffer) => void {
    const capture = new StreamCapture();
    request.streamCapture = capture;
    return (bytes) => capture.add(bytes);
  }
}
