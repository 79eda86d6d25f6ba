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

export const realSleep: Sleep = (ms, signal) =>
  delay(ms, undefined, signal ? { signal } : undefined);

/** Runs `fn` after `ms` of wall time; returns a cancel function. */
export type SetTimer = (fn: () => void, ms: number) => () => void;

export const realSetTimer: SetTimer = (fn, ms) => {
  const handle = setTimeout(fn, ms);
  handle.unref();
  return () => clearTimeout(handle);
};
