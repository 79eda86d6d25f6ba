import { isUtf8 } from 'node:buffer';
import type { Redis } from 'ioredis';
import type { JournalLog, StoredEntry } from '../harness/journal.js';
import type { StateStore } from './redis.js';

/**
 * An entry as the stream holds it: its fields as JSON (`m`, first: the session is read from it),
 * then the request body (`b`) and what was answered (`r`: its text when it is UTF-8, a JSON
 * answer or most streams; `x`: base64, a stream cut inside a character), each as it is, so that
 * the large parts are not escaped into the JSON and are read back as the bytes they were.
 */
function encode(entry: StoredEntry): Array<string> {
  const { body, response, ...meta } = entry;
  const fields = ['m', JSON.stringify(meta)];
  if (body !== undefined) fields.push('b', body);
  if (typeof response === 'string') fields.push('s', response);
  else if (response !== undefined) {
    if (isUtf8(response)) fields.push('r', response.toString('utf8'));
    else fields.push('x', response.toString('base64'));
  }
  return fields;
}

function decode(fields: string[]): StoredEntry {
  const entry = JSON.parse(fields[1] as string) as StoredEntry;
  entry.body = undefined;
  entry.response = undefined;
  for (let i = 2; i < fields.length; i += 2) {
    const value = fields[i + 1] as string;
    switch (fields[i]) {
      case 'b':
        entry.body = value;
        break;
      case 's':
        entry.response = value;
        break;
      case 'r':
        entry.response = Buffer.from(value, 'utf8');
        break;
      case 'x':
        entry.response = Buffer.from(value, 'base64');
        break;
    }
  }
  return entry;
}

/** KEYS: stream. ARGV: session. Deletes the session's entries; the others keep their order. */
const CLEAR_SESSION = `
local removed = 0
for _, item in ipairs(redis.call('XRANGE', KEYS[1], '-', '+')) do
  if cjson.decode(item[2][2]).session == ARGV[1] then
    redis.call('XDEL', KEYS[1], item[1])
    removed = removed + 1
  end
end
return removed
`;

/**
 * KEYS: stream. ARGV: limit, then per entry its field count and fields. Appends the entries in
 * their order, then trims the stream to the limit (exact): a batch is one command.
 */
const APPEND = `
local i = 2
while i <= #ARGV do
  local n = tonumber(ARGV[i])
  redis.call('XADD', KEYS[1], '*', unpack(ARGV, i + 1, i + n))
  i = i + n + 1
end
redis.call('XTRIM', KEYS[1], 'MAXLEN', ARGV[1])
`;

/** The most entries one append command carries (a script blocks the store while it runs). */
const BATCH = 128;

interface Pending {
  fields: string[];
  stored: () => void;
  failed: (err: unknown) => void;
}

/** How long one blocking read of a follower waits before it reads again (ms). */
const FOLLOW_BLOCK_MS = 1000;

/**
 * The journal as a capped Redis stream (trimmed to JOURNAL_LIMIT entries, exactly): one entry
 * per request, stored before the response ends, so every replica lists the same
 * entries in the same order (the stream's ids) once a response has been received. Waits and
 * live journals follow it with one blocking read (XREAD BLOCK) per process, on a connection of
 * its own, while anyone waits or watches.
 * @see https://redis.io/docs/latest/develop/data-types/streams/
 */
export class RedisJournalLog implements JournalLog {
  private readonly key: string;
  private pending: Pending[] = [];
  private listeners = new Set<(entry: StoredEntry) => void>();
  private reader: Redis | undefined;
  private running: Promise<void> | undefined;
  private closed = false;

  constructor(
    private readonly store: StateStore,
    private readonly limit: number,
  ) {
    this.key = store.key('journal');
  }

  /**
   * Stored with the entries of every other request that ends in the same turn of the event
   * loop, in one script of the store's next batch (sent once the turn's I/O has been read): a
   * request waits no longer than its own write would, and the store and this process pay one
   * command per batch instead of one per request.
   */
  append(entry: StoredEntry): Promise<void> {
    return new Promise((stored, failed) => {
      this.pending.push({ fields: encode(entry), stored, failed });
      if (this.pending.length === 1) this.store.beforeSend(() => this.flush());
    });
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    for (let from = 0; from < batch.length; from += BATCH) {
      const part = batch.slice(from, from + BATCH);
      const args: Array<string | number> = [this.limit];
      for (const { fields } of part) args.push(fields.length, ...fields);
      this.store.script(APPEND, 1, this.key, ...args).then(
        () => {
          for (const p of part) p.stored();
        },
        (err: unknown) => {
          for (const p of part) p.failed(err);
        },
      );
    }
  }

  async entries(): Promise<StoredEntry[]> {
    const items = await this.store.redis.xrange(this.key, '-', '+');
    return items.map(([, fields]) => decode(fields));
  }

  async clear(session?: string): Promise<void> {
    if (session === undefined) await this.store.redis.del(this.key);
    else await this.store.script(CLEAR_SESSION, 1, this.key, session);
  }

  follow(arrived: (entry: StoredEntry) => void): { stop: () => void; ready: Promise<void> } {
    this.listeners.add(arrived);
    if (!this.running) {
      let started!: () => void;
      this.running = new Promise((resolve) => {
        started = resolve;
      });
      void this.run(started);
    }
    return {
      stop: () => {
        this.listeners.delete(arrived);
      },
      ready: this.running,
    };
  }

  close(): void {
    this.closed = true;
    this.listeners.clear();
    this.reader?.disconnect();
    this.reader = undefined;
  }

  /** Reads new entries while anyone listens; a failed read is tried again after a pause. */
  private async run(started: () => void): Promise<void> {
    this.reader ??= this.store.duplicate();
    this.reader.on('error', () => {});
    // From the newest entry on (`started` once that is known): a wait reads what is held
    // itself after that, so an entry is either read by it or heard here.
    let last = '0-0';
    try {
      const newest = await this.reader.xrevrange(this.key, '+', '-', 'COUNT', 1);
      last = newest[0]?.[0] ?? '0-0';
    } catch {
      // (the store is down: from the start of the stream, once it is back)
    }
    started();
    try {
      while (this.listeners.size > 0 && !this.closed) {
        let read: Awaited<ReturnType<Redis['xread']>>;
        try {
          read = await this.reader.xread('BLOCK', FOLLOW_BLOCK_MS, 'STREAMS', this.key, last);
        } catch {
          if (this.closed) break;
          await new Promise((resolve) => setTimeout(resolve, 200));
          continue;
        }
        for (const [, items] of read ?? []) {
          for (const [id, fields] of items) {
            last = id;
            const entry = decode(fields);
            for (const listener of [...this.listeners]) listener(entry);
            // One entry at a time, as a memory journal hears them: a live journal's socket
            // gets its turn to take each, so a batch read at once is not a client that
            // stopped reading (JOURNAL_STREAM_MAX_BUFFERED).
            await new Promise((resolve) => setImmediate(resolve));
          }
        }
      }
    } finally {
      this.running = undefined;
      this.reader?.disconnect();
      this.reader = undefined;
    }
  }
}
