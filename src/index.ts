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
export {
  type Clock,
  createClock,
  createDeps,
  createIds,
  type Deps,
  type Ids,
} from './platform/clock.js';
