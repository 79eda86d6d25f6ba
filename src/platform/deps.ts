import { randomBytes } from 'node:crypto';
import {
  type Clock,
  createClock,
  realSetTimer,
  realWait,
  type SetTimer,
  type Wait,
} from './clock.js';
import { createIds, type Ids } from './ids.js';

/** The side effects the app is given, so tests can replace each one. */
export interface Deps {
  clock: Clock;
  ids: Ids;
  /** Stream pauses (and replayed ones). */
  wait: Wait;
  /** A monotonic clock in ms (wall time, for stream pauses; never the emulator's time). */
  monotonic: () => number;
  setTimer: SetTimer;
  /** Signs what must not be guessable (result video URLs); random per process. */
  secret: Buffer;
  /** Where pino writes; stdout when absent. */
  logStream?: NodeJS.WritableStream;
}

export function createDeps(overrides: Partial<Deps> = {}): Deps {
  return {
    clock: createClock(),
    ids: createIds(),
    wait: realWait,
    monotonic: () => performance.now(),
    setTimer: realSetTimer,
    secret: randomBytes(32),
    ...overrides,
  };
}
