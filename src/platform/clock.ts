import { setTimeout as delay } from 'node:timers/promises';

/** Emulator time: a time source plus an offset that `advance` moves forward. */
export interface Clock {
  now(): number;
  offsetMs(): number;
  advance(ms: number): void;
  reset(): void;
  /** Called after every `advance` and `reset`; returns an unsubscribe function. */
  onChange(listener: () => void): () => void;
}

export function createClock(source: () => number = Date.now): Clock {
  let offset = 0;
  const listeners = new Set<() => void>();
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

/** Resolves after `ms`, or rejects with an AbortError when `signal` aborts first. */
export type Sleep = (ms: number, signal?: AbortSignal) => Promise<void>;

/**
 * Wall-clock sleeps through one timer wheel: sleeps ending in the same millisecond share one
 * bucket, and one Node timer is armed, for the earliest bucket. A thousand paced streams then
 * cost a timer per millisecond instead of a timer and a promise per frame.
 */
class TimerWheel {
  private readonly buckets = new Map<number, Array<() => void>>();
  /** Bucket times, earliest first. */
  private readonly times: number[] = [];
  private timer: NodeJS.Timeout | undefined;
  private armedFor = Number.POSITIVE_INFINITY;

  add(ms: number, wake: () => void): void {
    const at = Math.ceil(performance.now() + ms);
    let bucket = this.buckets.get(at);
    if (!bucket) {
      bucket = [];
      this.buckets.set(at, bucket);
      this.insert(at);
    }
    bucket.push(wake);
    if (at < this.armedFor) this.arm(at);
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
    while (this.times.length > 0 && (this.times[0] as number) <= now) {
      const at = this.times.shift() as number;
      const bucket = this.buckets.get(at) as Array<() => void>;
      this.buckets.delete(at);
      for (const wake of bucket) wake();
    }
    const next = this.times[0];
    if (next !== undefined) this.arm(next);
  }
}

const wheel = new TimerWheel();

/**
 * Pauses go through the timer wheel; a pause with a signal gets its own timer, which the
 * signal can cancel (the stream writer passes one only for long pauses).
 */
export const realSleep: Sleep = (ms, signal) =>
  signal ? delay(ms, undefined, { signal }) : new Promise((resolve) => wheel.add(ms, resolve));

/** Runs `fn` after `ms` of wall time; returns a cancel function. */
export type SetTimer = (fn: () => void, ms: number) => () => void;

export const realSetTimer: SetTimer = (fn, ms) => {
  const handle = setTimeout(fn, ms);
  handle.unref();
  return () => clearTimeout(handle);
};
