import { spawn } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { callbackReceiver } from '../helpers/callback-receiver.js';
import { freePort, type RedisServer, startRedis } from '../helpers/redis.js';

/**
 * The emulator as users run it: server processes (the bin) on one real redis-server, killed
 * with SIGKILL, restarted, and a store that is not there yet.
 */

const BIN = 'bin/gateway-emulator.js';
let redis: RedisServer;

beforeAll(async () => {
  redis = await startRedis({ appendonly: true });
}, 20_000);
afterAll(async () => {
  await redis.close();
});

function server(env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN], {
    env: { ...process.env, LOG_LEVEL: 'warn', LOG_FORMAT: 'json', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk) => {
    output += chunk;
  });
  child.stderr.on('data', (chunk) => {
    output += chunk;
  });
  const exited = new Promise<number | null>((resolve) => child.on('exit', resolve));
  return { child, exited, output: () => output };
}

const get = async (url: string, headers: Record<string, string> = {}) => {
  const response = await fetch(url, { headers });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

async function ready(base: string): Promise<void> {
  await vi.waitFor(
    async () => {
      const r = await fetch(`${base}/_emulator/ready`).catch(() => undefined);
      expect(r?.status).toBe(200);
    },
    { timeout: 20_000, interval: 50 },
  );
}

const video = (base: string, key: string, body?: object) =>
  fetch(`${base}/videogen/v1/videos/text2video`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body ?? { model_name: 'vid-v3', prompt: 'a boat', duration: '5' }),
  }).then(async (r) => ({
    status: r.status,
    body: (await r.json()) as { data: { task_id: string } },
  }));

const advance = (base: string, ms: number) =>
  fetch(`${base}/_emulator/clock/advance`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ ms }),
  });

describe('callbacks across processes', () => {
  it('each status change is acknowledged once, in order, when the creating replica is killed', async () => {
    await redis.flush();
    const hook = await callbackReceiver();
    const ports = [await freePort(), await freePort(), await freePort()];
    const procs = ports.map((port) => server({ STATE_URL: redis.url, PORT: String(port) }));
    const [a, b, c] = ports.map((port) => `http://127.0.0.1:${port}`) as [string, string, string];
    try {
      for (const base of [a, b, c]) await ready(base);
      const created = await video(a, 'k3', {
        model_name: 'vid-v3',
        prompt: 'a boat',
        duration: '5',
        callback_url: hook.url,
      });
      expect(created.status).toBe(200);
      (procs[0] as ReturnType<typeof server>).child.kill('SIGKILL');
      await advance(b, 60_000);
      await vi.waitFor(() => expect(hook.acknowledged).toEqual(['processing', 'succeed']), {
        timeout: 20_000,
      });
      // Nothing more comes, from any replica.
      await new Promise((r) => setTimeout(r, 1500));
      expect(hook.received).toEqual(['processing', 'succeed']);
      const listed = await get(`${c}/_emulator/callbacks`);
      expect(
        (listed.body.callbacks as Array<{ task_status: string; state: string }>).map((d) => [
          d.task_status,
          d.state,
        ]),
      ).toEqual([
        ['processing', 'delivered'],
        ['succeed', 'delivered'],
      ]);
    } finally {
      for (const proc of procs) proc.child.kill('SIGKILL');
      await hook.close();
    }
  }, 60_000);

  it('a delivery cut by SIGKILL is taken up by another replica, and acknowledged once', async () => {
    await redis.flush();
    const hook = await callbackReceiver('processing');
    const portA = await freePort();
    const portB = await freePort();
    const env = (port: number) => ({
      STATE_URL: redis.url,
      PORT: String(port),
      VIDEO_QUEUE_MS: '200',
      VIDEO_RENDER_MS: '400',
    });
    const first = server(env(portA));
    let second: ReturnType<typeof server> | undefined;
    try {
      await ready(`http://127.0.0.1:${portA}`);
      const created = await video(`http://127.0.0.1:${portA}`, 'k4', {
        model_name: 'vid-v3',
        prompt: 'a boat',
        duration: '5',
        callback_url: hook.url,
      });
      expect(created.status).toBe(200);
      // The first attempt is under way (the target holds it): the replica dies.
      await vi.waitFor(() => expect(hook.received).toEqual(['processing']), { timeout: 10_000 });
      first.child.kill('SIGKILL');
      await first.exited;
      second = server(env(portB));
      await ready(`http://127.0.0.1:${portB}`);
      await vi.waitFor(() => expect(hook.acknowledged).toEqual(['processing', 'succeed']), {
        timeout: 30_000,
      });
      await new Promise((r) => setTimeout(r, 1000));
      expect(hook.received).toEqual(['processing', 'processing', 'succeed']);
      const listed = await get(`http://127.0.0.1:${portB}/_emulator/callbacks`);
      expect(
        (
          listed.body.callbacks as Array<{ task_status: string; state: string; attempts: number }>
        ).map((d) => [d.task_status, d.state, d.attempts]),
      ).toEqual([
        ['processing', 'delivered', 2],
        ['succeed', 'delivered', 1],
      ]);
    } finally {
      first.child.kill('SIGKILL');
      second?.child.kill('SIGKILL');
      await hook.close();
    }
  }, 60_000);
});

