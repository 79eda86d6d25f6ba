import type { OutgoingHttpHeader } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { Pending, SetTimer, Wait } from './clock.js';
import { Lru } from './lru.js';
import { holdOpen, reqIdField } from './request.js';
import { splitTokens } from './tokens.js';

/**
 * The one SSE writer. A stream is a producer (a generator) that writes frames into a sink and
 * yields where it needs a pause; the writer sends what the sink holds, waits for the socket to
 * drain, then for the pause, and asks for more. Frames are encoded straight into reusable byte
 * chunks as they are made, never as a list ahead of the socket: a stream costs its sink's chunk
 * and the generator's state, however long it is.
 * @see https://html.spec.whatwg.org/multipage/server-sent-events.html
 */

/** Pauses of a stream: before the first content frame, and before each frame after it. */
export interface Pacing {
  firstMs: number;
  betweenMs: number;
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A JSON string literal; text with nothing to escape (the usual case) skips JSON.stringify. */
export const jsonString = (text: string): string =>
  NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;

/**
 * A text cut into deltas, each a JSON string literal, encoded to UTF-8 back to back: piece `i`
 * is `bytes` from `ends[i - 1]` (0 for the first) to `ends[i]`. One buffer and one index per
 * text, not an object per piece.
 */
export interface Pieces {
  bytes: Buffer;
  ends: Uint32Array;
  /** Every piece as a frame of one template, back to back (`SseSink.pieces`), once made. */
  frames?: { template: FrameTemplate; bytes: Buffer };
}

/** The text as a single piece (a delta that is sent whole). */
export function onePiece(text: string): Pieces {
  const bytes = Buffer.from(jsonString(text));
  return { bytes, ends: Uint32Array.of(bytes.length) };
}

function encodePieces(texts: string[]): Pieces {
  const literals = texts.map(jsonString);
  const bytes = Buffer.from(literals.join(''));
  const ends = new Uint32Array(literals.length);
  let end = 0;
  for (let i = 0; i < literals.length; i++) {
    end += Buffer.byteLength(literals[i] as string);
    ends[i] = end;
  }
  return { bytes, ends };
}

/** Texts at most this long have their pieces remembered. */
const MEMO_TEXT_LIMIT = 32 * 1024;
/** Texts remembered at most, per pieces-per-delta size. */
const MEMO_ENTRIES = 128;
const pieceMemo = new Map<number, Lru<Pieces>>();

/**
 * `text` cut into deltas of `perPiece` tokens, ready for `SseSink.piece`. Replies repeat (a
 * scripted reply, the default reply to the same prompt), so the cut of a text up to 32 KiB is
 * remembered (bounded) instead of tokenized and encoded on every stream.
 */
export function jsonPieces(text: string, perPiece: number): Pieces {
  const cut = () => encodePieces(splitTokens(text, perPiece));
  if (text.length > MEMO_TEXT_LIMIT) return cut();
  let memo = pieceMemo.get(perPiece);
  if (!memo) {
    memo = new Lru(MEMO_ENTRIES);
    pieceMemo.set(perPiece, memo);
  }
  let pieces = memo.get(text);
  if (pieces === undefined) {
    pieces = cut();
    memo.set(text, pieces);
  }
  return pieces;
}

const MARKER = '@@sse-text@@';

/** The bytes around one text field of a frame, encoded once: frames differ only in the text. */
export interface FrameTemplate {
  head: Buffer;
  tail: Buffer;
}

/**
 * A template for frames that differ only in one text field (a token delta): the JSON of
 * `shape` is built once with a marker where the text goes. `shape(text)` builds the event's data.
 */
export function frameTemplate(event: string | undefined, shape: (text: string) => unknown) {
  const json = JSON.stringify(shape(MARKER));
  const at = json.indexOf(`"${MARKER}"`);
  const head = `${event === undefined ? '' : `event: ${event}\n`}data: ${json.slice(0, at)}`;
  const tail = `${json.slice(at + MARKER.length + 2)}\n\n`;
  return { head: Buffer.from(head), tail: Buffer.from(tail) } satisfies FrameTemplate;
}

/**
 * Bytes per chunk; a write of more than this goes out as its own buffer. Each chunk handed over
 * is a part of the socket's write, so large chunks mean few parts.
 */
const CHUNK = 64 * 1024;
/** Pending bytes copied out of the chunk on `take` rather than handed over with it. */
const SMALL = 2048;
const EMPTY = Buffer.alloc(0);

/** The most bytes of frames remembered with one text's pieces (`SseSink.pieces`). */
const FRAMES_LIMIT = 64 * 1024;

/** Pieces longer than this are copied with `set`, shorter ones byte by byte. */
const SHORT_COPY = 32;

/**
 * Chunks whose bytes the socket has written, for the next streams to fill: a chunk is an
 * allocation outside the heap, and making one per chunk of every stream drove the garbage
 * collector. At most CHUNKS_KEPT are kept.
 */
const CHUNKS_KEPT = 64;
const freeChunks: ArrayBuffer[] = [];
/** The chunks one sink gives back at its end, at most (see SseSink.chunks): FLUSH_AT's worth. */
export const SINK_CHUNKS_KEPT = 4;

const newChunk = (): Buffer => {
  const kept = freeChunks.pop();
  return kept === undefined ? Buffer.allocUnsafeSlow(CHUNK) : Buffer.from(kept, 0, CHUNK);
};

/**
 * Pending bytes past which a producer should yield, so the socket can take them (and say
 * whether it is full). Each flush is a write the client is woken for: a 256-token chat stream
 * (~150 KB) goes out in one write at this bound instead of three at 64 KiB, for a fifth less
 * CPU per stream. What a stream holds unsent stays bounded by it.
 */
const FLUSH_AT = 256 * 1024;

/** Where a producer writes its frames: encoded bytes, counted as events. */
export class SseSink {
  /** Events written so far. */
  events = 0;
  /** Events a fault lets through; past it events are dropped (`stopped`). */
  limit = Number.POSITIVE_INFINITY;
  /** The frame the first content is (`content`), for the stream's timeline. */
  contentFrame: number | undefined;
  /** Frames written outside the event count (the closing one, a fault's error). */
  private uncounted = 0;
  private chunk: Buffer = EMPTY;
  private used = 0;
  private done: Buffer[] = [];
  private held = 0;
  /**
   * The first chunks this sink filled, to give back once what was made of them is written.
   * Only the first SINK_CHUNKS_KEPT: a long stream's later chunks are left to the garbage
   * collector once the socket has written them, so a stream holds what is in flight, not all
   * it sent (an 800 MB answer held 800 MB until it ended).
   */
  private readonly chunks: ArrayBuffer[] = [];

