import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { startProcess } from '../helpers/process.js';

/**
 * The built server as users start it: `npm start` and the bin run `dist/server.bundle.cjs`
 * (built by `npm ci`/`prepare`; the test fails without it rather than skipping).
 */
const BUNDLE = 'dist/server.bundle.cjs';

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the built server', () => {
  it('is built', () => {
    expect(existsSync(BUNDLE), `${BUNDLE} is missing: run npm run build`).toBe(true);
  });

  it('the bin answers health and exits 0 on SIGTERM', async () => {
    const server = startProcess(process.execPath, ['bin/gateway-emulator.js']);
    const base = await server.url();
    const health = await fetch(`${base}/_emulator/health`);
    expect({ status: health.status, body: await health.json() }).toEqual({
      status: 200,
      body: { status: 'ok' },
    });
    server.child.kill('SIGTERM');
    expect(await server.exited, server.output()).toBe(0);
  }, 30_000);

  it('the bin prints its usage with --help', () => {
    const usage = execFileSync(process.execPath, ['bin/gateway-emulator.js', '--help'], {
      encoding: 'utf8',
    });
    expect(usage).toContain('Usage');
  });

  it('the bin keeps the code it compiled: a load leaves its cache, a start replaces it with its own, used by the next start; a cache V8 refuses is replaced', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'gwemu-cache-'));
    const env = { NODE_COMPILE_CACHE: dir };
    // (Node 22+ keeps its own compile cache in the same directory, in a folder of its own)
    const caches = () =>
      readdirSync(dir)
        .filter((name) => name.startsWith('server.bundle-'))
        .sort();
    const hash = createHash('sha256').update(readFileSync(BUNDLE)).digest('hex').slice(0, 20);
    const build = `server.bundle-${hash}-${process.version}-${process.arch}`;
    // A stale build's cache of this Node goes when a cache is written; another Node's stays.
    writeFileSync(join(dir, `server.bundle-0123-${process.version}-${process.arch}.v8cache`), 'x');
    const other = `server.bundle-${hash}-v1.0.0-${process.arch}.v8cache`;
    writeFileSync(join(dir, other), 'x');
    const usage = execFileSync(process.execPath, ['bin/gateway-emulator.js', '--help'], {
      encoding: 'utf8',
      env: { ...process.env, ...env },
    });
    expect(usage).toContain('Usage');
    expect(caches()).toEqual([other, `${build}-loaded.v8cache`]);

    const startOnce = async () => {
      const server = startProcess(process.execPath, ['bin/gateway-emulator.js'], env);
      const health = await fetch(`${await server.url()}/_emulator/health`);
      expect(health.status).toBe(200);
      server.child.kill('SIGTERM');
      expect(await server.exited, server.output()).toBe(0);
    };
    await startOnce();
    expect(caches()).toEqual([other, `${build}.v8cache`]);
    const started = join(dir, `${build}.v8cache`);
    const written = { bytes: readFileSync(started), mtimeMs: statSync(started).mtimeMs };
    expect(written.bytes.length).toBeGreaterThan(100_000);

    await startOnce();
    expect({ bytes: readFileSync(started), mtimeMs: statSync(started).mtimeMs }).toEqual(written);

    writeFileSync(started, 'not a code cache');
    await startOnce();
    expect(caches()).toEqual([other, `${build}.v8cache`]);
    expect(readFileSync(started).length).toBeGreaterThan(100_000);
  }, 60_000);

  it('npm start runs node itself (exec): SIGTERM to npm stops the server, no orphan', async () => {
    const npm = startProcess('npm', ['start', '--silent']);
    const base = await npm.url();
    // With `exec`, npm's only child is the server's node process (no shell between). (Its
    // command line, not its name: Node 22+ names its main thread "MainThread".)
    const children = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(npm.child.pid)], {
      encoding: 'utf8',
    })
      .trim()
      .split('\n')
      .map((line) => line.trim().split(/\s+/));
    expect(children.map(([, command, ...args]) => [basename(command ?? ''), ...args])).toEqual([
      ['node', 'bin/gateway-emulator.js'],
    ]);
    const pid = Number(children[0]?.[0]);
    expect((await fetch(`${base}/_emulator/health`)).status).toBe(200);
    npm.child.kill('SIGTERM');
    await npm.exited;
    await vi.waitFor(() => expect(alive(pid)).toBe(false), { timeout: 15_000 });
    await expect(fetch(`${base}/_emulator/health`)).rejects.toThrow();
  }, 40_000);
});
