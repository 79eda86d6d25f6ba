import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator.js';
import { countTokens, splitTokens } from '../../src/platform/tokens.js';
import { generateReply } from '../../src/text/default-reply.js';
import { chunkOf, FIRST_FRAME, toolCallFrames } from '../helpers/chat.js';

let emulator: Emulator;
let client: OpenAI;

beforeAll(async () => {
  emulator = await startEmulator({ apiKeys: ['sk-test'], logLevel: 'silent' });
  client = new OpenAI({ apiKey: 'sk-test', baseURL: `${emulator.url}/v1`, maxRetries: 0 });
});
afterAll(() => emulator.close());

const rule = (body: object) =>
  fetch(`${emulator.url}/_emulator/faults`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const journal = async () =>
  (
    (await (await fetch(`${emulator.url}/_emulator/requests`)).json()) as {
      requests: Array<{ status: number; fault: string | null }>;
    }
  ).requests;

describe('official openai SDK against the emulator', () => {
  it('creates a chat completion', async () => {
    const completion = await client.chat.completions
      .create({
        model: 'chat-model',
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'Say hello' },
        ],
        max_completion_tokens: 100,
      })
      .withResponse();
    const text = generateReply('Say hello', 0).text;
    expect(completion.data.choices[0]?.message).toEqual({
      role: 'assistant',
      content: text,
      refusal: null,
      annotations: [],
    });
    expect(completion.data.object).toBe('chat.completion');
    expect(completion.data.usage?.completion_tokens).toBe(countTokens(text));
    expect(completion.request_id).toMatch(/^req_/);
  });

  it('streams chunks whose text equals the non-streamed text', async () => {
    const stream = await client.chat.completions.create({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'Stream me' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    let text = '';
    let usage: OpenAI.CompletionUsage | null | undefined;
    let finish: string | null = null;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      if (chunk.usage) usage = chunk.usage;
    }
    expect(text).toBe(generateReply('Stream me', 0).text);
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBe(countTokens(text));
  });

  it('works with the stream helper and its final completion', async () => {
    const runner = client.chat.completions.stream({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'Helper' }],
      max_tokens: 4,
    });
    const final = await runner.finalChatCompletion();
    expect(final.choices[0]?.message.content).toBe(
      (
        await client.chat.completions.create({
          model: 'chat-model',
          messages: [{ role: 'user', content: 'Helper' }],
          max_tokens: 4,
        })
      ).choices[0]?.message.content,
    );
    expect(final.choices[0]?.finish_reason).toBe('length');
  });

  it('streams tool calls: the SDK sees every chunk and accumulates the same calls', async () => {
    const request = {
      model: 'gpt-test',
      tools: [
        {
          type: 'function' as const,
          function: {
            name: 'get_weather',
            parameters: {
              type: 'object',
              properties: { city: { type: 'string' } },
              required: ['city'],
            },
          },
        },
        {
          type: 'function' as const,
          function: { name: 'get_time', parameters: { type: 'object', properties: {} } },
        },
      ],
      messages: [{ role: 'user' as const, content: 'get_weather and get_time please' }],
    };
    const whole = await client.chat.completions.create(request);
    const calls = whole.choices[0]?.message.tool_calls ?? [];
    expect(calls).toHaveLength(2);
    const stream = client.chat.completions.stream(request);
    const chunks: unknown[] = [];
    for await (const chunk of stream) chunks.push(chunk);
    const final = await stream.finalChatCompletion();
    expect(
      final.choices[0]?.message.tool_calls?.map((c) => c.type === 'function' && c.function),
    ).toEqual(calls.map((c) => c.type === 'function' && c.function));
    expect(final.choices[0]?.finish_reason).toBe('tool_calls');
    const head = {
      id: expect.stringMatching(/^chatcmpl-/),
      object: 'chat.completion.chunk',
      created: expect.any(Number),
      model: 'gpt-test',
      system_fingerprint: expect.stringMatching(/^fp_/),
    };
    const chunk = chunkOf(head);
    expect(chunks).toEqual([
      FIRST_FRAME,
      chunk({ role: 'assistant', content: null, refusal: null }),
      ...toolCallFrames(
        calls.map((call) => ({
          id: expect.stringMatching(/^call_/),
          ...(call.type === 'function' ? call.function : { name: '', arguments: '' }),
        })),
        chunk,
        splitTokens,
      ),
      chunk({}, 'tool_calls'),
    ]);
  });

  it('raises typed errors the SDK understands', async () => {
    const wrongKey = new OpenAI({
      apiKey: 'sk-wrong',
      baseURL: `${emulator.url}/v1`,
      maxRetries: 0,
    });
    const auth = await wrongKey.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(auth).toBeInstanceOf(OpenAI.AuthenticationError);
    expect(auth).toMatchObject({ status: 401, code: 'invalid_api_key' });

    const bad = await client.chat.completions
      .create({ model: 'm', messages: [{ role: 'user', content: 'x' }], temperature: 9 })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(OpenAI.BadRequestError);
    expect(bad).toMatchObject({ status: 400, param: 'temperature', code: 'invalid_value' });
  });
});

describe('openai SDK and injected faults', () => {
  const retrying = () =>
    new OpenAI({ apiKey: 'sk-test', baseURL: `${emulator.url}/v1`, maxRetries: 2 });
  const ask = (c: OpenAI) =>
    c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'retry me' }] });

  it('retries a one-shot 429 (honouring retry-after) and succeeds', async () => {
    emulator.reset();
    await rule({ path: '/v1/chat/completions', status: 429, times: 1, retry_after_s: 1 });
    const completion = await ask(retrying());
    expect(completion.choices[0]?.message.content).toBe(generateReply('retry me', 0).text);
    expect((await journal()).map((r) => r.status)).toEqual([429, 200]);
  });

  it('retries a one-shot 500 and a dropped connection', async () => {
    emulator.reset();
    await rule({ path: '/v1/chat/completions', status: 500, times: 1 });
    await rule({ path: '/v1/chat/completions', kind: 'disconnect', times: 1 });
    await ask(retrying());
    expect((await journal()).map((r) => [r.status, r.fault])).toEqual([
      [500, 'rule 1: error 500'],
      [0, 'rule 2: disconnect'],
      [200, null],
    ]);
  });

  it('reports a dropped connection as APIConnectionError without retries', async () => {
    emulator.reset();
    await rule({ path: '/v1/chat/completions', kind: 'disconnect', times: 1 });
    const failure = await ask(client).catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OpenAI.APIConnectionError);
  });

  it('raises an error in the middle of a stream', async () => {
    emulator.reset();
    await rule({ path: '/v1/chat/completions', kind: 'stream_error', after_events: 3, times: 1 });
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'stream then fail' }],
      stream: true,
    });
    let text = '';
    const failure = await (async () => {
      for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    })().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(OpenAI.APIError);
    expect((failure as Error).message).toContain('The server had an error');
    expect(text.length).toBeGreaterThan(0);
  });
});
