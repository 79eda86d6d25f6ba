import { defineConfig } from 'vitest/config';

/** `npm run test:e2e`: the dashboard in a real (headless) Chromium. Not part of `npm test`. */
export default defineConfig({
  test: {
    include: ['e2e/**/*.e2e.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
  },
});
