import pino from 'pino';

/** Characters of log lines held before they are written (a busy server writes them in batches). */
export const LOG_BATCH_BYTES = 4096;
/** The longest a line waits to be written when the server is not busy. */
export const LOG_FLUSH_MS = 100;

let stdout: pino.DestinationStream | undefined;

/**
 * Where JSON log lines go when no stream is given: stdout, written synchronously in batches of
 * about LOG_BATCH_BYTES, and at most LOG_FLUSH_MS after a line came (and at exit): one write
 * per batch instead of one per request line, each a system call that cost about as much as
 * the line itself. One per process, however many apps it builds.
 *
 * The lines are held here, as the strings pino made, and handed to pino's own writer (which
 * deals with partial writes and a full pipe) one batch at a time: its own `minLength` batching
 * measured the batch's byte length again on every line (4 µs a request in profiles).
 * @see https://github.com/pinojs/pino/blob/main/docs/api.md#pino-destination
 */
export function stdoutDestination(): pino.DestinationStream {
  if (stdout) return stdout;
  const boom = pino.destination({ dest: 1, sync: true });
  let held: string[] = [];
  let heldChars = 0;
  const flush = () => {
    if (heldChars === 0) return;
    const text = held.length === 1 ? (held[0] as string) : held.join('');
    held = [];
    heldChars = 0;
    try {
      boom.write(text);
    } catch {
      // (stdout gone: nothing to write to)
    }
  };
  setInterval(flush, LOG_FLUSH_MS).unref();
  process.once('exit', flush);
  stdout = {
    write(line: string) {
      held.push(line);
      heldChars += line.length;
      if (heldChars >= LOG_BATCH_BYTES) flush();
      return true;
    },
  };
  return stdout;
}

/** What one request's "request completed" line says. */
export type RequestLine = (
  reqId: string,
  method: string,
  url: string,
  statusCode: number,
  responseTime: number,
) => void;

/**
 * Writes the info line "request completed" of `logger` (a pino logger with no log formatter,
 * mixin, message prefix, nested key or write hook: the one buildApp makes) as pino would, byte for byte (its
 * level, time and bindings come from the logger itself), without pino's generic path: the walk
 * of a fields object, the key escaping and the serializer and redaction lookups cost about
 * 3 µs a request in profiles, for a line whose fields are always the same five.
 * `undefined` when the logger is not such a logger: the caller logs through pino.
 * @see https://github.com/pinojs/pino/blob/main/lib/tools.js (asJson)
 */
export function requestLineOf(logger: object): RequestLine | undefined {
  const { lsCacheSym, timeSym, chindingsSym, streamSym, endSym, messageKeySym } = pino.symbols;
  const { needsMetadataGsym, mixinSym, formattersSym, hooksSym, nestedKeySym } = pino.symbols;
  // (in pino's symbols, not in its types)
  const { msgPrefixSym } = pino.symbols as unknown as Record<string, symbol>;
  const own = logger as unknown as Record<symbol, unknown>;
  const levels = own[lsCacheSym] as Record<number, string> | undefined;
  const time = own[timeSym] as (() => string) | undefined;
  const stream = own[streamSym] as pino.DestinationStream | undefined;
  const { levels: names, isLevelEnabled } = logger as Partial<pino.Logger>;
  const info = names?.values?.info;
  if (
    levels === undefined ||
    info === undefined ||
    typeof levels[info] !== 'string' ||
    typeof time !== 'function' ||
    typeof stream?.write !== 'function' ||
    (stream as unknown as Record<symbol, unknown>)[needsMetadataGsym] === true ||
    own[endSym] !== '}\n' ||
    own[messageKeySym] !== 'msg' ||
    own[mixinSym] ||
    (msgPrefixSym && own[msgPrefixSym]) ||
    own[nestedKeySym] ||
    (own[formattersSym] as { log?: unknown } | undefined)?.log ||
    (own[hooksSym] as { streamWrite?: unknown } | undefined)?.streamWrite ||
    isLevelEnabled?.call(logger, 'info') !== true
  ) {
    return undefined;
  }
  const head = levels[info] as string;
  return (reqId, method, url, statusCode, responseTime) => {
    stream.write(
      `${head}${time()}${own[chindingsSym] as string},"reqId":${JSON.stringify(reqId)},"method":${JSON.stringify(method)},"url":${JSON.stringify(url)},"statusCode":${statusCode},"responseTime":${Number.isFinite(responseTime) ? responseTime : null},"msg":"request completed"}\n`,
    );
  };
}