  /** A fault has cut the stream: later events are dropped, the producer may stop. */
  get stopped(): boolean {
    return this.events >= this.limit;
  }

  /** Frames written so far, every kind. */
  get frames(): number {
    return this.events + this.uncounted;
  }

  /** The next frame is the stream's first content (a delta), for its timeline. */
  content(): void {
    this.contentFrame ??= this.events + this.uncounted;
  }

  /** Enough is pending that the producer should yield and let it go out. */
  get due(): boolean {
    return this.held + this.used >= FLUSH_AT;
  }

  /** An `event:` + `data:` frame (the messages API). */
  event(name: string, data: string): void {
    if (this.count()) this.text(`event: ${name}\ndata: ${data}\n\n`);
  }

  /** A `data:`-only frame (chat completions). */
  data(data: string): void {
    if (this.count()) this.text(`data: ${data}\n\n`);
  }

  /** A frame from a template, with piece `i` of `pieces` as its text. */
  piece(template: FrameTemplate, pieces: Pieces, i: number): void {
    if (!this.count()) return;
    const { head, tail } = template;
    const start = i === 0 ? 0 : (pieces.ends[i - 1] as number);
    const end = pieces.ends[i] as number;
    if (head.length + (end - start) + tail.length > this.chunk.length - this.used) {
      this.bytes(head);
      this.bytes(pieces.bytes.subarray(start, end));
      this.bytes(tail);
      return;
    }
    // Straight into the chunk: a delta is a few bytes, copied faster by hand than by a call.
    const chunk = this.chunk;
    let used = this.used;
    chunk.set(head, used);
    used += head.length;
    if (end - start > SHORT_COPY) {
      chunk.set(pieces.bytes.subarray(start, end), used);
      used += end - start;
    } else {
      const bytes = pieces.bytes;
      for (let k = start; k < end; k++) chunk[used++] = bytes[k] as number;
    }
    chunk.set(tail, used);
    this.used = used + tail.length;
  }

