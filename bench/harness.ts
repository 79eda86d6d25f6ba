/** What the bench scripts share: starting servers as child processes and reading their /proc. */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addBenchStubs, BENCH_RULES } from './scenarios.js';

/** A FIXTURES_DIR with the bench's scripted replies (media falls back to the shipped clip). */
export function benchFixtures(): string {
  const dir = mkdtempSync(join(tmpdir(), 'bench-fixtures-'));
  mkdirSync(join(dir, 'replies'));
  writeFileSync(join(dir, 'replies', 'bench.json'), JSON.stringify({ rules: BENCH_RULES }));
  return dir;
}

export function freePort(): Promise<number> {
  return new Promise((ok) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => ok(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

export interface Server {
  base: string;
  port: number;
  child: ChildProcess;
}

/** Every child still running; killed when this process exits, however it exits. */
const children = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => process.exit(130));
}

/** Forks a server script (`.ts` through tsx) on a free port and waits until `readyPath` answers. */
export async function startServer(
  script: string,
  scriptArgs: string[],
  env: Record<string, string>,
  readyPath: string,
  stderr: 'inherit' | 'pipe' = 'inherit',
  /** Node flags besides tsx's (a profiler's). */
  nodeArgs: string[] = [],
): Promise<Server> {
  const port = await freePort();
  const child = fork(script, scriptArgs, {
    env: { ...process.env, ...env, PORT: String(port) },
    execArgv: [...(script.endsWith('.ts') ? ['--import', 'tsx'] : []), ...nodeArgs],
    stdio: ['ignore', 'ignore', stderr, 'ipc'],
  });
  children.add(child);
  child.once('exit', () => children.delete(child));
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 400 && child.exitCode === null; i++) {
    try {
      if ((await fetch(`${base}${readyPath}`)).status < 500) return { base, port, child };
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  child.kill('SIGKILL');
  throw new Error(`${script} never came up`);
}

/** CPU time (user + system) a process has used, in µs, from /proc (Linux). */
export function cpuMicros(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return Number.NaN;
  }
}

/** Resident set size of a process in KiB (NaN once it is gone). */
export function rssKiB(pid: number | undefined): number {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
  } catch {
    return Number.NaN;
  }
}

/**
 * The emulator as users run it: LOG_LEVEL=info (one line per request, to its stdout, which the
 * bench does not read) and the shipped fixtures; the bench's 256-token reply is a stub.
 * `nodeArgs`: Node flags (a profiler's).
 */
export async function startShippedEmulator(nodeArgs: string[] = []): Promise<Server> {
  const server = await startServer(
    'dist/server.bundle.cjs',
    [],
    { LOG_LEVEL: 'info' },
    '/_emulator/ready',
    'inherit',
    nodeArgs,
  );
  await addBenchStubs(server.base);
  return server;
}
