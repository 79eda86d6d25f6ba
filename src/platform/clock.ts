import { setTimeout as delay } from 'node:timers/promises';
import { customAlphabet } from 'nanoid';

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

export type IdKind = 'request' | 'chat' | 'message' | 'task';

export interface Ids {
  next(kind: IdKind): string;
}

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const randomBase62 = customAlphabet(BASE62);
const digits = customAlphabet('0123456789', 17);

/** Fixed-width base62 of a non-negative integer. */
function toBase62(n: number, width: number): string {
  let out = '';
  for (let i = 0; i < width; i++) {
    out = BASE62[n % 62] + out;
    n = Math.floor(n / 62);
  }
  return out;
}

/**
 * Production ids, shaped like the upstream ones: a random per-process stem plus a counter, so
 * they are unique, never repeat within a run, and cost almost nothing on the hot path.
 */
export function createIds(): Ids {
  const stem = randomBase62(21);
  const short = stem.slice(0, 16);
  const taskStem = `8${digits().slice(0, 8)}`;
  let counter = 0;
  const tail = (width: number) => toBase62(++counter, width);
  return {
    next(kind) {
      switch (kind) {
        case 'request':
          return `req_${short}${tail(8)}`;
        case 'chat':
          return `chatcmpl-${stem}${tail(8)}`;
        case 'message':
          return `msg_${short}${tail(8)}`;
        case 'task':
          return `${taskStem}${String(++counter).padStart(9, '0').slice(-9)}`;
      }
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

export interface Deps {
  clock: Clock;
  ids: Ids;
  sleep: Sleep;
  setTimer: SetTimer;
  /** Where pino writes; stdout when absent. */
  logStream?: NodeJS.WritableStream;
}

export function createDeps(overrides: Partial<Deps> = {}): Deps {
  return {
    clock: createClock(),
    ids: createIds(),
    sleep: realSleep,
    setTimer: realSetTimer,
    ...overrides,
  };
}