  /**
   * Every piece of `pieces` as a frame of `template`, for a stream that does not pause between
   * them. The frames are made once and remembered with the pieces (which `jsonPieces`
   * remembers per text), so a reply sent again costs one copy instead of a frame per piece.
   * False, having written nothing, when the frames are not to be made whole: a fault counts
   * the events one by one, and frames past FRAMES_LIMIT bytes are not kept.
   */
  pieces(template: FrameTemplate, pieces: Pieces): boolean {
    if (this.limit !== Number.POSITIVE_INFINITY) return false;
    let frames = pieces.frames;
    if (frames === undefined || frames.template !== template) {
      const { head, tail } = template;
      const { ends } = pieces;
      const size = ends.length * (head.length + tail.length) + pieces.bytes.length;
      if (size > FRAMES_LIMIT) return false;
      const bytes = Buffer.allocUnsafeSlow(size);
      let used = 0;
      let start = 0;
      for (let i = 0; i < ends.length; i++) {
        const end = ends[i] as number;
        used += head.copy(bytes, used);
        used += pieces.bytes.copy(bytes, used, start, end);
        used += tail.copy(bytes, used);
        start = end;
      }
      frames = { template, bytes };
      pieces.frames = frames;
    }
    this.events += pieces.ends.length;
    this.bytes(frames.bytes);
    return true;
  }

  /**
   * The stream's closing event (`message_stop`, `[DONE]`): never sent when a fault cuts the
   * stream, whose error takes its place.
   */
  closing(frame: string): void {
    if (this.limit === Number.POSITIVE_INFINITY) {
      this.uncounted++;
      this.text(frame);
    }
  }

  /** Bytes written outside the event count (a fault's error). */
  raw(frame: string): void {
    this.uncounted++;
    this.text(frame);
  }

  /**
   * Everything pending, in order; the sink starts over. A few pending bytes (a paced frame)
   * are copied out (from Node's buffer pool), so the chunk is kept for the next frame rather
   * than a new one allocated per write.
   */
  take(): Buffer[] {
    const out = this.done;
    if (this.used > 0) {
      if (this.used <= SMALL) {
        out.push(Buffer.from(this.chunk.subarray(0, this.used)));
      } else {
        out.push(this.chunk.subarray(0, this.used));
        this.chunk = EMPTY;
      }
      this.used = 0;
    }
    this.done = [];
    this.held = 0;
    return out;
  }

  private count(): boolean {
    if (this.events >= this.limit) return false;
    this.events++;
    return true;
  }

  private text(text: string): void {
    // A UTF-16 unit takes at most 3 UTF-8 bytes.
    if (text.length * 3 > CHUNK) {
      this.seal();
      this.push(Buffer.from(text));
      return;
    }
    if (text.length * 3 > this.chunk.length - this.used) this.seal();
    this.used += this.chunk.write(text, this.used);
  }

  private bytes(bytes: Buffer): void {
    if (bytes.length > this.chunk.length - this.used) this.seal();
    if (bytes.length > CHUNK) {
      this.push(bytes);
      return;
    }
    this.chunk.set(bytes, this.used);
    this.used += bytes.length;
  }

  /** Hands the filled part of the chunk over and starts a fresh chunk. */
  private seal(): void {
    if (this.used > 0) this.push(this.chunk.subarray(0, this.used));
    this.chunk = newChunk();
    if (this.chunks.length < SINK_CHUNKS_KEPT) this.chunks.push(this.chunk.buffer as ArrayBuffer);
    this.used = 0;
  }

  /**
   * Gives the chunk back while the stream pauses, when nothing is pending in it: a paced stream
   * then holds no chunk between frames (a thousand paced streams would otherwise hold a
   * thousand chunks). The current chunk was never handed to the socket (`take` copies a few
   * bytes out of it, or hands it over and starts from none), so it can be filled by another
   * stream at once.
   */
  rest(): void {
    if (this.used > 0 || this.chunk === EMPTY) return;
    const buffer = this.chunk.buffer as ArrayBuffer;
    const at = this.chunks.lastIndexOf(buffer);
    if (at !== -1) this.chunks.splice(at, 1);
    if (freeChunks.length < CHUNKS_KEPT) freeChunks.push(buffer);
    this.chunk = EMPTY;
  }

