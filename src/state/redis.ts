import { createHash, randomBytes } from 'node:crypto';
import type { Redis, RedisOptions } from 'ioredis';
import { nameStateStore, stateStoreUnavailable } from '../platform/errors.js';

/**
 * The connection to the shared state store (STATE_URL: Redis or Valkey). ioredis, because it
 * takes a reconnect backoff of our choosing and an offline-queue switch, and BullMQ is built on
 * it. Scripts (every step of a request's own state, its journal entry included) are batched
 * here: those of one turn of the event loop go in one pipeline, and batches never wait for each
 * other. ioredis' own auto-pipelining (off) keeps one batch in flight at a time, which measured
 * slower for requests that wait for their journal entry (`npm run bench -- --state`).
 *
 * A command never waits for a connection: with the offline queue off, it fails at once while
 * the store is down, and any command fails after STATE_TIMEOUT_MS; both reach the client as a
 * 503 naming the store, in its API group's envelope (`unavailable`).
 * @see https://github.com/redis/ioredis#auto-reconnect
 */
export interface StateStore {
  /** Commands. */
  readonly redis: Redis;
  /** `STATE_PREFIX:` and the name: every key the emulator writes is one of these. */
  key(name: string): string;
  readonly prefix: string;
  /** Where the store is, as logs and errors may show it (no user or password). */
  readonly where: string;
  /** Connected, and the shared secret read. */
  ready(): boolean;
  /** Why it is not ready (for `/_emulator/ready`). */
  problem(): string | undefined;
  /** The secret that keys fingerprints and signs result URLs, made once in the store. */
  secret(): Buffer;
  /**
   * Runs a Lua script by its digest (EVALSHA), sending its text only when the server does not
   * have it yet (EVAL): `keys` of the arguments are key names.
   */
  script(lua: string, keys: number, ...args: Array<string | number | Buffer>): Promise<unknown>;
  /**
   * Scripts are sent in batches, one per turn of the event loop (after its I/O has been read);
   * `fn` runs just before the next batch goes, in time to add scripts of its own to it.
   */
  beforeSend(fn: () => void): void;
  /** A new connection of the same settings (a blocking read holds its own). */
  duplicate(): Redis;
  /** Settings for another client (BullMQ) to connect the same way. */
  readonly options: RedisOptions;
  /** Runs `fn` when the store becomes ready (at once if it is). */
  onReady(fn: () => void): void;
  close(): Promise<void>;
}

/** Reconnect backoff: 50 ms doubling to 2 s (a store back is used within 2 s of its return). */
const backoff = (times: number) => Math.min(50 * 2 ** Math.min(times, 6), 2000);

export async function connectState(
  url: string,
  prefix: string,
  timeoutMs: number,
): Promise<StateStore> {
  // Loaded here, not at start-up: an emulator without STATE_URL never loads it.
  const { Redis } = await import('ioredis');
  const parsed = new URL(url);
  const where = `${parsed.protocol}//${parsed.host}${parsed.pathname.length > 1 ? parsed.pathname : ''}`;
  const options = redisOptions(parsed, timeoutMs);
  nameStateStore(where);
  const redis = new Redis(options);
  let secret: Buffer | undefined;
  let lastError: string | undefined;
  const waiting: Array<() => void> = [];
  const key = (name: string) => `${prefix}:${name}`;

  // Unhandled, an ioredis error event would end the process; the state is `problem()`.
  redis.on('error', (err: Error) => {
    lastError = err.message;
  });
  redis.on('ready', () => {
    lastError = undefined;
    if (secret) return;
    // Made by the first emulator that reaches the store, read by every other one.
    const made = randomBytes(32).toString('base64');
    redis
      .set(key('secret'), made, 'NX')
      .then(() => redis.get(key('secret')))
      .then((stored) => {
        if (stored === null) throw new Error('the secret was not stored');
        secret = Buffer.from(stored, 'base64');
        for (const fn of waiting.splice(0)) fn();
      })
      .catch((err: Error) => {
        lastError = err.message;
        // Tried again at the next connection (or now, if the connection stays).
        setTimeout(() => redis.status === 'ready' && redis.emit('ready'), 500).unref();
      });
  });

  /** Each script's SHA-1, by its text (what EVALSHA names it by). */
  const digests = new Map<string, string>();
  const { evalsha, beforeSend } = scriptBatches(redis);

  return {
    redis,
    key,
    async script(lua, keys, ...args) {
      let sha = digests.get(lua);
      if (sha === undefined) {
        sha = createHash('sha1').update(lua).digest('hex');
        digests.set(lua, sha);
      }
      try {
        return await evalsha([sha, keys, ...args]);
      } catch (err) {
        // Not in the server's script cache (first use, or a restarted server): EVAL loads it.
        if (!(err instanceof Error) || !err.message.startsWith('NOSCRIPT')) throw err;
        return redis.eval(lua, keys, ...args);
      }
    },
    beforeSend,
    prefix,
    where,
    options,
    ready: () => secret !== undefined && redis.status === 'ready',
    problem: () =>
      redis.status === 'ready' && secret !== undefined
        ? undefined
        : `state store ${where} ${redis.status === 'ready' ? 'connected, reading the shared secret' : `not connected (${lastError ?? redis.status})`}`,
    secret() {
      if (!secret) throw stateStoreUnavailable(lastError ?? 'not connected yet');
      return secret;
    },
    duplicate: () => new Redis({ ...options, enableAutoPipelining: false }),
    onReady(fn) {
      if (secret) fn();
      else waiting.push(fn);
    },
    async close() {
      waiting.length = 0;
      redis.disconnect();
    },
  };
}

