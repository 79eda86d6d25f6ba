import type { Server } from 'node:http';
import type { SetTimer } from './clock.js';

/**
 * A graceful stop, as SIGTERM asks for: stop taking connections, let the requests and streams
 * in progress finish and the queued work (callbacks) go out, up to a deadline; then report what
 * had to be cut, so that it can be logged. State is in memory: whatever is left is lost.
 */

export interface DrainReport {
  /** Connections still open at the deadline (streams cut short). */
  connectionsCut: number;
  /** Work still queued at the deadline, as its owner describes it (callbacks not delivered). */
  left: string[];
  /** How long the drain took, in ms of wall time. */
  ms: number;
}

export interface Drainable {
  /** Resolves once the queued work is done (or can only be retried later). */
  idle(): Promise<void>;
  /** What is still queued, one line each. */
  pending(): string[];
}

export async function drain(
  server: Server,
  work: Drainable[],
  graceMs: number,
  clock: { monotonic: () => number; setTimer: SetTimer },
): Promise<DrainReport> {
  const { monotonic } = clock;
  const began = monotonic();
  const stopped = server.listening
    ? new Promise<void>((resolve) => server.close(() => resolve()))
    : Promise.resolve();
  // Idle keep-alive sockets close now; busy ones as soon as their response ends.
  server.keepAliveTimeout = 1;
  server.closeIdleConnections();
  let cancel = () => {};
  const deadline = new Promise<'deadline'>((resolve) => {
    cancel = clock.setTimer(() => resolve('deadline'), graceMs);
  });
  const done = Promise.all([stopped, ...work.map((w) => w.idle())]).then(() => 'done' as const);
  const outcome = await Promise.race([done, deadline]);
  cancel();
  const open =
    outcome === 'done'
      ? 0
      : await new Promise<number>((resolve) =>
          server.getConnections((err, count) => resolve(err ? 0 : count)),
        );
  return {
    connectionsCut: open,
    left: work.flatMap((w) => w.pending()),
    ms: Math.round(monotonic() - began),
  };
}
