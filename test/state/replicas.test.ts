import { Redis } from 'ioredis';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClock } from '../../src/platform/clock.js';
import { createIds } from '../../src/platform/ids.js';
import { buildTestApp, T0, type TestApp, testDeps } from '../helpers/app.js';
import { callbackReceiver } from '../helpers/callback-receiver.js';
import { type RedisServer, startRedis } from '../helpers/redis.js';

/**
 * Several emulators on one real redis-server, as replicas behind a load balancer: what one is
 * told, every other one does (docs/replicas.md).
 */

let redis: RedisServer;
/** When this file began: its replicas' time is T0 plus the time since. */
const STARTED = Date.now();
const apps: TestApp[] = [];

beforeAll(async () => {
  redis = await startRedis({ appendonly: true });
}, 20_000);
afterAll(async () => {
  await redis.close();
});
beforeEach(async () => {
  await redis.flush();
});
afterEach(async () => {
  for (const { app } of apps.splice(0)) await app.close();
});

/** A replica on the test store; resolves once its store is connected. */
async function replica(settings: Record<string, unknown> = {}): Promise<TestApp> {
  const deps = testDeps();
  // Real time here (Redis TTLs run on it), moved only by the clock routes: from T0 on, as the
  // wall clock goes (never back: a clock that wrapped each second put a rate limit window's
  // requests before its start).
  deps.clock = createClock(() => T0 + (Date.now() - STARTED));
  // Ids as in production: random per process, so replicas never make the same one.
  deps.ids = createIds();
  const built = await buildTestApp({ stateUrl: redis.url, logLevel: 'silent', ...settings }, deps);
  apps.push(built);
  const headers = settings.adminToken
    ? { 'x-emulator-admin-token': String(settings.adminToken) }
    : {};
  await until(
    async () =>
      (await built.inject({ method: 'GET', url: '/_emulator/clock', headers })).statusCode === 200,
  );
  return built;
}