describe('server processes on one store', () => {
  it('a task made by a replica killed with SIGKILL is found by the next one, and the clock kept', async () => {
    await redis.flush();
    const port = await freePort();
    const env = { STATE_URL: redis.url, PORT: String(port) };
    const first = server(env);
    const base = `http://127.0.0.1:${port}`;
    await ready(base);
    const created = await video(base, 'k1');
    expect(created.status).toBe(200);
    const taskId = created.body.data.task_id;
    await fetch(`${base}/_emulator/clock/advance`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ ms: 3_600_000 }),
    });
    first.child.kill('SIGKILL');
    await first.exited;
    const second = server(env);
    try {
      await ready(base);
      const found = await get(`${base}/videogen/v1/videos/text2video/${taskId}`, {
        authorization: 'Bearer k1',
      });
      expect(found.status).toBe(200);
      expect((found.body.data as { task_status: string }).task_status).toBe('succeed');
      expect((await get(`${base}/_emulator/clock`)).body.offset_ms).toBe(3_600_000);
    } finally {
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
    }
  }, 60_000);

  it('starts without its store, ready 503 naming it, and serves once the store comes', async () => {
    const storePort = await freePort();
    const port = await freePort();
    const proc = server({
      STATE_URL: `redis://:pw-not-logged@127.0.0.1:${storePort}`,
      PORT: String(port),
    });
    const base = `http://127.0.0.1:${port}`;
    try {
      await vi.waitFor(
        async () => {
          const r = await fetch(`${base}/_emulator/health`).catch(() => undefined);
          expect(r?.status).toBe(200);
        },
        { timeout: 20_000, interval: 50 },
      );
      const notReady = await get(`${base}/_emulator/ready`);
      expect(notReady.status).toBe(503);
      expect(notReady.body.status).toBe('unavailable');
      expect(String(notReady.body.reason)).toContain(`state store redis://127.0.0.1:${storePort}`);
      const refused = await video(base, 'k1');
      expect(refused.status).toBe(503);
      // A store of its own on that port, now.
      const late = spawn(
        'redis-server',
        [
          '--port',
          String(storePort),
          '--bind',
          '127.0.0.1',
          '--save',
          '',
          '--requirepass',
          'pw-not-logged',
        ],
        { stdio: 'ignore' },
      );
      try {
        await ready(base);
        expect((await video(base, 'k1')).status).toBe(200);
      } finally {
        late.kill('SIGTERM');
      }
    } finally {
      // (its store is gone by now: the shutdown must not wait for it)
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).toBe(0);
    expect(proc.output()).not.toContain('pw-not-logged');
  }, 60_000);

  it('WORKERS=2 serves one port from two processes sharing the store; SIGTERM stops them all', async () => {
    await redis.flush();
    const port = await freePort();
    const proc = server({ STATE_URL: redis.url, PORT: String(port), WORKERS: '2' });
    const base = `http://127.0.0.1:${port}`;
    try {
      await ready(base);
      const ids = new Set<string>();
      for (let i = 0; i < 20; i++) {
        const created = await video(base, 'k2');
        expect(created.status).toBe(200);
        ids.add(created.body.data.task_id);
        const found = await get(
          `${base}/videogen/v1/videos/text2video/${created.body.data.task_id}`,
          {
            authorization: 'Bearer k2',
          },
        );
        expect(found.status).toBe(200);
      }
      expect(ids.size).toBe(20);
      // The metrics of both workers, summed; the tasks (read from the store) counted once.
      const metrics = await (await fetch(`${base}/_emulator/metrics`)).text();
      expect(metrics).toMatch(/emulator_requests_total\{group="video",status="200"\} 40\n/);
      const tasks = [...metrics.matchAll(/emulator_video_tasks\{status="\w+"\} (\d+)/g)];
      expect(tasks.reduce((sum, m) => sum + Number(m[1]), 0)).toBe(20);
    } finally {
      proc.child.kill('SIGTERM');
    }
    expect(await proc.exited).toBe(0);
  }, 60_000);

  it('WORKERS=2 with its store late: every request is served once it is there, none by a worker still connecting', async () => {
    const storePort = await freePort();
    const port = await freePort();
    const proc = server({
      STATE_URL: `redis://127.0.0.1:${storePort}`,
      PORT: String(port),
      WORKERS: '2',
    });
    const base = `http://127.0.0.1:${port}`;
    let late: ReturnType<typeof spawn> | undefined;
    try {
      // Both workers built (each warns of the open keys), their store not there: none of them
      // takes a connection, where a worker still connecting would answer 503.
      await vi.waitFor(
        () => expect(proc.output().match(/GATEWAY_API_KEYS is not set/g)?.length).toBe(2),
        { timeout: 20_000, interval: 50 },
      );
      for (let i = 0; i < 20; i++) {
        const health = await fetch(`${base}/_emulator/health`).then(
          (r) => r.status,
          () => 'refused',
        );
        expect(health).toBe('refused');
        await new Promise((r) => setTimeout(r, 50));
      }
      late = spawn(
        'redis-server',
        ['--port', String(storePort), '--bind', '127.0.0.1', '--save', ''],
        { stdio: 'ignore' },
      );
      await ready(base);
      const statuses = [];
      for (let i = 0; i < 10; i++) statuses.push((await video(base, 'k3')).status);
      expect(statuses).toEqual(Array.from({ length: 10 }, () => 200));
    } finally {
      proc.child.kill('SIGTERM');
      late?.kill('SIGTERM');
    }
    expect(await proc.exited).toBe(0);
  }, 60_000);

  it('refuses a malformed STATE_URL, and WORKERS=2 without one, naming the setting', async () => {
    const bad = server({ STATE_URL: 'http://127.0.0.1:6379', PORT: '0' });
    expect(await bad.exited).toBe(2);
    expect(bad.output()).toContain('STATE_URL must be redis://');
    const lone = server({ WORKERS: '2', PORT: '0' });
    expect(await lone.exited).toBe(2);
    expect(lone.output()).toContain('WORKERS=2 needs STATE_URL');
  }, 30_000);
});
