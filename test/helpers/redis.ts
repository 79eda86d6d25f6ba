import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';

/** A real redis-server (Debian's package), on a free port in a temp dir, for one test file. */
export interface RedisServer {
  url: string;
  port: number;
  /** Stops it (SIGTERM: with appendonly on, what was acknowledged is on disk). */
  stop(): Promise<void>;
  /** Starts it again on the same port and dir (after `stop` or `kill`). */
  start(): Promise<void>;
  /** SIGKILL: no shutdown save. */
  kill(): Promise<void>;
  /** The server's process id (to pause it with SIGSTOP). */
  pid(): number;
  /** Deletes every key (between tests). */
  flush(): Promise<void>;
  /** Stops it and removes its dir. */
  close(): Promise<void>;
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

export async function startRedis(options: { appendonly?: boolean } = {}): Promise<RedisServer> {
  const dir = mkdtempSync(join(tmpdir(), 'gwemu-redis-'));
  const port = await freePort();
  let child: ChildProcess | undefined;
  const args = [
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    options.appendonly ? 'yes' : 'no',
    '--appendfsync',
    'always',
    '--daemonize',
    'no',
    '--loglevel',
    'warning',
  ];
  const start = async () => {
    const proc = spawn('redis-server', args, { stdio: 'ignore' });
    child = proc;
    const deadline = Date.now() + 10_000;
    for (;;) {
      const client = new Redis({
        port,
        host: '127.0.0.1',
        lazyConnect: true,
        retryStrategy: () => null,
      });
      client.on('error', () => {});
      try {
        await client.connect();
        if ((await client.ping()) === 'PONG') {
          client.disconnect();
          return;
        }
      } catch {
        client.disconnect();
      }
      if (proc.exitCode !== null) throw new Error(`redis-server exited with ${proc.exitCode}`);
      if (Date.now() > deadline) throw new Error('redis-server did not start within 10 s');
      await new Promise((r) => setTimeout(r, 25));
    }
  };
  const end = async (signal: NodeJS.Signals) => {
    const proc = child;
    child = undefined;
    if (!proc || proc.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      proc.once('exit', () => resolve());
      proc.kill(signal);
    });
  };
  await start();
  const url = `redis://127.0.0.1:${port}`;
  return {
    url,
    port,
    start,
    stop: () => end('SIGTERM'),
    kill: () => end('SIGKILL'),
    pid: () => child?.pid ?? 0,
    async flush() {
      const client = new Redis({ port, host: '127.0.0.1' });
      await client.flushall();
      client.disconnect();
    },
    async close() {
      await end('SIGTERM');
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
