import { afterEach, describe, expect, it } from 'vitest';
import { MAX_STATS_WATCHERS } from '../../src/harness/stats.js';
import { buildTestApp, handTimerDeps, T0, type TestApp } from '../helpers/app.js';

let t: TestApp;
const readers: Array<ReadableStreamDefaultReader<string>> = [];
afterEach(async () => {
  for (const reader of readers.splice(0)) await reader.cancel().catch(() => {});
  await t?.app.close();
});

interface Event {
  event: string;
  data: Record<string, unknown>;
}

/** `GET /_emulator/stats/stream` read as events: `next()` resolves with the next one. */
async function watch(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
  const reader = (res.body as ReadableStream<Uint8Array>)
    .pipeThrough(new TextDecoderStream())
    .getReader();
  readers.push(reader);
  let text = '';
  const next = async (): Promise<Event> => {
    for (;;) {
      const end = text.indexOf('\n\n');
      if (end !== -1) {
        const frame = text.slice(0, end);
        text = text.slice(end + 2);
        const event = /^event: (.*)$/m.exec(frame)?.[1] as string;
        const data = /^data: (.*)$/m.exec(frame)?.[1] as string;
        return { event, data: JSON.parse(data) };
      }
      const { value, done } = await reader.read();
      if (done) throw new Error('the stream ended');
      text += value;
    }
  };
  return next;
}

const advance = (ms: number) =>
  t.inject({ method: 'POST', url: '/_emulator/clock/advance', payload: { ms } });
const stats = async (query: string, headers: Record<string, string> = {}) =>
  (await t.inject({ url: `/_emulator/stats${query}`, headers })).json();

describe('GET /_emulator/stats/stream', () => {
  it('sends the window so far, then each step as it closes on the emulator clock', async () => {
    const { deps, timers } = handTimerDeps();
    t = await buildTestApp({}, deps, false);
    const base = `${await t.app.listen({ port: 0, host: '127.0.0.1' })}/_emulator/stats/stream`;
    const next = await watch(`${base}?window_s=20&step_s=5`);
    // The window as GET /stats answers it.
    expect(await next()).toEqual({ event: 'window', data: await stats('?window_s=20&step_s=5') });
    // A timer for the end of the step under way (the clock is frozen: it closes nothing).
    expect(timers.map((timer) => timer.ms)).toEqual([5000]);

    expect(
      (await t.chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })).statusCode,
    ).toBe(200);
    expect((await t.chat({ model: 'm' })).statusCode).toBe(400);
    const during = (await stats('?window_s=5&step_s=5')).steps[0];
    // Two steps close with an advance of 10 s: one event each, oldest first.
    await advance(10_000);
    const first = await next();
    expect(first).toEqual({
      event: 'step',
      data: {
        now: T0 + 10_000,
        step_s: 5,
        step: during,
        tasks: { submitted: 0, processing: 0, succeed: 0, failed: 0 },
      },
    });
    // The step after it, empty, as GET /stats now shows it.
    expect(await next()).toEqual({
      event: 'step',
      data: { ...first.data, step: (await stats('?window_s=10&step_s=5')).steps[0] },
    });
  });

  it("sends one session's with its header, and at most a window's steps after a long jump", async () => {
    const { deps } = handTimerDeps();
    t = await buildTestApp({}, deps, false);
    const base = `${await t.app.listen({ port: 0, host: '127.0.0.1' })}/_emulator/stats/stream`;
    const headers = { 'x-emulator-session': 'a' };
    const next = await watch(`${base}?window_s=10&step_s=5`, headers);
    expect(await next()).toEqual({
      event: 'window',
      data: await stats('?window_s=10&step_s=5', headers),
    });
    await t.chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    await t.chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { headers });
    const mine = (await stats('?window_s=5&step_s=5', headers)).steps[0];
    expect(mine.groups.chat.requests).toEqual({ '2xx': 1, '4xx': 0, '5xx': 0, aborted: 0 });
    await advance(3_600_000);
    // The window is two steps: the step with the requests is long gone, the last two are sent.
    const events = [await next(), await next()];
    expect(events.map((e) => (e.data.step as { at: number }).at)).toEqual([
      T0 + 3_590_000,
      T0 + 3_595_000,
    ]);
    await advance(5000);
    expect(((await next()).data.step as { at: number }).at).toBe(T0 + 3_600_000);
  });

  it(`refuses a stream past ${MAX_STATS_WATCHERS} at once, and a bad step naming it`, async () => {
    const { deps } = handTimerDeps();
    t = await buildTestApp({}, deps, false);
    const base = `${await t.app.listen({ port: 0, host: '127.0.0.1' })}/_emulator/stats/stream`;
    for (let i = 0; i < MAX_STATS_WATCHERS; i++) await watch(base);
    const refused = await fetch(base);
    expect(refused.status).toBe(429);
    expect(await refused.json()).toEqual({
      error: {
        type: 'invalid_request_error',
        message: `At most ${MAX_STATS_WATCHERS} live stats streams at once.`,
      },
    });
    const bad = await t.inject({ url: '/_emulator/stats/stream?step_s=1.5' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.message).toContain('step_s');
  });
});

describe('HEAD of the live streams', () => {
  it("answers each its GET's headers at once and holds no stream's slot", async () => {
    const { deps } = handTimerDeps();
    t = await buildTestApp({}, deps, false);
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const headers = (res: Response) => ({
      status: res.status,
      type: res.headers.get('content-type'),
      cache: res.headers.get('cache-control'),
      buffering: res.headers.get('x-accel-buffering'),
    });
    const expected = {
      status: 200,
      type: 'text/event-stream; charset=utf-8',
      cache: 'no-cache',
      buffering: 'no',
    };
    for (const path of ['/_emulator/stats/stream', '/_emulator/journal/stream']) {
      for (let i = 0; i < MAX_STATS_WATCHERS + 5; i++) {
        const head = await fetch(`${address}${path}`, { method: 'HEAD' });
        expect([path, i, headers(head)]).toEqual([path, i, expected]);
      }
      // every slot is still free: a live stream opens, with the same headers
      const live = await fetch(`${address}${path}`);
      expect([path, headers(live)]).toEqual([path, expected]);
      await live.body?.cancel();
    }
  });
});
