import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Sleep } from '../platform/clock.js';
import { GatewayError } from '../platform/errors.js';
import type { StreamFault } from '../platform/request.js';
import { type Pacing, type SseFrame, sendSse } from '../platform/sse.js';

/** The pauses of text streams, from the settings. */
export interface PacingSettings {
  /** Before the first content frame. */
  ttftMs: number;
  /** Before each later frame. */
  chunkDelayMs: number;
}

export const STREAM_DELAY_HEADER = 'x-emulator-stream-delay-ms';

/** The stream's pauses: configured, or the chunk delay one request asks for by header. */
export function streamPacing(request: FastifyRequest, settings: PacingSettings): Pacing {
  const header = request.headers[STREAM_DELAY_HEADER];
  const firstMs = settings.ttftMs;
  if (header === undefined) return { firstMs, betweenMs: settings.chunkDelayMs };
  if (typeof header !== 'string' || !/^\d{1,5}$/.test(header) || Number(header) > 60_000) {
    throw new GatewayError(
      400,
      `${STREAM_DELAY_HEADER} must be a whole number of milliseconds from 0 to 60000`,
    );
  }
  return { firstMs, betweenMs: Number(header) };
}

/**
 * Cuts a stream for a `stream_error` fault: the first `afterEvents` events (never the stream's
 * closing one, `message_stop` or `[DONE]`), then `error`. `frames` must hold one event each.
 */
export function cutStream<T>(frames: T[], fault: StreamFault, error: T): T[] {
  return [...frames.slice(0, Math.min(fault.afterEvents, frames.length - 1)), error];
}

export interface TextStream {
  request: FastifyRequest;
  reply: FastifyReply;
  sleep: Sleep;
  /** The stream's frames; `batch` merges unpaced content frames (off when a fault counts events). */
  frames(batch: boolean): SseFrame[];
  /** The group's error event for a `stream_error` fault of this status. */
  errorFrame(status: number): SseFrame;
}

/**
 * The one way chat and messages stream: the frames, cut by the request's `stream_error` fault
 * if it has one, written by the SSE writer.
 */
export async function sendTextStream(stream: TextStream): Promise<FastifyReply> {
  const fault = stream.request.streamFault;
  const frames = fault
    ? cutStream(stream.frames(false), fault, stream.errorFrame(fault.status))
    : stream.frames(true);
  await sendSse(stream.reply, frames, { sleep: stream.sleep });
  return stream.reply;
}
