import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemFingerprint } from '../../src/chat/service.js';
import { startEmulator } from '../../src/emulator.js';
import { countTokens, splitTokens } from '../../src/platform/tokens.js';
import { generateReply } from '../../src/text/default-reply.js';
import { buildTestApp, countingWait, parseSse, T0, type TestApp } from '../helpers/app.js';
import { CHOICE_FILTERS, PROMPT_FILTERS } from '../helpers/chat.js';

const AUTH = { authorization: 'Bearer test-key' };

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const stream = (payload: object) =>
  t.inject({ method: 'POST', url: '/v1/chat/completions', headers: AUTH, payload });

describe('streamed chat completions', () => {
  it('sends the Azure-style frame sequence, then [DONE]', async () => {
    const res = await stream({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'Hello there' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers['x-request-id']).toBe('req_1');
    expect(res.body.endsWith('data: [DONE]\n\n')).toBe(true);

    const text = generateReply('Hello there', 0).text;
    const head = {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: T0 / 1000,
      model: 'chat-model',
      system_fingerprint: systemFingerprint('chat-model'),
    };
    const content = splitTokens(text).map((piece) => ({
      data: {
        ...head,
        choices: [
          {
            index: 0,
            delta: { content: piece },
            logprobs: null,
            finish_reason: null,
            content_filter_results: CHOICE_FILTERS,
          },
        ],
        usage: null,
      },
    }));
    expect(parseSse(res.body)).toEqual([
      {
        data: {
          choices: [],
          created: 0,
          id: '',
          model: '',
          object: '',
          prompt_filter_results: PROMPT_FILTERS,
        },
      },
      {
        data: {
          ...head,
          choices: [
            {
              index: 0,
              delta: { role: 'assistant', content: '', refusal: null },
              logprobs: null,
              finish_reason: null,
              content_filter_results: {},
            },
          ],
          usage: null,
        },
      },
      ...content,
      {
        data: {
          ...head,
          choices: [
            {
              index: 0,
              delta: {},
              logprobs: null,
              finish_reason: 'stop',
              content_filter_results: {},
            },
          ],
          usage: null,
        },
      },
      {
        data: {
          ...head,
          choices: [],
          usage: {
            prompt_tokens: 10,
            completion_tokens: countTokens(text),
            total_tokens: 10 + countTokens(text),
            completion_tokens_details: {
              accepted_prediction_tokens: 0,
              audio_tokens: 0,
              reasoning_tokens: 0,
              rejected_prediction_tokens: 0,
            },
            prompt_tokens_details: { audio_tokens: 0, cached_tokens: 0 },
          },
        },
      },
      { data: '[DONE]' },
    ]);
  });

  it('streams exactly the non-streamed text, with no usage fields unless asked', async () => {
    const payload = {
      model: 'm',
      messages: [{ role: 'user', content: 'same text please' }],
      max_tokens: 7,
      n: 2,
    };
    const plain = (
      await t.inject({ method: 'POST', url: '/v1/chat/completions', headers: AUTH, payload })
    ).json();
    const frames = parseSse((await stream({ ...payload, stream: true })).body);
    const chunks = frames.slice(1, -1).map((f) => f.data as Record<string, unknown>);
    for (const chunk of chunks) expect(chunk).not.toHaveProperty('usage');
    for (const index of [0, 1]) {
      const mine = chunks
        .flatMap((c) => c.choices as Array<Record<string, unknown>>)
        .filter((c) => c.index === index);
      const streamed = mine.map((c) => (c.delta as { content?: string }).content ?? '').join('');
      expect(streamed).toBe(plain.choices[index].message.content);
      expect(mine.at(-1)?.finish_reason).toBe('length');
      expect(mine.slice(0, -1).every((c) => c.finish_reason === null)).toBe(true);
    }
  });

  it('paces frames with the configured first-token and chunk delays', async () => {
    const app = await buildTestApp({ streamTtftMs: 250, streamChunkDelayMs: 20 });
    const res = await app.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: AUTH,
      payload: { model: 'm', messages: [{ role: 'user', content: 'pace' }], stream: true },
    });
    expect(res.body.endsWith('data: [DONE]\n\n')).toBe(true);
    const tokens = countTokens(generateReply('pace', 0).text);
    // first content frame waits 250; every later content frame and the finish frame wait 20
    expect(app.deps.sleeps).toEqual([250, ...Array(tokens).fill(20)]);
    await app.app.close();
  });
});

describe('stream pacing controls', () => {
  it('takes the chunk delay of one request from x-emulator-stream-delay-ms', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { ...AUTH, 'x-emulator-stream-delay-ms': '5' },
      payload: { model: 'm', messages: [{ role: 'user', content: 'pace' }], stream: true },
    });
    expect(res.statusCode).toBe(200);
    const tokens = countTokens(generateReply('pace', 0).text);
    expect(t.deps.sleeps).toEqual(Array(tokens).fill(5));
    const bad = await t.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { ...AUTH, 'x-emulator-stream-delay-ms': 'slow' },
      payload: { model: 'm', messages: [{ role: 'user', content: 'pace' }], stream: true },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.message).toBe(
      'x-emulator-stream-delay-ms must be a whole number of milliseconds from 0 to 60000',
    );
  });

  it.each([
    [
      'chat',
      '/v1/chat/completions',
      { authorization: 'Bearer k' },
      { model: 'm', messages: [{ role: 'user', content: 'x' }], stream: true },
    ],
    [
      'messages',
      '/messages-api/v1/messages',
      { 'x-api-key': 'k', 'msgapi-version': '2023-06-01' },
      { model: 'm', max_tokens: 500, messages: [{ role: 'user', content: 'x' }], stream: true },
    ],
  ])(
    'stops the %s writer and its timers as soon as the client goes away',
    async (_name, url, headers, body) => {
      const waits = { count: 0 };
      const emulator = await startEmulator({
        logLevel: 'silent',
        streamChunkDelayMs: 10,
        deps: { wait: countingWait(waits) },
      });
      const controller = new AbortController();
      const res = await fetch(`${emulator.url}${url}`, {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: controller.signal,
      });
      const reader = res.body?.getReader();
      await reader?.read();
      controller.abort();
      await new Promise((r) => setTimeout(r, 30));
      const atAbort = waits.count;
      await new Promise((r) => setTimeout(r, 100));
      expect(waits.count).toBe(atAbort);
      expect(waits.count).toBeLessThan(countTokens(generateReply('x', 0).text));
      await emulator.close();
    },
  );
});
