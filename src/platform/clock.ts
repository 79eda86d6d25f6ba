/** Emulator time: a time source plus an offset that `advance` moves forward. */
export interface Clock {
  now(): number;
  offsetMs(): number;
  /** Moves time forward (in the store, when the state is shared: then a promise). */
  advance(ms: number): void | Promise<void>;
  reset(): void | Promise<void>;
  /**
   * Called after every `advance` and `reset`; returns an unsubscribe function. (A shared
   * clock's `advance` resolves once the promises its listeners return have.)
   */
  onChange(listener: () => unknown): () => void;
}

export function createClock(source: () => number = Date.now): Clock {
  let offset = 0;
  const listeners = new Set<() => unknown>();
  const notify = () => {
    for (const listener of listeners) listener();
  };
  return {
    now: () => source() + offset,
    offsetMs: () => offset,
    advance(ms) {
      offset += ms;
      notify();
    },
    reset() {
      offset = 0;
      notify();
    },
    onChange(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** A wait under way: `cancel` keeps its callback from being called. */
export interface Pending {
  cancel(): void;
}

/**
 * Calls `fn` after `ms` of wall time. The stream writer's pauses: a callback, not a promise, so
 * a frame costs one small object (the wait itself, which is also its handle), no promise and
 * no timer of its own.
 */
export type Wait = (ms: number, fn: () => void) => Pending;

/** One waiting callback; a cancelled one stays in its bucket, emptied, until the bucket ends. */
class Waiting implements Pending {
  constructor(public fn: (() => void) | undefined) {}

  cancel(): void {
    this.fn = undefined;
  }
}

/**
 * Wall-clock waits through one timer wheel: waits ending in the same millisecond share one
 * bucket, and one Node timer is armed, for the earliest bucket. A thousand paced streams then
 * cost a timer per millisecond instead of a timer per frame.
 */
class TimerWheel {
  private readonly buckets = new Map<number, Waiting[]>();
  /** Bucket times, earliest first. */
  private readonly times: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Number.POSITIVE_INFINITY;

  add(ms: number, fn: () => void): Pending {
    const at = Math.ceil(performance.now() + ms);
    let bucket = this.buckets.get(at);
    if (!bucket) {
      bucket = [];
      this.buckets.set(at, bucket);
      this.insert(at);
    }
    const waiting = new Waiting(fn);
    bucket.push(waiting);
    if (at < this.armedFor) this.arm(at);
    return waiting;
  }

  private insert(at: number): void {
    const { times } = this;
    let i = times.length;
    while (i > 0 && (times[i - 1] as number) > at) i--;
    times.splice(i, 0, at);
  }

  private arm(at: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.armedFor = at;
    this.timer = setTimeout(() => this.fire(), Math.max(0, at - performance.now()));
    this.timer.unref();
  }

  private fire(): void {
    this.timer = undefined;
    this.armedFor = Number.POSITIVE_INFINITY;
    const now = performance.now();
    let due = 0;
    while (due < this.times.length && (this.times[due] as number) <= now) due++;
    const ended = this.times.splice(0, due);
    for (const at of ended) {
      const bucket = this.buckets.get(at) as Waiting[];
      this.buckets.delete(at);
      for (const waiting of bucket) {
        const fn = waiting.fn;
        if (fn === undefined) continue;
        waiting.fn = undefined;
        try {
          fn();
        } catch (err) {
          // As a throwing timer would, but after the others of the bucket had their turn.
          queueMicrotask(() => {
            throw err;
          });
        }
      }
    }
    const next = this.times[0];
    if (next !== undefined) this.arm(next);
  }
}

const wheel = new TimerWheel();

/** Waits go through the timer wheel. */
export const realWait: Wait = (ms, fn) => wheel.add(ms, fn);

/** A promise of a `Wait` (record-and-replay pacing, where one promise per pause is nothing). */
export const sleepWith = (wait: Wait, ms: number): Promise<void> =>
  new Promise((resolve) => {
    wait(ms, resolve);
  });

/** Runs `fn` after `ms` of wall time; returns a cancel function. */
export type SetTimer = (fn: () => void, ms: number) => () => void;

export const realSetTimer: SetTimer = (fn, ms) => {
  const handle = setTimeout(fn, ms);
  handle.unref();
  return () => clearTimeout(handle);
};
