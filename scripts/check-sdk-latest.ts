/**
 * `npm run check:sdk-latest`: the SDK types test (test/app/sdk-types.test.ts) against the
 * newest published `openai` and `@anthropic-ai/sdk`, installed in a temporary folder (their
 * type definitions only: no install scripts, no peers), and the test pointed at them with
 * `SDK_TYPES_DIR`. Prints what it covered and what it found; exits non-zero when the newest
 * SDKs find something the pinned ones do not (`.ci/run` prints it and goes on: a new release
 * must not stop a landing).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const PACKAGES = ['openai', '@anthropic-ai/sdk'];

const pinned = (name: string) =>
  (
    JSON.parse(readFileSync(join(root, 'node_modules', name, 'package.json'), 'utf8')) as {
      version: string;
    }
  ).version;

const dir = mkdtempSync(join(tmpdir(), 'sdk-latest-'));
let status = 1;
try {
  writeFileSync(join(dir, 'package.json'), '{"private":true}\n');
  const install = spawnSync(
    'npm',
    [
      'install',
      '--no-audit',
      '--no-fund',
      '--no-package-lock',
      '--ignore-scripts',
      '--legacy-peer-deps',
      '--loglevel=error',
      ...PACKAGES.map((name) => `${name}@latest`),
    ],
    { cwd: dir, stdio: 'inherit' },
  );
  if (install.status !== 0)
    throw new Error(`npm install of the newest SDKs failed (${install.status})`);
  for (const name of PACKAGES) {
    const latest = (
      JSON.parse(readFileSync(join(dir, 'node_modules', name, 'package.json'), 'utf8')) as {
        version: string;
      }
    ).version;
    console.log(`${name}: pinned ${pinned(name)}, newest ${latest}`);
  }
  const report = join(dir, 'report.txt');
  const vitest = join(
    createRequire(import.meta.url).resolve('vitest/package.json'),
    '..',
    'vitest.mjs',
  );
  const run = spawnSync(process.execPath, [vitest, 'run', 'test/app/sdk-types.test.ts'], {
    cwd: root,
    env: { ...process.env, SDK_TYPES_DIR: dir, SDK_REPORT: report },
    encoding: 'utf8',
  });
  if (existsSync(report)) console.log(readFileSync(report, 'utf8').trimEnd());
  if (run.status !== 0) {
    // (the report says what was found; vitest's own output, for what it could not say)
    console.log(`${run.stdout}${run.stderr}`.trimEnd().split('\n').slice(-60).join('\n'));
  }
  console.log(
    run.status === 0
      ? 'check:sdk-latest: the newest SDKs find nothing the emulator does not answer'
      : 'check:sdk-latest: the newest SDKs find differences (above)',
  );
  status = run.status ?? 1;
} catch (error) {
  console.error(`check:sdk-latest: ${(error as Error).message}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
process.exit(status);
