import { isUtf8 } from 'node:buffer';
import type { Redis } from 'ioredis';
import type { JournalLog, StoredEntry } from '../platform/journal.js';
import type { StateStore } from './redis.js';

/**
 * An entry as the stream holds it: JSON, with what was answered as its text when it is UTF-8
 * (a JSON answer, most streams) or as base64 (a stream cut inside a character), and a mark of
 * which, so that it is read back as the bytes it was.
 */
function encode(entry: StoredEntry): string {
  const { response } = entry;
  if (!Buffer.isBuffer(response)) return JSON.stringify(entry);
  return isUtf8(response)
    ? JSON.stringify({ ...entry, response: response.toString('utf8'), bytes: 'utf8' })
    : JSON.stringify({ ...entry, response: response.toString('base64'), bytes: 'base64' });
}

function decode(json: string): StoredEntry {
  const parsed = JSON.parse(json) as StoredEntry & { bytes?: 'utf8' | 'base64' };
  if (parsed.bytes === undefined) return parsed;
  const { bytes, ...entry } = parsed;
  return { ...entry, response: Buffer.from(parsed.response as string, bytes) };
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

/** How long one blocking read of a follower waits before it reads again (ms). */
const FOLLOW_BLOCK_MS = 1000;

/**
 * The journal as a capped Redis stream (XADD MAXLEN = JOURNAL_LIMIT, exact): one entry per
 * request, written in one command before the response ends, so every replica lists the same
 * entries in the same order (the stream's ids) once a response has been received. Waits and
 * live journals follow it with one blocking read (XREAD BLOCK) per process, on a connection of
 * its own, while anyone waits or watches.
 * @see https://redis.io/docs/latest/develop/data-types/streams/
 */
export class RedisJournalLog implements JournalLog {
  private readonly key: string;
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

  async append(entry: StoredEntry): Promise<void> {
    await this.store.redis.xadd(this.key, 'MAXLEN', this.limit, '*', 'e', encode(entry));
  }

  async entries(): Promise<StoredEntry[]> {
    const items = await this.store.redis.xrange(this.key, '-', '+');
    return items.map(([, fields]) => decode(fields[1] as string));
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
            const entry = decode(fields[1] as string);
            for (const listener of [...this.listeners]) listener(entry);
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
