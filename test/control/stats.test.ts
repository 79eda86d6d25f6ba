import { afterEach, describe, expect, it } from 'vitest';
import { buildTestApp, T0, type TestApp, testDeps } from '../helpers/app.js';

let t: TestApp;
afterEach(() => t.app.close());

// One process's statistics (in memory; with STATE_URL, test/state/stats-replicas.test.ts).
const build = () => buildTestApp({}, testDeps(), false);
const stats = async (query = '', headers: Record<string, string> = {}) => {
  const res = await t.inject({ url: `/_emulator/stats${query}`, headers });
  expect(res.statusCode, res.body).toBe(200);
  return res.json() as {
    now: number;
    window_s: number;
    step_s: number;
    steps: Array<{ at: number; groups: Record<string, Record<string, unknown>> }>;
    tasks: Record<string, number>;
  };
};
const session = (name: string) => ({ headers: { 'x-emulator-session': name } });
const question = (content: string) => ({
  model: 'm',
  max_tokens: 64,
  messages: [{ role: 'user', content }],
});

describe('GET /_emulator/stats', () => {
  it("counts each group's requests by status class with its tokens, and tasks by status, in steps of the emulator clock", async () => {
    t = await build();
    const chat = await t.chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(chat.statusCode).toBe(200);
    expect((await t.chat({ model: 'm' })).statusCode).toBe(400);
    const message = await t.messages(question('hello'), session('a'));
    expect(message.statusCode).toBe(200);
    expect(
      (await t.video('text2video', { model_name: 'vid-v3', prompt: 'a cat', duration: '5' }))
        .statusCode,
    ).toBe(200);
    const view = await stats('?window_s=60&step_s=10');
    expect(view).toMatchObject({ now: T0, window_s: 60, step_s: 10, tasks: { submitted: 1 } });
    expect(view.steps.map((s) => s.at)).toEqual(
      [-50, -40, -30, -20, -10, 0].map((s) => T0 + s * 1000),
    );
    const now = view.steps.at(-1)?.groups ?? {};
    const usage = chat.json().usage;
    expect(now.chat).toMatchObject({
      requests: { '2xx': 1, '4xx': 1, '5xx': 0, aborted: 0 },
      rate: 0.2,
      tokens: {
        input: usage.prompt_tokens,
        cache_read: 0,
        cache_creation: 0,
        output: usage.completion_tokens,
      },
      open_streams: 0,
    });
    const m = message.json().usage;
    expect(now.messages).toMatchObject({
      requests: { '2xx': 1, '4xx': 0, '5xx': 0, aborted: 0 },
      tokens: { input: m.input_tokens, cache_read: 0, cache_creation: 0, output: m.output_tokens },
    });
    expect(now.video).toMatchObject({ requests: { '2xx': 1, '4xx': 0, '5xx': 0, aborted: 0 } });
    // Every request the journal holds is counted once.
    const journal = (await t.inject({ url: '/_emulator/journal' })).json().requests.length;
    const counted = Object.values(now).reduce(
      (sum, g) =>
        sum + Object.values(g.requests as Record<string, number>).reduce((a, b) => a + b, 0),
      0,
    );
    expect(counted).toBe(journal);
    for (const step of view.steps.slice(0, -1)) {
      expect(step.groups.chat).toEqual({
        requests: { '2xx': 0, '4xx': 0, '5xx': 0, aborted: 0 },
        rate: 0,
        latency_ms: { p50: null, p95: null, p99: null },
        tokens: { input: 0, cache_read: 0, cache_creation: 0, output: 0 },
        open_streams: 0,
      });
    }
  });

  it('counts the streams open at once in a step (the most), and none once they ended', async () => {
    t = await build();
    const streamed = await t.messages({ ...question('stream'), stream: true });
    expect(streamed.statusCode).toBe(200);
    const [step] = (await stats('?window_s=1&step_s=1')).steps;
    expect(step?.groups.messages).toMatchObject({
      requests: { '2xx': 1, '4xx': 0, '5xx': 0, aborted: 0 },
      open_streams: 1,
    });
    await t.inject({ method: 'POST', url: '/_emulator/clock/advance', payload: { ms: 5000 } });
    expect((await stats('?window_s=1&step_s=1')).steps[0]?.groups.messages?.open_streams).toBe(0);
  });

  it("reads one session's with its header, follows the clock, and is emptied by a reset", async () => {
    t = await build();
    await t.messages(question('one'), session('a'));
    await t.messages(question('two'), session('b'));
    await t.messages(question('three'), session('b'));
    const ok = async (headers: Record<string, string> = {}) => {
      const { steps } = await stats('?window_s=5&step_s=5', headers);
      return (steps[0]?.groups.messages?.requests as { '2xx': number } | undefined)?.['2xx'];
    };
    expect(await ok()).toBe(3);
    expect(await ok({ 'x-emulator-session': 'b' })).toBe(2);
    expect(await ok({ 'x-emulator-session': 'nobody' })).toBe(0);
    await t.inject({ method: 'POST', url: '/_emulator/clock/advance', payload: { ms: 60_000 } });
    expect(await ok()).toBe(0);
    expect((await stats('?window_s=65&step_s=5')).steps[0]?.groups.messages?.requests).toEqual({
      '2xx': 3,
      '4xx': 0,
      '5xx': 0,
      aborted: 0,
    });
    await t.inject({ method: 'POST', url: '/_emulator/reset?only=stats' });
    expect((await stats('?window_s=65&step_s=5')).steps[0]?.groups.messages?.requests).toEqual({
      '2xx': 0,
      '4xx': 0,
      '5xx': 0,
      aborted: 0,
    });
  });

  it('refuses a window or step out of bounds or not a whole number, naming the parameter', async () => {
    t = await build();
    expect((await stats()).steps).toHaveLength(180); // 900 s in steps of 5 s
    expect((await stats('?window_s=3600&step_s=1')).steps).toHaveLength(3600);
    for (const [query, name] of [
      ['?window_s=0', 'window_s'],
      ['?window_s=3601', 'window_s'],
      ['?window_s=1.5', 'window_s'],
      ['?window_s=x', 'window_s'],
      ['?step_s=0', 'step_s'],
      ['?step_s=301', 'step_s'],
      ['?step_s=2.5', 'step_s'],
    ] as const) {
      const res = await t.inject({ url: `/_emulator/stats${query}` });
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.message, query).toContain(name);
    }
  });
});
