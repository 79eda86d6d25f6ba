import { afterEach, describe, expect, it } from 'vitest';
import { formatDuration } from '../../src/harness/rate-limit.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
afterEach(() => t.app.close());

const chat = (key = 'k1') =>
  t.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { authorization: `Bearer ${key}` },
    payload: { model: 'm', messages: [{ role: 'user', content: 'x' }] },
  });

describe('RATE_LIMIT_RPM', () => {
  it('limits requests per key per minute, with OpenAI rate-limit headers on chat', async () => {
    t = await buildTestApp({ rateLimitRpm: 2 });
    const first = await chat();
    expect(first.headers).toMatchObject({
      'x-ratelimit-limit-requests': '2',
      'x-ratelimit-remaining-requests': '1',
      'x-ratelimit-reset-requests': '1m0s',
    });
    t.deps.clock.advance(15_500);
    expect((await chat()).headers['x-ratelimit-remaining-requests']).toBe('0');
    const limited = await chat();
    expect(limited.statusCode).toBe(429);
    expect(limited.headers).toMatchObject({
      'retry-after': '45',
      'x-ratelimit-remaining-requests': '0',
      'x-ratelimit-reset-requests': '44.5s',
    });
    expect(limited.json().error).toMatchObject({ type: 'requests', code: 'rate_limit_exceeded' });
    // another key has its own budget
    expect((await chat('k2')).statusCode).toBe(200);
    t.deps.clock.advance(44_500);
    expect((await chat()).statusCode).toBe(200);
  });

  it('keeps the rate-limit headers on streamed chat responses', async () => {
    t = await buildTestApp({ rateLimitRpm: 100 });
    const res = await t.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { authorization: 'Bearer k1' },
      payload: { model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true },
    });
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers).toMatchObject({
      'x-ratelimit-limit-requests': '100',
      'x-ratelimit-remaining-requests': '99',
      'x-request-id': 'req_1',
    });
  });

  it('answers in each group shape', async () => {
    t = await buildTestApp({ rateLimitRpm: 1 });
    const messages = () =>
      t.inject({
        method: 'POST',
        url: '/messages-api/v1/messages',
        headers: { 'x-api-key': 'k1', 'msgapi-version': '2023-06-01' },
        payload: { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
      });
    await messages();
    const res = await messages();
    expect(res.statusCode).toBe(429);
    expect(res.json().error.type).toBe('rate_limit_error');
    expect(res.headers['retry-after']).toBe('60');
    const video = await t.inject({
      url: '/videogen/v1/videos/text2video',
      headers: { authorization: 'Bearer k1' },
    });
    expect(video.statusCode).toBe(429);
    expect(video.json().code).toBe(1302);
  });

  it('is off by default', async () => {
    t = await buildTestApp();
    for (let i = 0; i < 5; i++)
      expect((await chat()).headers['x-ratelimit-limit-requests']).toBeUndefined();
  });
});

describe('formatDuration', () => {
  it.each([
    [12, '12ms'],
    [999, '999ms'],
    [1000, '1s'],
    [1500, '1.5s'],
    [60_000, '1m0s'],
    [360_000, '6m0s'],
    [61_400, '1m1s'],
  ])('%i ms is %s', (ms, text) => {
    expect(formatDuration(ms)).toBe(text);
  });
});
