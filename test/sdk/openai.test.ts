import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateReply } from '../../src/lib/reply.js';
import { countTokens } from '../../src/lib/tokens.js';
import { type Emulator, startEmulator } from '../../src/start.js';

let emulator: Emulator;
let client: OpenAI;

beforeAll(async () => {
  emulator = await startEmulator({ apiKeys: ['sk-test'], logLevel: 'silent' });
  client = new OpenAI({ apiKey: 'sk-test', baseURL: `${emulator.url}/v1`, maxRetries: 0 });
});
afterAll(() => emulator.close());

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
