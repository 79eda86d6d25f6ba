import pino from 'pino';

/** Bytes of log lines held before they are written (a busy server writes them in batches). */
export const LOG_BATCH_BYTES = 4096;
/** The longest a line waits to be written when the server is not busy. */
export const LOG_FLUSH_MS = 100;

let stdout: pino.DestinationStream | undefined;

/**
 * Where JSON log lines go when no stream is given: stdout, written synchronously in batches of
 * up to LOG_BATCH_BYTES, and at most LOG_FLUSH_MS after a line came (and at exit): one write
 * per batch instead of one per request line, each a system call that cost about as much as
 * the line itself. One per process, however many apps it builds.
 * @see https://github.com/pinojs/pino/blob/main/docs/api.md#pino-destination
 */
export function stdoutDestination(): pino.DestinationStream {
  if (stdout) return stdout;
  const boom = pino.destination({ dest: 1, sync: true, minLength: LOG_BATCH_BYTES });
  const flush = () => {
    try {
      boom.flushSync();
    } catch {
      // (stdout gone: nothing to write to)
    }
  };
  setInterval(flush, LOG_FLUSH_MS).unref();
  process.once('exit', flush);
  stdout = boom;
  return boom;
}
