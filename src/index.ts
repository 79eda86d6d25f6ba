export { BODY_LIMIT, buildApp } from './app.js';
export {
  type Config,
  ConfigError,
  ConfigSchema,
  DEFAULT_CONFIG,
  loadConfig,
  resolveConfig,
} from './config.js';
export { type Clock, createClock, createDeps, createIds, type Deps, type Ids } from './deps.js';
export { type Emulator, type EmulatorOptions, startEmulator } from './start.js';
