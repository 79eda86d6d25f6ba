import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { type Config, resolveConfig } from './config.js';
import { createDeps, type Deps } from './platform/deps.js';

export interface EmulatorOptions extends Partial<Config> {
  deps?: Partial<Deps>;
}

export interface Emulator {
  /** Base URL, e.g. `http://127.0.0.1:53211`. */
  url: string;
  port: number;
  config: Config;
  clock: Deps['clock'];
  app: FastifyInstance;
  /** Moves emulator time forward and runs whatever became due. */
  advance(ms: number): void;
  /** Empties every store, as `POST /_emulator/reset` does. */
  reset(): void;
  close(): Promise<void>;
}

/**
 * Starts an emulator for a client's test suite: port 0 (any free port) and warn-level logs
 * unless told otherwise.
 */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const { deps: depOverrides, ...overrides } = options;
  const config = resolveConfig({ port: 0, logLevel: 'warn', ...overrides });
  const deps = createDeps(depOverrides);
  const app = await buildApp(config, deps);
  await app.listen({ port: config.port, host: config.host });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  return {
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    port,
    config,
    clock: deps.clock,
    app,
    advance: (ms) => deps.clock.advance(ms),
    reset: () => app.emulator.reset(),
    close: () => app.close(),
  };
}
