import type { FastifyReply, FastifyRequest } from 'fastify';
import type { SseResult } from './sse.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** The group that took the request, for what happens after its hooks (an aborted stream). */
    gateway: GatewayRuntime | undefined;
  }
}

/**
 * What a group offers a request after its hooks have run (harness/pipeline.ts makes it, and
 * adds what the harness's features read of it).
 */
export interface GatewayRuntime {
  /** Journals a response that ended (called once per request, with the request log line). */
  completed(request: FastifyRequest, reply: FastifyReply): void;
  /** Journals and logs a stream that did not end: the client left, stopped reading, or it failed. */
  streamAborted(request: FastifyRequest, reply: FastifyReply, result: SseResult): void;
  /** A stream ended after `seconds` of wall time (for the metrics). */
  streamEnded(seconds: number, completed: boolean): void;
  /** A stream of this request began (`by` 1) or ended (-1), for the stats' open streams. */
  streamOpen(request: FastifyRequest, by: 1 | -1): void;
  /**
   * Shared state: journals a stream about to end, before its last bytes go (so its entry is
   * stored once the client has the whole answer). Undefined in memory.
   */
  beforeEnd?(request: FastifyRequest, reply: FastifyReply): Promise<void>;
}
