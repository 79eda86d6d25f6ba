import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts', 'examples/**/*.test.ts'],
    setupFiles: ['test/setup.ts'],
    // Memory tests call gc() to see what stays alive.
    execArgv: ['--expose-gc'],
    // Test files share their worker's module cache (each builds its own app): the suite runs
    // in about two thirds of the time, which matters with three Node majors in CI.
    isolate: false,
    testTimeout: 20_000,
    hookTimeout: 20_000,
  },
});
