import { readFileSync } from 'node:fs';
import { afterEach, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
afterEach(() => t.app.close());

it('generates the OpenAPI document byte for byte as snapshotted (npm run openapi:snapshot)', async () => {
  t = await buildTestApp();
  await t.app.ready();
  const snapshot = readFileSync(new URL('./openapi.snapshot.json', import.meta.url), 'utf8');
  expect(`${JSON.stringify(t.app.swagger(), null, 2)}\n`).toBe(snapshot);
});
