/**
 * `npm run lint:openapi`: builds the app, writes its OpenAPI document to a temporary
 * `openapi.json` beside copies of `redocly.yaml` (Redocly's recommended rules, warnings as
 * errors) and `.redocly.lint-ignore.yaml` (the problems passed over on purpose), and lints it
 * with Redocly CLI. Exits non-zero on any problem. Extra arguments go to `redocly lint` (e.g.
 * `--format=json`).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildApp } from '../src/app.js';
import { resolveConfig } from '../src/config.js';

const root = fileURLToPath(new URL('..', import.meta.url));

/** Lints `document` with Redocly CLI; its exit status (0: no error and no warning). */
export function lintOpenapi(document: unknown, args: readonly string[] = []) {
  const dir = mkdtempSync(join(tmpdir(), 'openapi-lint-'));
  const file = join(dir, 'openapi.json');
  writeFileSync(file, JSON.stringify(document, null, 2));
  // The ignore file names the document by its path from the config: both go beside it.
  for (const name of ['redocly.yaml', '.redocly.lint-ignore.yaml']) {
    copyFileSync(join(root, name), join(dir, name));
  }
  const cli = join(
    dirname(createRequire(import.meta.url).resolve('@redocly/cli/package.json')),
    'bin/cli.js',
  );
  try {
    return spawnSync(
      process.execPath,
      [cli, 'lint', 'openapi.json', '--max-problems=1000', ...args],
      {
        cwd: dir,
        encoding: 'utf8',
        // No usage reports to Redocly, no update check.
        env: { ...process.env, REDOCLY_TELEMETRY: 'off', REDOCLY_SUPPRESS_UPDATE_NOTICE: 'true' },
      },
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The document as `GET /_emulator/openapi.json` serves it. */
export async function openapiDocument(): Promise<unknown> {
  const app = await buildApp(resolveConfig({ logLevel: 'silent' }));
  await app.ready();
  const document = await app.openapi();
  await app.close();
  return document;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const result = lintOpenapi(await openapiDocument(), process.argv.slice(2));
  process.stdout.write(result.stdout);
  process.stderr.write(result.stderr);
  process.exit(result.status ?? 1);
}
