import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    // Memory tests call gc() to see what stays alive.
    execArgv: ['--expose-gc'],
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
