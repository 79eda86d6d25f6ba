import type { Clock } from '../platform/clock.js';
import type { StateStore } from './redis.js';

interface Watched {
  load: () => Promise<void>;
  /** The generation last read (undefined: read it at the next sync). */
  seen: string | undefined;
  loading: Promise<void> | undefined;
}

/**
 * What every request reads first when the state is shared (one small hash, one round trip):
 * the clock offset, and a generation per rule book (faults, stubs) and for the fixtures. A
 * process keeps its own compiled copy of the rules and reads them again only when their
 * generation moved, so a stub or fault added on one replica is in force on every replica for
 * every request that starts after the call returned (read-your-writes), at the price of one
 * HGETALL per request.
 */
export class Epoch {
  readonly key: string;
  private readonly watched = new Map<string, Watched>();
  /** The clock offset as last read. */
  offset = 0;

  constructor(private readonly store: StateStore) {
    this.key = store.key('epoch');
  }

  /** Calls `load` at the first sync and whenever `name`'s generation moves. */
  watch(name: string, load: () => Promise<void>): void {
    this.watched.set(name, { load, seen: undefined, loading: undefined });
  }

  /** Reads the epoch; the rules whose generation moved are read again before it resolves. */
  async sync(): Promise<void> {
    // (the secret, read once at connection, comes first: fingerprints need it)
    this.store.secret();
    const fields = await this.store.redis.hgetall(this.key);
    this.offset = Number(fields.offset ?? 0);
    let pending: Promise<void>[] | undefined;
    for (const [name, watched] of this.watched) {
      const gen = fields[name] ?? '0';
      if (gen !== watched.seen) {
        watched.seen = gen;
        const loading = watched.load().catch((err: unknown) => {
          watched.seen = undefined; // read again next time
          throw err;
        });
        watched.loading = loading;
        loading.then(
          () => {
            if (watched.loading === loading) watched.loading = undefined;
          },
          () => {
            if (watched.loading === loading) watched.loading = undefined;
          },
        );
      }
      if (watched.loading) {
        pending ??= [];
        pending.push(watched.loading);
      }
    }
    if (pending) await Promise.all(pending);
  }

  /** Moves a generation (the fixtures, reloaded on one replica, are read again by all). */
  async bump(name: string): Promise<void> {
    await this.store.redis.hincrby(this.key, name, 1);
  }
}

/**
 * The emulator clock when the state is shared: the offset lives in the store (`Epoch`), read
 * with each request, so every replica tells the same time; `advance` and `reset` change it
 * there, atomically (two advances at once both count).
 */
export class SharedClock implements Clock {
  private readonly listeners = new Set<() => unknown>();

  constructor(
    private readonly store: StateStore,
    private readonly epoch: Epoch,
    /** Real time (a test's own clock); the store's offset is added to it. */
    private readonly base: Clock,
  ) {}

  now(): number {
    return this.base.now() + this.epoch.offset;
  }

  /** The store's offset (and the base clock's own, which is 0 but in a test that moves it). */
  offsetMs(): number {
    return this.base.offsetMs() + this.epoch.offset;
  }

  /** Moves the shared offset; resolves once what became due was started (callbacks promoted). */
  async advance(ms: number): Promise<void> {
    this.epoch.offset = await this.store.redis.hincrby(this.epoch.key, 'offset', ms);
    await this.notify();
  }

  async reset(): Promise<void> {
    await this.store.redis.hset(this.epoch.key, 'offset', 0);
    this.epoch.offset = 0;
    await this.notify();
  }

  onChange(listener: () => unknown): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  private async notify(): Promise<void> {
    const waits: unknown[] = [];
    for (const listener of this.listeners) waits.push(listener());
    await Promise.allSettled(waits);
  }
}