  /**
   * Gives this sink's chunks to the streams after it. Only once the socket has written every
   * byte taken from the sink (the response's `finish`): a chunk still queued must not be
   * filled again. The sink is not used after.
   */
  release(): void {
    for (const chunk of this.chunks) {
      if (freeChunks.length < CHUNKS_KEPT) freeChunks.push(chunk);
    }
    this.chunks.length = 0;
    this.chunk = EMPTY;
    this.used = 0;
  }

  private push(buffer: Buffer): void {
    this.done.push(buffer);
    this.held += buffer.length;
  }
}

/**
 * A stream: writes frames into the sink, yields a pause in ms where it needs one (0 to let
 * pending bytes go out when `sink.due`), and stops early when `sink.stopped`.
 */
export type SseProducer = (sink: SseSink) => Generator<number, void, undefined>;

export interface SseOptions {
  /** What must be done before the last bytes go (shared state: the journal entry stored). */
  beforeEnd?: () => Promise<void> | undefined;
  /** The pauses between frames. */
  wait: Wait;
  /** A monotonic clock in ms, for pause deadlines. */
  monotonic: () => number;
  setTimer: SetTimer;
  /** How long a write may wait for the client to read before the socket is dropped. */
  stallMs: number;
  /** A `stream_error` fault: events let through, then this error frame instead of the rest. */
  fault?: { afterEvents: number; error: string } | undefined;
  /** An `after_bytes` fault: the connection is cut once this many bytes were sent. */
  cutAfterBytes?: number | undefined;
  /** Keeps a copy of the first bytes sent (the journal shows them), and the writes' times. */
  capture?: StreamRecord;
}

/** What a stream's capture keeps (request.ts StreamCapture): bytes, and each write's time. */
export interface StreamRecord {
  add(bytes: Buffer): void;
  /** A write went out at `mono` (the monotonic clock), `frames` written so far. */
  wrote?(mono: number, frames: number): void;
  /** A fault cut the stream at `mono`. */
  cut?(kind: 'stream_error' | 'after_bytes', mono: number): void;
  contentFrame?: number | undefined;
}

/**
 * Bytes an unpaced stream writes before it lets other requests run: a reader as fast as the
 * writer (loopback) would otherwise take a 10 MB stream in one go, the process with it.
 */
export const YIELD_BYTES = 256 * 1024;

export interface SseResult {
  /** The stream was written to the end (false: the client left, or it stalled or failed). */
  completed: boolean;
  /** Bytes written to the socket. */
  bytes: number;
  /** Why it did not complete, when it did not. */
  reason?: 'client closed' | 'write stalled' | 'error' | 'cut by fault';
}

/** The headers a stream sets itself, in place of any the reply held. */
const STREAM_HEADERS = new Set(['content-type', 'cache-control', 'x-accel-buffering']);

/**
 * Takes over the response (keeping the headers set on it so far) and writes the stream: a
 * state machine driven by callbacks (the pause's timer, the socket's `drain`), with no promise
 * per frame (see SseStream). Pauses run on deadlines from the first pause, so they do not drift;
 * a socket that does not drain within `stallMs` is dropped; a client that leaves ends the stream
 * at once, pause or not; an error after the takeover destroys the socket (the response cannot be
 * an error any more) and is reported as `error`.
 */
export function sendSse(
  reply: FastifyReply,
  produce: SseProducer,
  options: SseOptions,
): Promise<SseResult> {
  const headers = streamHeaders(reply);
  reply.hijack();
  return new Promise<SseResult>((resolve) => {
    new SseStream(reply, options, resolve).start(produce, headers);
  });
}

/**
 * Headers the reply already holds (request id, rate limits) go out with the stream, as one
 * flat list of names and values, then the stream's own.
 */
function streamHeaders(reply: FastifyReply): OutgoingHttpHeader[] {
  const held = reply.getHeaders();
  const headers: OutgoingHttpHeader[] = [];
  for (const name in held) {
    const value = held[name];
    if (value !== undefined && !STREAM_HEADERS.has(name)) headers.push(name, value);
  }
  headers.push(
    'content-type',
    'text/event-stream; charset=utf-8',
    'cache-control',
    'no-cache',
    'x-accel-buffering',
    'no',
  );
  return headers;
}

/**
 * One stream's state machine: `run` steps the producer and writes its frames until it pauses
 * (`onPauseEnd` goes on), the socket fills (`onDrain`), it has written YIELD_BYTES (`onTurn`),
 * or it ends (`end`, then `finish`); `settle` resolves once, whatever ended it. The callbacks
 * are made once per stream, never per frame.
 */
class SseStream {
  private readonly res: FastifyReply['raw'];
  private readonly result: SseResult = { completed: false, bytes: 0 };
  private readonly sink = new SseSink();
  /** What an `after_bytes` fault still lets through. */
  private budget: number;
  private settled = false;
  private frames: Generator<number, void, undefined> | undefined;
  /** The pause the last step asked for, due once its frames are written. */
  private pause = 0;
  /** When the next frame is due, in whole ms of `monotonic` (-1 before the first pause). */
  private deadline = -1;
  private paused: Pending | undefined;
  private cancelStall: (() => void) | undefined;
  private drainOn: NodeJS.EventEmitter | undefined;
  /** Where the stream last let other work run (see YIELD_BYTES), and the turn it waits for. */
  private yieldedAt = 0;
  private turn: NodeJS.Immediate | undefined;

