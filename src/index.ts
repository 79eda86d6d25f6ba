export { BODY_LIMIT, buildApp } from './app.js';
export {
  type Config,
  ConfigError,
  ConfigSchema,
  DEFAULT_CONFIG,
  loadConfig,
  resolveConfig,
} from './config.js';
export {
  type Emulator,
  type EmulatorControl,
  type EmulatorOptions,
  type JournalQuery,
  startEmulator,
  VerificationError,
  type VerifyCount,
} from './emulator.js';
export type { FaultRuleInput, FaultRuleView } from './harness/faults.js';
export type { JournalEntry, JournalFilter, NearMiss } from './harness/journal.js';
export type { RequestMatch } from './harness/match.js';
export { type Clock, createClock } from './platform/clock.js';
export { createDeps, type Deps } from './platform/deps.js';
export { createIds, type Ids } from './platform/ids.js';
export type { StubInput, StubView } from './text/replies.js';
