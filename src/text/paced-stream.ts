import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SetTimer, Wait } from '../platform/clock.js';
import { GatewayError } from '../platform/errors.js';
import { StreamCapture } from '../platform/request.js';
import { type Pacing, type SseProducer, sendSse } from '../platform/sse.js';

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

/** What a text group needs to stream: time, the settings, and the pause between frames. */
export interface Streaming {
  wait: Wait;
  monotonic: () => number;
  setTimer: SetTimer;
  /** How long a write may wait for the client to read before the socket is dropped. */
  stallMs: number;
  pacing: PacingSettings;
}

export interface TextStream {
  request: FastifyRequest;
  reply: FastifyReply;
  streaming: Streaming;
  /** The stream's frames. */
  produce: SseProducer;
  /** The group's error frame for a `stream_error` fault of this status. */
  errorFrame(status: number): string;
}

/**
 * The one way chat and messages stream: the producer, cut by the request's `stream_error`
 * fault if it has one, written by the SSE writer; a stream that did not end (the client left,
 * stopped reading, or it failed) is journaled and logged as aborted.
 */
export async function sendTextStream(stream: TextStream): Promise<FastifyReply> {
  const { request, reply, streaming } = stream;
  const fault = request.streamFault;
  const started = streaming.monotonic();
  const capture = new StreamCapture(request.arrivedMono);
  request.streamCapture = capture;
  request.gateway?.streamOpen(request, 1);
  const result = await sendSse(reply, stream.produce, {
    capture,
    wait: streaming.wait,
    monotonic: streaming.monotonic,
    setTimer: streaming.setTimer,
    stallMs: streaming.stallMs,
    fault:
      fault === undefined || 'afterBytes' in fault
        ? undefined
        : { afterEvents: fault.afterEvents, error: stream.errorFrame(fault.status) },
    cutAfterBytes: fault !== undefined && 'afterBytes' in fault ? fault.afterBytes : undefined,
    beforeEnd: () => request.gateway?.beforeEnd?.(request, reply),
  });
  request.gateway?.streamOpen(request, -1);
  if (!result.completed) request.gateway?.streamAborted(request, reply, result);
  request.gateway?.streamEnded((streaming.monotonic() - started) / 1000, result.completed);
  return reply;
}