  constructor(
    private readonly reply: FastifyReply,
    private readonly options: SseOptions,
    private readonly resolve: (result: SseResult) => void,
  ) {
    this.res = reply.raw;
    this.budget = options.cutAfterBytes ?? Number.POSITIVE_INFINITY;
    if (options.fault) this.sink.limit = options.fault.afterEvents;
  }

  start(produce: SseProducer, headers: OutgoingHttpHeader[]): void {
    this.res.once('close', this.onClose);
    try {
      this.res.writeHead(200, headers);
      holdOpen(this.res);
      this.frames = produce(this.sink);
    } catch (err) {
      this.fail(err);
      return;
    }
    this.run();
  }

  private settle(reason?: SseResult['reason']): void {
    if (this.settled) return;
    this.settled = true;
    if (reason !== undefined) this.result.reason ??= reason;
    const capture = this.options.capture;
    if (capture) capture.contentFrame = this.sink.contentFrame;
    // A pause under way must not keep the stream (its chunk, its producer) until it ends.
    this.paused?.cancel();
    if (this.turn) clearImmediate(this.turn);
    this.cancelStall?.();
    this.drainOn?.off('drain', this.onDrain);
    this.res.off('close', this.onClose);
    this.resolve(this.result);
  }

  private readonly onClose = () => this.settle('client closed');

  private readonly fail = (err: unknown): void => {
    this.result.reason = 'error';
    this.reply.log.error(
      { ...reqIdField(this.reply.request), err },
      'stream failed after it started',
    );
    this.res.destroy();
    this.settle();
  };

  /** Copies what fits of the parts about to be sent into the capture. */
  private keep(parts: Buffer[]): void {
    const capture = this.options.capture;
    if (capture) for (const part of parts) capture.add(part);
  }

  /**
   * Parts within an `after_bytes` fault's budget: the rest of a part that crosses it is
   * dropped, and the connection is ended after what was let through (undefined then).
   */
  private withinBudget(parts: Buffer[]): Buffer[] | undefined {
    if (this.budget === Number.POSITIVE_INFINITY) return parts;
    const kept: Buffer[] = [];
    for (const part of parts) {
      if (part.length <= this.budget) {
        kept.push(part);
        this.budget -= part.length;
        continue;
      }
      if (this.budget > 0) kept.push(part.subarray(0, this.budget));
      this.keep(kept);
      for (const piece of kept) {
        this.res.write(piece);
        this.result.bytes += piece.length;
      }
      const capture = this.options.capture;
      if (capture) capture.contentFrame = this.sink.contentFrame;
      if (capture?.cut) {
        const mono = this.options.monotonic();
        capture.wrote?.(mono, this.sink.frames);
        capture.cut('after_bytes', mono);
      }
      this.result.reason = 'cut by fault';
      this.res.socket?.end();
      return undefined;
    }
    return kept;
  }

