import type { OutgoingHttpHeaders } from 'node:http';
import type { FastifyReply } from 'fastify';
import type { Sleep } from './clock.js';

/** Pauses of a stream: before the first content frame, and before each frame after it. */
export interface Pacing {
  firstMs: number;
  betweenMs: number;
}

/** One server-sent event, encoded, with the pause to take before writing it. */
export interface SseFrame {
  text: string;
  delayMs: number;
}

/** An `event:` + `data:` frame (the messages API). */
export const sseEvent = (event: string, data: string, delayMs = 0): SseFrame => ({
  text: `event: ${event}\ndata: ${data}\n\n`,
  delayMs,
});

/** A `data:`-only frame (chat completions). */
export const sseData = (data: string, delayMs = 0): SseFrame => ({
  text: `data: ${data}\n\n`,
  delayMs,
});

// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters JSON escapes
const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;

/** A JSON string literal; text with nothing to escape (the usual case) skips JSON.stringify. */
export const jsonString = (text: string): string =>
  NEEDS_ESCAPE.test(text) ? JSON.stringify(text) : `"${text}"`;

const MARKER = '@@sse-text@@';

/**
 * Frames that differ only in one text field (a token delta), encoded from a template: the JSON
 * of `shape` is built once, with the text spliced in per frame; `many` encodes a run of frames
 * as one. `shape(text)` builds the event's data object around the text.
 */
export function frameTemplate(event: string | undefined, shape: (text: string) => unknown) {
  const json = JSON.stringify(shape(MARKER));
  const at = json.indexOf(`"${MARKER}"`);
  const head = `${event === undefined ? '' : `event: ${event}\n`}data: ${json.slice(0, at)}`;
  const tail = `${json.slice(at + MARKER.length + 2)}\n\n`;
  return {
    one: (text: string, delayMs = 0): SseFrame => ({
      text: head + jsonString(text) + tail,
      delayMs,
    }),
    many(texts: readonly string[]): SseFrame {
      // Appending builds a rope that is flattened once when written: far cheaper than join().
      let text = '';
      for (const t of texts) text += head + jsonString(t) + tail;
      return { text, delayMs: 0 };
    },
  };
}

/**
 * The frames of a run of token deltas: the first waits `firstMs`, each later one `betweenMs`;
 * with no pause between them (and `batch`) the later ones go out as one frame.
 */
export function deltaFrames(
  pieces: readonly string[],
  template: ReturnType<typeof frameTemplate>,
  pacing: Pacing,
  batch = true,
): SseFrame[] {
  if (pieces.length === 0) return [];
  const first = template.one(pieces[0] as string, pacing.firstMs);
  if (pieces.length === 1) return [first];
  if (batch && pacing.betweenMs === 0) return [first, template.many(pieces.slice(1))];
  return [first, ...pieces.slice(1).map((piece) => template.one(piece, pacing.betweenMs))];
}

export interface SseOptions {
  sleep: Sleep;
}

/**
 * The one SSE writer: takes over the response (keeping the headers set on it so far) and writes
 * the frames in order. Frames with no
 * delay are batched into one write; before a delay it flushes, then sleeps until the delay is
 * over or the client goes away, whichever comes first.
 * Resolves true when the stream was written to the end, false when the client left first.
 */
export async function sendSse(
  reply: FastifyReply,
  frames: Iterable<SseFrame>,
  options: SseOptions,
): Promise<boolean> {
  // Headers the reply already holds (request id, rate limits) go out with the stream.
  const headers: OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(reply.getHeaders())) {
    if (value !== undefined) headers[name] = value;
  }
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    ...headers,
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
  });
  let gone: AbortController | undefined;
  const onClose = () => {
    if (!res.writableFinished) gone?.abort();
  };
  let pending = '';
  try {
    for (const frame of frames) {
      if (frame.delayMs > 0) {
        if (!gone) {
          gone = new AbortController();
          res.once('close', onClose);
        }
        if (pending) {
          res.write(pending);
          pending = '';
        }
        if (res.destroyed) return false;
        await options.sleep(frame.delayMs, gone.signal);
        if (gone.signal.aborted) return false;
      }
      pending += frame.text;
    }
    if (res.destroyed) return false;
    res.end(pending);
    return true;
  } catch (err) {
    if (gone?.signal.aborted) return false;
    throw err;
  } finally {
    res.off('close', onClose);
  }
}
