import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { Metrics, PENDING_DURATIONS } from '../../src/harness/metrics.js';
import { type Emulator, startEmulator } from '../../src/index.js';

let emu: Emulator;
let hook: Server | undefined;
afterEach(async () => {
  await emu?.close();
  hook?.close();
  hook = undefined;
});

const post = (path: string, body: object, headers: Record<string, string>) =>
  fetch(`${emu.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
  });
const CHAT = { authorization: 'Bearer k' };
const MESSAGES = { 'x-api-key': 'k', 'msgapi-version': '2023-06-01' };

/** The value of one sample line, e.g. `emulator_requests_total{group="chat",status="200"}`. */
const sample = (text: string, series: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};

describe('GET /_emulator/metrics', () => {
  it('counts requests by group and status, streams, cache hits and misses, tasks, callbacks', async () => {
    emu = await startEmulator({ callbackAllowedHosts: ['127.0.0.1'] });
    hook = createServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => hook?.listen(0, '127.0.0.1', resolve));
    const hookPort = (hook.address() as { port: number }).port;

    const ask = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
    await post('/v1/chat/completions', ask, CHAT);
    await post('/v1/chat/completions', ask, CHAT);
    await post('/v1/chat/completions', ask, {});
    await (await post('/v1/chat/completions', { ...ask, stream: true }, CHAT)).text();
    const cached = {
      model: 'claude-x',
      max_tokens: 20,
      system: [
        { type: 'text', text: 'policy '.repeat(1500), cache_control: { type: 'ephemeral' } },
      ],
      messages: [{ role: 'user', content: 'hi' }],
    };
    await post('/messages-api/v1/messages', cached, MESSAGES);
    await post('/messages-api/v1/messages', cached, MESSAGES);
    await post(
      '/videogen/v1/videos/text2video',
      {
        model_name: 'vid-v1-6',
        prompt: 'a cat',
        duration: '5',
        callback_url: `http://127.0.0.1:${hookPort}/hook`,
      },
      CHAT,
    );
    emu.clock.advance(2000);
    await emu.app.emulator.callbacks.idle();

    const res = await fetch(`${emu.url}/_emulator/metrics`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await res.text();
    expect(sample(text, 'emulator_requests_total{group="chat",status="200"}')).toBe(3);
    expect(sample(text, 'emulator_requests_total{group="chat",status="401"}')).toBe(1);
    expect(sample(text, 'emulator_requests_total{group="messages",status="200"}')).toBe(2);
    expect(sample(text, 'emulator_requests_total{group="video",status="200"}')).toBe(1);
    expect(
      sample(text, 'emulator_stream_duration_seconds_count{group="chat",outcome="completed"}'),
    ).toBe(1);
    expect(
      sample(text, 'emulator_prompt_cache_lookups_total{group="messages",result="miss"}'),
    ).toBe(1);
    expect(sample(text, 'emulator_prompt_cache_lookups_total{group="messages",result="hit"}')).toBe(
      1,
    );
    expect(sample(text, 'emulator_video_tasks{status="processing"}')).toBe(1);
    expect(sample(text, 'emulator_video_tasks{status="succeed"}')).toBe(0);
    expect(sample(text, 'emulator_callback_attempts_total{outcome="delivered"}')).toBe(1);
    expect(text).toContain('# TYPE emulator_stream_duration_seconds histogram');
    emu.clock.advance(60_000);
    const later = await (await fetch(`${emu.url}/_emulator/metrics`)).text();
    expect(sample(later, 'emulator_video_tasks{status="succeed"}')).toBe(1);
  });

  it('needs the admin token when one is set', async () => {
    emu = await startEmulator({ adminToken: 'admin' });
    expect((await fetch(`${emu.url}/_emulator/metrics`)).status).toBe(401);
    const ok = await fetch(`${emu.url}/_emulator/metrics`, {
      headers: { 'x-emulator-admin-token': 'admin' },
    });
    expect(ok.status).toBe(200);
  });

  it('counts everything before the first scrape loads prom-client; stream durations up to the bound', async () => {
    const metrics = new Metrics(() => new Map([['succeed', 2]]));
    for (let i = 0; i < 25_000; i++) metrics.request('chat', 200);
    metrics.request('messages', 429);
    metrics.cacheLookup('messages', true);
    metrics.callback('delivered');
    for (let i = 0; i < PENDING_DURATIONS + 7; i++) metrics.stream('chat', 0.001, true);
    const { body } = await metrics.text();
    expect(sample(body, 'emulator_requests_total{group="chat",status="200"}')).toBe(25_000);
    expect(sample(body, 'emulator_requests_total{group="messages",status="429"}')).toBe(1);
    expect(sample(body, 'emulator_prompt_cache_lookups_total{group="messages",result="hit"}')).toBe(
      1,
    );
    expect(sample(body, 'emulator_callback_attempts_total{outcome="delivered"}')).toBe(1);
    expect(
      sample(body, 'emulator_stream_duration_seconds_count{group="chat",outcome="completed"}'),
    ).toBe(PENDING_DURATIONS);
    expect(sample(body, 'emulator_metrics_dropped')).toBe(7);
    expect(sample(body, 'emulator_video_tasks{status="succeed"}')).toBe(2);
    // Once loaded, observations go straight to prom-client.
    metrics.request('chat', 200);
    metrics.stream('chat', 0.001, true);
    const after = (await metrics.text()).body;
    expect(sample(after, 'emulator_requests_total{group="chat",status="200"}')).toBe(25_001);
    expect(
      sample(after, 'emulator_stream_duration_seconds_count{group="chat",outcome="completed"}'),
    ).toBe(PENDING_DURATIONS + 1);
  });

  it("adds the process's own metrics (prom-client defaults), set up once for every app", async () => {
    const one = await new Metrics(() => new Map()).text();
    const two = await new Metrics(() => new Map()).text();
    for (const { body } of [one, two]) {
      expect(sample(body, 'process_resident_memory_bytes')).toBeGreaterThan(0);
      expect(sample(body, 'nodejs_eventloop_lag_p99_seconds')).toBeGreaterThanOrEqual(0);
      expect(body).toContain('# TYPE nodejs_gc_duration_seconds histogram');
    }
    expect(sample(two.body, 'process_start_time_seconds')).toBe(
      sample(one.body, 'process_start_time_seconds'),
    );
  });
});