async function until(ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

const TEXT2VIDEO = { model_name: 'vid-v3', prompt: 'a red fox in the snow', duration: '5' };
const control = (app: TestApp, method: 'GET' | 'POST' | 'DELETE', url: string, payload?: object) =>
  app.inject({ method, url: `/_emulator${url}`, ...(payload ? { payload } : {}) });

describe('replicas on one store', () => {
  it('find a task created on another, and list it', async () => {
    const [a, b] = [await replica(), await replica()];
    const created = await a.video('text2video', TEXT2VIDEO);
    expect(created.statusCode).toBe(200);
    const taskId = created.json().data.task_id as string;
    const found = await b.video(`text2video/${taskId}`);
    expect(found.statusCode).toBe(200);
    expect(found.json().data.task_id).toBe(taskId);
    expect(found.json().data.task_status).toBe('submitted');
    const page = await b.video('text2video?pageNum=1&pageSize=10');
    expect(page.json().data.map((t: { task_id: string }) => t.task_id)).toEqual([taskId]);
    // Another key sees nothing of it.
    expect((await b.video(`text2video/${taskId}`, undefined, { key: 'other' })).statusCode).toBe(
      404,
    );
  });

  it('share the clock: an advance on one moves every task on the others', async () => {
    const [a, b] = [await replica(), await replica()];
    const taskId = (await a.video('text2video', TEXT2VIDEO)).json().data.task_id;
    const advanced = await control(a, 'POST', '/clock/advance', { ms: 60_000 });
    expect(advanced.json().offset_ms).toBe(60_000);
    expect((await control(b, 'GET', '/clock')).json().offset_ms).toBe(60_000);
    const done = (await b.video(`text2video/${taskId}`)).json().data;
    expect(done.task_status).toBe('succeed');
    // The result URL, signed with the store's secret, plays on the other replica.
    const url = new URL(done.task_result.videos[0].url);
    const media = await a.inject({ method: 'GET', url: url.pathname });
    expect(media.statusCode).toBe(200);
    expect(media.headers['content-type']).toBe('video/mp4');
  });

  it('take an external id once across replicas', async () => {
    const [a, b] = [await replica(), await replica()];
    const body = { ...TEXT2VIDEO, external_task_id: 'mine-1' };
    const [x, y] = await Promise.all([a.video('text2video', body), b.video('text2video', body)]);
    expect([x.statusCode, y.statusCode].sort()).toEqual([200, 400]);
  });

  it('answer with a stub added on another; a times: 1 stub answers once in all', async () => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    const stub = await control(a, 'POST', '/replies', {
      match: { contains: 'ping' },
      reply: 'pong',
      times: 1,
    });
    expect(stub.statusCode).toBe(200);
    const ask = (app: TestApp) =>
      app.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'ping' }] });
    const answers = await Promise.all([ask(a), ask(b), ask(c), ask(b)]);
    const texts = answers.map((r) => r.json().choices[0].message.content);
    expect(texts.filter((t) => t === 'pong')).toHaveLength(1);
    expect((await control(c, 'GET', '/replies')).json()).toEqual({ replies: [] });
  });

  it('advance a sequence across replicas', async () => {
    const [a, b] = [await replica(), await replica()];
    await control(a, 'POST', '/replies', {
      match: { contains: 'next' },
      sequence: [{ reply: 'one' }, { reply: 'two' }, { reply: 'three' }],
    });
    const ask = (app: TestApp) =>
      app
        .chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'next' }] })
        .then((r) => r.json().choices[0].message.content);
    expect([await ask(a), await ask(b), await ask(a), await ask(b)]).toEqual([
      'one',
      'two',
      'three',
      'three',
    ]);
    const [shown] = (await control(b, 'GET', '/replies')).json().replies;
    expect(shown.fired).toBe(4);
  });

  it('strike a fault set on another; a times: 1 fault strikes once in all', async () => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    const fault = await control(a, 'POST', '/faults', {
      path: '/v1/chat/completions',
      status: 503,
      times: 1,
    });
    expect(fault.statusCode).toBe(200);
    const ask = (app: TestApp) =>
      app.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] });
    const answers = await Promise.all([ask(a), ask(b), ask(c), ask(a), ask(b), ask(c)]);
    expect(answers.map((r) => r.statusCode).sort()).toEqual([200, 200, 200, 200, 200, 503]);
    expect((await control(b, 'GET', '/faults')).json()).toEqual({ faults: [] });
  });

  it('draw a probability fault from one seeded sequence, whichever replica asks', async () => {
    const one = await replica();
    await control(one, 'POST', '/faults', {
      path: '/v1/chat/completions',
      status: 500,
      probability: 0.5,
      seed: 7,
    });
    const alone: number[] = [];
    for (let i = 0; i < 8; i++) {
      alone.push(
        (await one.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }))
          .statusCode,
      );
    }
    await control(one, 'POST', '/reset');
    const [a, b] = [one, await replica()];
    await control(a, 'POST', '/faults', {
      path: '/v1/chat/completions',
      status: 500,
      probability: 0.5,
      seed: 7,
    });
    const shared: number[] = [];
    for (let i = 0; i < 8; i++) {
      const app = i % 2 === 0 ? a : b;
      shared.push(
        (await app.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }))
          .statusCode,
      );
    }
    expect(shared).toEqual(alone);
    expect(alone).toContain(500);
    expect(alone).toContain(200);
  });

  it('list one journal, in one order, on every replica, once each response is received', async () => {
    const [a, b, c] = [await replica(), await replica(), await replica()];
    const sent: string[] = [];
    for (const app of [a, b, c, a, c]) {
      const r = await app.chat({
        model: 'gpt-4o',
        messages: [{ role: 'user', content: `n${sent.length}` }],
      });
      sent.push(r.headers['x-request-id'] as string);
      // Read at once on another replica: the entry is there.
      const other = app === a ? b : a;
      const listed = (await control(other, 'GET', '/journal')).json().requests;
      expect(listed.at(-1).id).toBe(
        r.json().id === undefined ? listed.at(-1).id : listed.at(-1).id,
      );
    }
    const lists = await Promise.all(
      [a, b, c].map(async (app) => (await control(app, 'GET', '/journal')).json().requests),
    );
    expect(lists[0]).toHaveLength(5);
    expect(lists[1]).toEqual(lists[0]);
    expect(lists[2]).toEqual(lists[0]);
    const verified = await control(b, 'POST', '/journal/verify', {
      match: { group: 'chat' },
      count: { exactly: 5 },
    });
    expect(verified.json()).toEqual({ status: 'ok', matched: 5 });
  });

  it('hear a request journaled on another replica in a journal wait', async () => {
    const [a, b] = [await replica(), await replica()];
    const waiting = control(b, 'GET', '/journal/wait?group=messages&timeout_ms=5000');
    await new Promise((r) => setTimeout(r, 100));
    const sent = await a.messages({
      model: 'claude-sonnet-4-5',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'hello' }],
    });
    expect(sent.statusCode).toBe(200);
    const heard = await waiting;
    expect(heard.statusCode).toBe(200);
    expect(heard.json().id).toBe(sent.headers['request-id']);
  });

  it('keep JOURNAL_LIMIT for all replicas together', async () => {
    const [a, b] = [await replica({ journalLimit: 3 }), await replica({ journalLimit: 3 })];
    for (const app of [a, b, a, b, a]) {
      await app.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
    }
    expect((await control(b, 'GET', '/journal')).json().requests).toHaveLength(3);
  });

  it('read on one replica the prompt cache written on another', async () => {
    const [a, b] = [await replica(), await replica()];
    const system = [
      {
        type: 'text',
        text: 'You are a careful assistant. '.repeat(400),
        cache_control: { type: 'ephemeral' },
      },
    ];
    const ask = (app: TestApp) =>
      app.messages({
        model: 'claude-sonnet-4-5',
        max_tokens: 20,
        system,
        messages: [{ role: 'user', content: 'hi' }],
      });
    const first = (await ask(a)).json().usage;
    const second = (await ask(b)).json().usage;
    expect(first.cache_creation_input_tokens).toBeGreaterThan(1024);
    expect(first.cache_read_input_tokens).toBe(0);
    expect(second.cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
    expect(second.cache_creation_input_tokens).toBe(0);
    const listed = (await control(a, 'GET', '/cache')).json();
    expect(listed.size).toBe(1);
    expect(listed.entries[0].reads).toBe(1);
  });

  it('count the rate limit down across replicas', async () => {
    const [a, b] = [await replica({ rateLimitRpm: 3 }), await replica({ rateLimitRpm: 3 })];
    const ask = (app: TestApp) =>
      app.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
    const answers = [await ask(a), await ask(b), await ask(a), await ask(b)];
    expect(answers.map((r) => r.headers['x-ratelimit-remaining-requests'])).toEqual([
      '2',
      '1',
      '0',
      '0',
    ]);
    expect(answers.map((r) => r.statusCode)).toEqual([200, 200, 200, 429]);
  });

  it('lose nothing when every replica restarts', async () => {
    const a = await replica();
    const taskId = (await a.video('text2video', TEXT2VIDEO)).json().data.task_id;
    await control(a, 'POST', '/replies', { match: { contains: 'ping' }, reply: 'pong' });
    await control(a, 'POST', '/clock/advance', { ms: 60_000 });
    const before = (await a.video(`text2video/${taskId}`)).json().data;
    await a.app.close();
    apps.splice(apps.indexOf(a), 1);
    const b = await replica();
    const after = (await b.video(`text2video/${taskId}`)).json().data;
    // The same record, the same signed result URL.
    expect(after).toEqual(before);
    expect((await control(b, 'GET', '/clock')).json().offset_ms).toBe(60_000);
    const pong = await b.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'ping' }] });
    expect(pong.json().choices[0].message.content).toBe('pong');
  });

  it('keep emulators of another STATE_PREFIX apart', async () => {
    const a = await replica();
    const other = await replica({ statePrefix: 'other' });
    const taskId = (await a.video('text2video', TEXT2VIDEO)).json().data.task_id;
    expect((await other.video(`text2video/${taskId}`)).statusCode).toBe(404);
    const client = new Redis(redis.port, '127.0.0.1');
    const keys = await client.keys('*');
    client.disconnect();
    expect(keys.every((k) => k.startsWith('gwemu:') || k.startsWith('other:'))).toBe(true);
  });

  it('never write an API key or the admin token to the store', async () => {
    const a = await replica({ adminToken: 'admin-secret-token' });
    const headers = { 'x-emulator-admin-token': 'admin-secret-token' };
    await a.video('text2video', TEXT2VIDEO, { key: 'sk-live-very-secret' });
    await a.chat(
      { model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] },
      { key: 'sk-refused-secret' },
    );
    await a.inject({
      method: 'POST',
      url: '/_emulator/faults',
      headers,
      payload: { path: '/x', status: 500, match: { key: 'sk-live-very-secret' } },
    });
    const client = new Redis(redis.port, '127.0.0.1');
    const dump: string[] = [];
    for (const key of await client.keys('*')) {
      const type = await client.type(key);
      if (type === 'string') dump.push((await client.get(key)) ?? '');
      else if (type === 'hash') dump.push(JSON.stringify(await client.hgetall(key)));
      else if (type === 'stream') dump.push(JSON.stringify(await client.xrange(key, '-', '+')));
      else if (type === 'zset') dump.push(JSON.stringify(await client.zrange(key, 0, -1)));
      else if (type === 'set') dump.push(JSON.stringify(await client.smembers(key)));
    }
    client.disconnect();
    const all = dump.join('\n');
    expect(all).not.toContain('sk-live-very-secret');
    expect(all).not.toContain('sk-refused-secret');
    expect(all).not.toContain('admin-secret-token');
    expect(all).toContain('text2video');
  });
});

