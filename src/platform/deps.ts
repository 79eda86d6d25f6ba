import {
  type Clock,
  createClock,
  realSetTimer,
  realSleep,
  type SetTimer,
  type Sleep,
} from './clock.js';
import { createIds, type Ids } from './ids.js';

/** The side effects the app is given, so tests can replace each one. */
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
