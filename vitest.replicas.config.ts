import { defineConfig, mergeConfig } from 'vitest/config';
import base from './vitest.config.js';

/**
 * `npm run test:replicas`: the whole suite again, each test app being three replicas on one
 * real redis-server, each request sent to the next replica in turn (test/helpers/app.ts): what
 * one emulator passes, three behind a round-robin proxy pass (README "Running several replicas").
 */
export default mergeConfig(
  base,
  defineConfig({
    test: {
      globalSetup: ['test/replicas-setup.ts'],
    },
  }),
);
