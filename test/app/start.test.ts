import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { basename } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { startProcess } from '../helpers/process.js';

/**
 * The built server as users start it: `npm start` and the bin run `dist/server.bundle.js`
 * (built by `npm ci`/`prepare`; the test fails without it rather than skipping).
 */
const BUNDLE = 'dist/server.bundle.js';

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
