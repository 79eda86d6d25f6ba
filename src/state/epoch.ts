import type { Clock } from '../platform/clock.js';
import type { StateStore } from './redis.js';

interface Watched {
  load: () => Promise<void>;
  /** The generation last read (undefined: read it at the next sync). */
  seen: string | undefined;
  loading: Promise<void> | undefined;
}

/**
 * How long a read of the epoch stands for the requests that start after it was sent (ms of
 * wall time), and how long every change of it waits before it answers.
 */
export const EPOCH_LEASE_MS = 20;

/**
 * What every request reads first when the state is shared (one small hash): the clock offset,
 * and a generation per rule book (faults, stubs) and for the fixtures. A process keeps its own
 * compiled copy of the rules and reads them again only when their generation moved.
 *
 * A read stands for EPOCH_LEASE_MS from when it was sent (a lease), and every change of the
 * epoch (a clock move, a rule added or removed, fixtures reloaded) waits that long before it
 * answers. So a request that starts after a change answered was preceded, on its replica, by a
 * read sent after the change: a stub or fault added on one replica is in force on every replica
 * for every request that starts after the call returned (read-your-writes), while under load a
 * replica reads the epoch about fifty times a second, not once per request.
 */
export class Epoch {
  readonly key: string;
  private readonly watched = new Map<string, Watched>();
  /** The clock offset as last read. */
  offset = 0;
  /** The last read: when it was sent, and whether it is done. */
  private read: { sentAt: number; done: Promise<void>; settled: boolean } | undefined;

  constructor(private readonly store: StateStore) {
    this.key = store.key('epoch');
  }

  /** Calls `load` at the first sync and whenever `name`'s generation moves. */
  watch(name: string, load: () => Promise<void>): void {
    this.watched.set(name, { load, seen: undefined, loading: undefined });
  }

  /**
   * The epoch as of a read sent within the lease: undefined when the last one is done and
   * still stands, else the read under way (or a new one) to wait for.
   */
  sync(): Promise<void> | undefined {
    const now = performance.now();
    const last = this.read;
    if (last && now - last.sentAt < EPOCH_LEASE_MS) return last.settled ? undefined : last.done;
    return this.fresh();
  }

  /** A read sent now, whatever the lease (what must not act on a read of before a change). */
  fresh(): Promise<void> {
    // (the secret, read once at connection, comes first: fingerprints need it)
    this.store.secret();
    const read = { sentAt: performance.now(), done: this.readNow(), settled: false };
    this.read = read;
    read.done.then(
      () => {
        read.settled = true;
      },
      () => {
        if (this.read === read) this.read = undefined;
      },
    );
    return read.done;
  }

  /** Waits out the lease: what a change of the epoch does before it answers. */
  settle(): Promise<void> {
    return new Promise((resolve) => setTimeout(resolve, EPOCH_LEASE_MS));
  }

  /** Reads the epoch now; the rules whose generation moved are read again before it resolves. */
  private async readNow(): Promise<void> {
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
    await this.settle();
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
    await Promise.all([this.notify(), this.epoch.settle()]);
  }

  async reset(): Promise<void> {
    await this.store.redis.hset(this.epoch.key, 'offset', 0);
    this.epoch.offset = 0;
    await Promise.all([this.notify(), this.epoch.settle()]);
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
