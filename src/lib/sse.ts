import type { FastifyReply } from 'fastify';
import type { Sleep } from '../deps.js';

/** Pauses of a stream: before the first content frame, and before each frame after it. */
export interface Pacing {
  firstMs: number;
  betweenMs: number;
}

/** One server-sent event, with the pause to take before writing it. */
export interface SseFrame {
  event?: string;
  data: string;
  delayMs?: number;
}

export const encodeFrame = (frame: SseFrame): string =>
  frame.event === undefined
    ? `data: ${frame.data}\n\n`
    : `event: ${frame.event}\ndata: ${frame.data}\n\n`;

export interface SseOptions {
  headers: Record<string, string>;
  sleep: Sleep;
}

/**
 * The one SSE writer: takes over the response, writes the frames in order (frames with no delay
 * are batched into a single write), and stops as soon as the client goes away.
 * Resolves true when the stream was written to the end, false when the client left first.
 */
export async function sendSse(
  reply: FastifyReply,
  frames: Iterable<SseFrame>,
  options: SseOptions,
): Promise<boolean> {
  reply.hijack();
  const res = reply.raw;
  res.writeHead(200, {
    'content-type': 'text/event-stream; charset=utf-8',
    'cache-control': 'no-cache',
    'x-accel-buffering': 'no',
    ...options.headers,
  });
  const gone = new AbortController();
  const onClose = () => {
    if (!res.writableFinished) gone.abort();
  };
  res.once('close', onClose);
  let pending = '';
  try {
    for (const frame of frames) {
      if (frame.delayMs) {
        if (pending) {
          res.write(pending);
          pending = '';
        }
        await options.sleep(frame.delayMs, gone.signal);
      }
      if (gone.signal.aborted) return false;
      pending += encodeFrame(frame);
    }
    res.end(pending);
    return true;
  } catch (err) {
    if (gone.signal.aborted) return false;
    throw err;
  } finally {
    res.off('close', onClose);
  }
}
