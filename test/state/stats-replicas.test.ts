import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { Stats } from '../../src/harness/stats.js';
import { buildTestApp, T0, type TestApp, testDeps } from '../helpers/app.js';
import { type RedisServer, startRedis } from '../helpers/redis.js';

/**
 * Two emulators on one real redis-server: a request answered by one counts in the stats every
 * replica reads (docs/replicas.md, docs/dashboard.md).
 */

let redis: RedisServer;
const apps: TestApp[] = [];
beforeAll(async () => {
  redis = await startRedis();
}, 20_000);
afterAll(() => redis.close());
afterEach(async () => {
  for (const { app } of apps.splice(0)) await app.close();
});

async function replica(): Promise<TestApp> {
  const built = await buildTestApp({ stateUrl: redis.url, logLevel: 'silent' }, testDeps());
  apps.push(built);
  await built.app.emulator.ready();
  return built;
}

const stats = async (app: TestApp, query: string, headers: Record<string, string> = {}) => {
  const res = await app.inject({ url: `/_emulator/stats${query}`, headers });
  expect(res.statusCode, res.body).toBe(200);
  return res.json();
};

const hi = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
const session = (name: string) => ({ headers: { 'x-emulator-session': name } });

describe('stats across replicas', () => {
  it('sums every replica: what A answered, B reads, as memory stats of the same requests would', async () => {
    await redis.flush();
    const a = await replica();
    const b = await replica();
    const answered = [
      await a.chat(hi),
      await b.chat(hi, session('s1')),
      await a.chat({ model: 'm' }, session('s1')),
      await b.messages({
        model: 'm',
        max_tokens: 64,
        messages: [{ role: 'user', content: 'hello' }],
      }),
    ];
    expect(answered.map((r) => r.statusCode)).toEqual([200, 200, 400, 200]);
    const query = '?window_s=30&step_s=10';
    const onB = await stats(b, query);
    expect(await stats(a, query)).toEqual(onB);
    expect(await stats(a, query, { 'x-emulator-session': 's1' })).toEqual(
      await stats(b, query, { 'x-emulator-session': 's1' }),
    );

    // The same requests (from the shared journal), counted by one process's memory stats.
    const journal = (await b.inject({ url: '/_emulator/journal' })).json().requests as Array<{
      group: 'chat' | 'messages' | 'video';
      session: string;
      at: number;
      status: number;
      duration_ms: number;
    }>;
    expect(journal).toHaveLength(4);
    const usage = answered.map((r) => r.json().usage);
    const tokens = [
      {
        input: usage[0].prompt_tokens,
        cacheRead: 0,
        cacheCreation: 0,
        output: usage[0].completion_tokens,
      },
      {
        input: usage[1].prompt_tokens,
        cacheRead: 0,
        cacheCreation: 0,
        output: usage[1].completion_tokens,
      },
      undefined,
      {
        input: usage[3].input_tokens,
        cacheRead: 0,
        cacheCreation: 0,
        output: usage[3].output_tokens,
      },
    ];
    const memory = new Stats();
    for (const [i, e] of journal.entries()) {
      memory.request({
        group: e.group,
        session: e.session,
        at: e.at,
        status: e.status,
        aborted: false,
        durationMs: e.duration_ms,
        tokens: tokens[i],
      });
    }
    expect(onB).toEqual({
      now: T0,
      window_s: 30,
      step_s: 10,
      steps: await memory.steps(T0, 30, 10),
      tasks: { submitted: 0, processing: 0, succeed: 0, failed: 0 },
    });
    expect((await stats(b, query, { 'x-emulator-session': 's1' })).steps).toEqual(
      await memory.steps(T0, 30, 10, 's1'),
    );
    // A reset on one empties every replica's.
    await a.inject({ method: 'POST', url: '/_emulator/reset?only=stats' });
    expect((await stats(b, query)).steps).toEqual(await new Stats().steps(T0, 30, 10));
  });

  it("streams every replica's steps: B's live stats carry what A answered", async () => {
    await redis.flush();
    const a = await replica();
    const b = await replica();
    const url = `${await b.app.listen({ port: 0, host: '127.0.0.1' })}/_emulator/stats/stream?window_s=10&step_s=5`;
    const res = await fetch(url);
    const reader = (res.body as ReadableStream<Uint8Array>)
      .pipeThrough(new TextDecoderStream())
      .getReader();
    let text = '';
    const next = async () => {
      for (;;) {
        const end = text.indexOf('\n\n');
        if (end !== -1) {
          const frame = text.slice(0, end);
          text = text.slice(end + 2);
          return {
            event: /^event: (.*)$/m.exec(frame)?.[1],
            data: JSON.parse(/^data: (.*)$/m.exec(frame)?.[1] as string),
          };
        }
        const { value, done } = await reader.read();
        if (done) throw new Error('the stream ended');
        text += value;
      }
    };
    try {
      expect((await next()).event).toBe('window');
      expect((await a.chat(hi)).statusCode).toBe(200);
      const during = (await stats(a, '?window_s=5&step_s=5')).steps[0];
      expect(during.groups.chat.requests).toEqual({ '2xx': 1, '4xx': 0, '5xx': 0, aborted: 0 });
      await b.inject({ method: 'POST', url: '/_emulator/clock/advance', payload: { ms: 5000 } });
      expect(await next()).toEqual({
        event: 'step',
        data: {
          now: T0 + 5000,
          step_s: 5,
          step: during,
          tasks: { submitted: 0, processing: 0, succeed: 0, failed: 0 },
        },
      });
    } finally {
      await reader.cancel();
    }
  });
});
