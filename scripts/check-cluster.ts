/**
 * Proves deploy/cluster without a Docker engine, as check-dockerfile proves the Dockerfile:
 * starts each compose service's command as a process on loopback (redis-server with the
 * compose file's arguments, the emulator replicas with their environment, HAProxy with the
 * folder's haproxy.cfg, its service names pointed at those processes), then sends traffic
 * through the proxy: a task created through one replica is polled through the others to its
 * result, a stub and a `times: 1` fault hold across them, the journal verifies every request;
 * then every replica is killed (SIGKILL) and started again, and Redis restarted, and nothing
 * acknowledged is lost.
 *
 *   npm run check:cluster
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { parse } from 'yaml';

const repo = resolve(dirname(new URL(import.meta.url).pathname), '..');
const folder = join(repo, 'deploy/cluster');

interface Service {
  command?: string[];
  environment?: Record<string, string>;
  image?: string;
  build?: string;
}

/** Every process this check started (ended when it ends, pass or fail). */
const children: ChildProcess[] = [];

function fail(message: string): never {
  console.error(`check-cluster: FAIL: ${message}`);
  for (const child of children) child.kill('SIGKILL');
  process.exit(1);
}

function freePort(): Promise<number> {
  return new Promise((ok, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => ok(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

async function until(what: string, ok: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok().catch(() => false))) {
    if (Date.now() > deadline) fail(`${what} did not happen within ${ms} ms`);
    await sleep(100);
  }
}

const compose = parse(readFileSync(join(folder, 'compose.yml'), 'utf8')) as {
  services: Record<string, Service>;
};
const services = compose.services;
const redisService = services.redis ?? fail('compose.yml has no redis service');
const replicaNames = Object.keys(services).filter((name) => name.startsWith('emulator-'));
if (replicaNames.length !== 3)
  fail(`compose.yml must have three emulator replicas, has ${replicaNames.length}`);
for (const name of replicaNames) {
  if (services[name]?.build !== '../..')
    fail(`${name} must be built from the repository's Dockerfile`);
}
const redisArgs = redisService.command ?? fail('the redis service has no command');
if (
  !redisArgs.includes('--appendonly') ||
  redisArgs[redisArgs.indexOf('--appendonly') + 1] !== 'yes'
)
  fail('Redis must run with --appendonly yes');

const dir = mkdtempSync(join(tmpdir(), 'gwemu-cluster-'));
const start = (command: string, args: string[], env: Record<string, string> = {}) => {
  const child = spawn(command, args, {
    cwd: repo,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  children.push(child);
  return child;
};
const stop = async (child: ChildProcess, signal: NodeJS.Signals) => {
  if (child.exitCode !== null || child.signalCode !== null) return;
  await new Promise<void>((ok) => {
    child.once('exit', () => ok());
    child.kill(signal);
  });
};

async function main() {
  execFileSync('npm', ['run', 'build'], { cwd: repo, stdio: 'ignore' });
  const redisPort = await freePort();
  const [first, ...rest] = redisArgs;
  if (first !== 'redis-server') fail('the redis service must run redis-server');
  const redisCommand = [...rest, '--port', String(redisPort), '--bind', '127.0.0.1', '--dir', dir];
  let redis = start('redis-server', redisCommand);

  const ports = new Map<string, number>();
  for (const name of replicaNames) ports.set(name, await freePort());
  const proxyPort = await freePort();
  const replica = (name: string) => {
    const service = services[name] as Service;
    const env: Record<string, string> = {};
    for (const [key, value] of Object.entries(service.environment ?? {})) {
      env[key] = String(value)
        .replace('redis://redis:6379', `redis://127.0.0.1:${redisPort}`)
        .replace('http://localhost:4010', `http://127.0.0.1:${proxyPort}`);
    }
    // The image's own settings (Dockerfile ENV): HOST and PORT.
    return start(process.execPath, ['dist/server.bundle.cjs'], {
      ...env,
      HOST: '127.0.0.1',
      PORT: String(ports.get(name)),
      LOG_LEVEL: 'warn',
    });
  };
  let replicas = replicaNames.map(replica);

  // HAProxy with the folder's config, its service names pointed at the processes.
  let config = readFileSync(join(folder, 'haproxy.cfg'), 'utf8');
  config = config.replace(/bind :4010/, `bind 127.0.0.1:${proxyPort}`);
  for (const [name, port] of ports) {
    config = config.replace(new RegExp(`${name}:4010`), `127.0.0.1:${port}`);
  }
  const cfg = join(dir, 'haproxy.cfg');
  writeFileSync(cfg, config);
  execFileSync('haproxy', ['-c', '-f', cfg], { stdio: 'ignore' });
  start('haproxy', ['-db', '-f', cfg]);

  const base = `http://127.0.0.1:${proxyPort}`;
  const call = async (method: string, path: string, body?: unknown, key = 'sk-cluster') => {
    const res = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization: `Bearer ${key}`,
        ...(body === undefined ? {} : { 'content-type': 'application/json' }),
      },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    const text = await res.text();
    return { status: res.status, json: text ? JSON.parse(text) : undefined };
  };
  const readyAll = () =>
    until('every replica ready', async () => {
      for (const port of ports.values()) {
        const res = await fetch(`http://127.0.0.1:${port}/_emulator/ready`);
        if (res.status !== 200) return false;
      }
      return (await fetch(`${base}/_emulator/health`)).status === 200;
    });
  await readyAll();
  await call('POST', '/_emulator/reset');

  // A task made through one replica is found through every one (round robin), to its result.
  const created = await call('POST', '/videogen/v1/videos/text2video', {
    model_name: 'vid-v3',
    prompt: 'a lighthouse at night',
    duration: '5',
  });
  if (created.status !== 200) fail(`creating a task: ${created.status}`);
  const taskId = created.json.data.task_id as string;
  for (let i = 0; i < 6; i++) {
    const polled = await call('GET', `/videogen/v1/videos/text2video/${taskId}`);
    if (polled.status !== 200) fail(`poll ${i} of the task through the proxy: ${polled.status}`);
  }
  await call('POST', '/_emulator/clock/advance', { ms: 60_000 });
  const done = await call('GET', `/videogen/v1/videos/text2video/${taskId}`);
  if (done.json.data.task_status !== 'succeed') fail(`the task is ${done.json.data.task_status}`);
  const video = new URL(done.json.data.task_result.videos[0].url);
  for (let i = 0; i < 3; i++) {
    const media = await fetch(`${base}${video.pathname}`);
    if (media.status !== 200) fail(`the result video through the proxy: ${media.status}`);
    await media.arrayBuffer();
  }

  // A stub and a `times: 1` fault set through one replica hold for all of them.
  await call('POST', '/_emulator/replies', { match: { contains: 'ping' }, reply: 'pong' });
  await call('POST', '/_emulator/faults', { path: '/v1/chat/completions', status: 503, times: 1 });
  const statuses: number[] = [];
  for (let i = 0; i < 6; i++) {
    const answer = await call('POST', '/v1/chat/completions', {
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'ping' }],
    });
    statuses.push(answer.status);
    if (answer.status === 200 && answer.json.choices[0].message.content !== 'pong')
      fail('a replica did not answer with the stub');
  }
  if (statuses.filter((s) => s === 503).length !== 1) fail(`the fault struck ${statuses}`);
  const verified = await call('POST', '/_emulator/journal/verify', {
    match: { path: '/v1/chat/completions' },
    count: { exactly: 6 },
  });
  if (verified.status !== 200) fail(`journal verify: ${JSON.stringify(verified.json)}`);

  // Every replica killed and started again, then Redis restarted: nothing is lost.
  for (const child of replicas) await stop(child, 'SIGKILL');
  replicas = replicaNames.map(replica);
  await stop(redis, 'SIGTERM');
  redis = start('redis-server', redisCommand);
  await readyAll();
  const after = await call('GET', `/videogen/v1/videos/text2video/${taskId}`);
  if (JSON.stringify(after.json.data) !== JSON.stringify(done.json.data))
    fail('the task changed across the restarts');
  const stub = await call('POST', '/v1/chat/completions', {
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'ping' }],
  });
  if (stub.json?.choices?.[0]?.message?.content !== 'pong') fail('the stub was lost');
  const journal = await call('GET', '/_emulator/journal?path=/v1/chat/completions');
  if (journal.json.requests.length !== 7) fail(`the journal holds ${journal.json.requests.length}`);
  const media = await fetch(`${base}${video.pathname}`);
  if (media.status !== 200) fail('a result URL from before the restarts stopped working');
  console.log(
    `check-cluster: PASS (redis-server with ${redisArgs.slice(1).join(' ')}, ${replicaNames.length} replicas, haproxy ${config.includes('roundrobin') ? 'round robin' : ''}; restarts lost nothing)`,
  );
}

main()
  .catch((err: unknown) => fail(err instanceof Error ? (err.stack ?? err.message) : String(err)))
  .finally(async () => {
    for (const child of children) await stop(child, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  });