  /**
   * Writes what the sink holds. False when the stream cannot go on now: it is over (settled),
   * or the socket is full, and `onDrain` goes on once it drains.
   */
  private flush(): boolean {
    const parts = this.withinBudget(this.sink.take());
    if (parts === undefined) {
      this.settle();
      return false;
    }
    if (parts.length === 0) return true;
    this.keep(parts);
    // The write's time: one clock reading and two numbers per write, for the timeline.
    this.options.capture?.wrote?.(this.options.monotonic(), this.sink.frames);
    const res = this.res;
    let ok = true;
    if (parts.length === 1) {
      const part = parts[0] as Buffer;
      ok = res.write(part);
      this.result.bytes += part.length;
    } else {
      res.cork();
      for (const part of parts) {
        ok = res.write(part);
        this.result.bytes += part.length;
      }
      res.uncork();
    }
    // Wait for the socket itself: Node 24 does not always pass its 'drain' on to a response
    // written while corked.
    const socket = res.socket;
    if (ok || !socket?.writableNeedDrain) return true;
    this.drainOn = socket;
    socket.once('drain', this.onDrain);
    this.cancelStall = this.options.setTimer(this.onStall, this.options.stallMs);
    return false;
  }

  private readonly onDrain = (): void => {
    this.cancelStall?.();
    this.cancelStall = undefined;
    this.drainOn = undefined;
    if (!this.settled) this.run();
  };

  private readonly onStall = (): void => {
    this.cancelStall = undefined;
    this.drainOn?.off('drain', this.onDrain);
    this.drainOn = undefined;
    this.result.reason = 'write stalled';
    this.res.destroy();
    this.settle();
  };

  private readonly onTurn = (): void => {
    this.turn = undefined;
    if (!this.settled) this.run();
  };

  private readonly onPauseEnd = (): void => {
    this.paused = undefined;
    if (!this.settled) this.run();
  };

  /** Steps the producer, writing its frames, until it pauses, the socket fills, or it ends. */
  private run(): void {
    try {
      for (;;) {
        if (this.pause > 0) {
          this.startPause();
          return;
        }
        const step = (this.frames as Generator<number, void, undefined>).next();
        if (step.done) {
          this.end();
          return;
        }
        this.pause = step.value;
        if (!this.flush()) return;
        if (this.result.bytes - this.yieldedAt > YIELD_BYTES) {
          // A socket that takes everything would let one large stream hold the process.
          this.yieldedAt = this.result.bytes;
          this.turn = setImmediate(this.onTurn);
          return;
        }
      }
    } catch (err) {
      this.fail(err);
    }
  }

  /** Waits until the pause asked for is due, on deadlines from the first pause. */
  private startPause(): void {
    const ms = this.pause;
    this.pause = 0;
    const now = this.options.monotonic();
    this.deadline = (this.deadline < 0 ? Math.round(now) : this.deadline) + ms;
    this.sink.rest();
    this.paused = this.options.wait(Math.max(0, this.deadline - now), this.onPauseEnd);
  }

  /** The last frames (and a fault's error) go out with the end of the response. */
  private end(): void {
    const { options } = this;
    if (options.fault) this.sink.raw(options.fault.error);
    const parts = this.withinBudget(this.sink.take());
    if (parts === undefined) {
      this.settle();
      return;
    }
    this.keep(parts);
    // (set before the end: the journal may take the capture as the response finishes)
    const capture = options.capture;
    if (capture) capture.contentFrame = this.sink.contentFrame;
    if (capture?.wrote && parts.length > 0) {
      const mono = options.monotonic();
      capture.wrote(mono, this.sink.frames);
      if (options.fault) capture.cut?.('stream_error', mono);
    }
    for (const part of parts) this.result.bytes += part.length;
    const gate = options.beforeEnd?.();
    if (gate === undefined) this.finish(parts);
    else gate.then(() => this.finish(parts), this.fail);
  }

  private finish(parts: Buffer[]): void {
    if (this.settled) return;
    const res = this.res;
    // Once every byte is written ('finish', which a failed write never emits), the sink's
    // chunks can be filled again.
    res.once('finish', () => this.sink.release());
    // The last parts and the end of the body in one socket write: Node holds the writes of
    // this tick until `end` flushes them with the closing chunk. (Uncorking before `end`
    // would send the closing chunk in a write, and wake the client, of its own; ending while
    // the response is corked loses the parts on Node 24.)
    const last = parts.length - 1;
    for (let i = 0; i < last; i++) res.write(parts[i]);
    if (last >= 0) res.end(parts[last]);
    else res.end();
    this.result.completed = true;
    this.settle();
  }
}