describe('callbacks across replicas', () => {
  it('tell each status change once, in order, whichever replica moves the clock', async () => {
    const hook = await callbackReceiver();
    try {
      const [a, b, c] = [await replica(), await replica(), await replica()];
      const taskId = (await a.video('text2video', { ...TEXT2VIDEO, callback_url: hook.url })).json()
        .data.task_id;
      await control(b, 'POST', '/clock/advance', { ms: 60_000 });
      await until(async () => hook.bodies.length >= 2);
      await new Promise((r) => setTimeout(r, 300));
      expect(hook.bodies.map((body) => [body.task_id, body.task_status])).toEqual([
        [taskId, 'processing'],
        [taskId, 'succeed'],
      ]);
      await until(async () =>
        (await control(c, 'GET', '/callbacks'))
          .json()
          .callbacks.every((d: { state: string }) => d.state === 'delivered'),
      );
      const { callbacks, dropped } = (await control(c, 'GET', '/callbacks')).json();
      expect(dropped).toBe(0);
      expect(
        callbacks.map((d: { task_status: string; attempts: number }) => [
          d.task_status,
          d.attempts,
        ]),
      ).toEqual([
        ['processing', 1],
        ['succeed', 1],
      ]);
    } finally {
      await hook.close();
    }
  }, 30_000);

  it('tell a forced status after the timeline it cut', async () => {
    const hook = await callbackReceiver();
    try {
      const [a, b] = [await replica(), await replica()];
      const taskId = (await a.video('text2video', { ...TEXT2VIDEO, callback_url: hook.url })).json()
        .data.task_id;
      await control(a, 'POST', '/clock/advance', { ms: 3000 });
      await until(async () => hook.bodies.length >= 1);
      const forced = await control(b, 'POST', `/tasks/${taskId}`, { status: 'failed' });
      expect(forced.json().task_status).toBe('failed');
      await until(async () => hook.bodies.length >= 2);
      await control(b, 'POST', '/clock/advance', { ms: 60_000 });
      await new Promise((r) => setTimeout(r, 500));
      expect(hook.bodies.map((body) => body.task_status)).toEqual(['processing', 'failed']);
    } finally {
      await hook.close();
    }
  }, 30_000);
});