/** ioredis' options for a `redis://` or `rediss://` URL: fail fast, the emulator retries. */
function redisOptions(parsed: URL, timeoutMs: number): RedisOptions {
  return {
    host: parsed.hostname.replace(/^\[|\]$/g, ''),
    port: parsed.port === '' ? 6379 : Number(parsed.port),
    ...(parsed.username ? { username: decodeURIComponent(parsed.username) } : {}),
    ...(parsed.password ? { password: decodeURIComponent(parsed.password) } : {}),
    db: parsed.pathname.length > 1 ? Number(parsed.pathname.slice(1)) : 0,
    ...(parsed.protocol === 'rediss:' ? { tls: {} } : {}),
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    commandTimeout: timeoutMs,
    connectTimeout: Math.max(timeoutMs, 1000),
    retryStrategy: backoff,
    enableAutoPipelining: false,
    lazyConnect: false,
  };
}

/**
 * Scripts of one turn of the event loop, sent together once its I/O has been read: concurrent
 * requests share one write and one read of the socket, and batches do not wait for each other
 * (ioredis' own auto-pipelining keeps one batch in flight, which measured slower).
 */
function scriptBatches(redis: Redis): {
  evalsha(args: Array<string | number | Buffer>): Promise<unknown>;
  beforeSend(fn: () => void): void;
} {
  type Call = {
    args: Array<string | number | Buffer>;
    done: (err: Error | null, value?: unknown) => void;
  };
  let calls: Call[] = [];
  let preparing: Array<() => void> = [];
  let scheduled = false;
  const schedule = () => {
    if (scheduled) return;
    scheduled = true;
    setImmediate(send);
  };
  const send = () => {
    const prepare = preparing;
    preparing = [];
    for (const fn of prepare) fn();
    scheduled = false;
    const batch = calls;
    calls = [];
    if (batch.length === 1) {
      const call = batch[0] as Call;
      redis.evalsha(...(call.args as [string, number])).then(
        (value) => call.done(null, value),
        (err: Error) => call.done(err),
      );
    } else if (batch.length > 1) {
      const pipeline = redis.pipeline();
      for (const call of batch) pipeline.evalsha(...(call.args as [string, number]));
      pipeline.exec().then(
        (results) => {
          for (let i = 0; i < batch.length; i++) {
            const [err, value] = results?.[i] ?? [new Error('no reply'), undefined];
            batch[i]?.done(err, value);
          }
        },
        (err: Error) => {
          for (const call of batch) call.done(err);
        },
      );
    }
  };
  const evalsha = (args: Array<string | number | Buffer>) =>
    new Promise<unknown>((resolve, reject) => {
      calls.push({ args, done: (err, value) => (err ? reject(err) : resolve(value)) });
      schedule();
    });
  return {
    evalsha,
    beforeSend(fn) {
      preparing.push(fn);
      schedule();
    },
  };
}

/** Deletes the keys of one family (`STATE_PREFIX:` + pattern), a SCAN at a time. */
export async function deleteMatching(store: StateStore, pattern: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await store.redis.scan(cursor, 'MATCH', store.key(pattern), 'COUNT', 500);
    cursor = next;
    if (keys.length > 0) await store.redis.unlink(...keys);
  } while (cursor !== '0');
}
