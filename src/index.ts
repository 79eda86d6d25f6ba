export { BODY_LIMIT, buildApp } from './app.js';
export {
  type Config,
  ConfigError,
  ConfigSchema,
  DEFAULT_CONFIG,
  loadConfig,
  resolveConfig,
} from './config.js';
export { type Emulator, type EmulatorOptions, startEmulator } from './emulator.js';
export { type Clock, createClock } from './platform/clock.js';
export { createDeps, type Deps } from './platform/deps.js';
export { createIds, type Ids } from './platform/ids.js';