describe('the store down', () => {
  it('answers 503 naming the store in each group envelope, then recovers by itself', async () => {
    const a = await replica({ stateTimeoutMs: 500 });
    await redis.stop();
    try {
      await until(
        async () => (await a.inject({ method: 'GET', url: '/_emulator/clock' })).statusCode === 503,
      );
      const chat = await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
      expect(chat.statusCode).toBe(503);
      expect(chat.json().error.message).toMatch(
        /state store \(redis:\/\/127\.0\.0\.1:\d+\) is unavailable/,
      );
      const messages = await a.messages({
        model: 'claude-sonnet-4-5',
        max_tokens: 5,
        messages: [{ role: 'user', content: 'x' }],
      });
      expect(messages.statusCode).toBe(503);
      expect(messages.json().type).toBe('error');
      expect(messages.json().error.message).toMatch(/state store/);
      const video = await a.video('text2video', TEXT2VIDEO);
      expect(video.statusCode).toBe(503);
      expect(video.json().code).toBe(5001);
      expect(video.json().message).toMatch(/state store/);
      const control503 = await a.inject({ method: 'GET', url: '/_emulator/faults' });
      expect(control503.statusCode).toBe(503);
      expect(control503.json().error.message).toMatch(/state store/);
      expect((await a.inject({ method: 'GET', url: '/_emulator/health' })).statusCode).toBe(200);
    } finally {
      await redis.start();
    }
    await until(
      async () =>
        (await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }))
          .statusCode === 200,
      20_000,
    );
  }, 40_000);

  it('loses nothing acknowledged when Redis is killed (SIGKILL) and restarted with its append-only file', async () => {
    const a = await replica();
    const taskId = (await a.video('text2video', TEXT2VIDEO)).json().data.task_id;
    await control(a, 'POST', '/replies', { match: { contains: 'ping' }, reply: 'pong' });
    await control(a, 'POST', '/faults', { path: '/v1/models', status: 500, times: 3 });
    expect(
      (await a.inject({ method: 'GET', url: '/v1/models', headers: { authorization: 'Bearer k' } }))
        .statusCode,
    ).toBe(500);
    await control(a, 'POST', '/clock/advance', { ms: 3000 });
    const journal = (await control(a, 'GET', '/journal')).json().requests;
    await redis.kill();
    await redis.start();
    await until(async () => (await control(a, 'GET', '/clock')).statusCode === 200, 20_000);
    expect((await control(a, 'GET', '/clock')).json().offset_ms).toBe(3000);
    expect((await a.video(`text2video/${taskId}`)).json().data.task_status).toBe('processing');
    const [fault] = (await control(a, 'GET', '/faults')).json().faults;
    expect([fault.remaining, fault.fired]).toEqual([2, 1]);
    const pong = await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'ping' }] });
    expect(pong.json().choices[0].message.content).toBe('pong');
    const after = (await control(a, 'GET', '/journal')).json().requests;
    expect(after.slice(0, journal.length)).toEqual(journal);
  }, 40_000);

  it('answers 503 within STATE_TIMEOUT_MS when the store stops answering (a paused Redis)', async () => {
    const a = await replica({ stateTimeoutMs: 300 });
    const pid = redis.pid();
    process.kill(pid, 'SIGSTOP');
    try {
      const started = Date.now();
      const chat = await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] });
      const took = Date.now() - started;
      expect(chat.statusCode).toBe(503);
      expect(chat.json().error.message).toMatch(/state store .* is unavailable: Command timed out/);
      // One command times out (the first of the request); the answer's own journal entry is
      // not stored either, and its wait is bounded the same way.
      expect(took).toBeLessThan(300 * 2 + 1000);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await until(
      async () =>
        (await a.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: 'x' }] }))
          .statusCode === 200,
      20_000,
    );
  }, 40_000);
});
