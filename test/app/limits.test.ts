import { afterEach, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator.js';
import { countTokens } from '../../src/platform/tokens.js';
import { DEFAULT_LIMITS, limitsOf } from '../../src/text/models.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp | undefined;
let emulator: Emulator | undefined;
afterEach(async () => {
  await t?.app.close();
  await emulator?.close();
  t = undefined;
  emulator = undefined;
});

describe('model limits', () => {
  it('are per model, with a default row per API', () => {
    expect(limitsOf('chat', 'gpt-4o-mini')).toEqual({ contextWindow: 128_000, maxOutput: 16_384 });
    expect(limitsOf('chat', 'gpt-4.1-nano')).toEqual({
      contextWindow: 1_047_576,
      maxOutput: 32_768,
    });
    expect(limitsOf('chat', 'chat-model')).toEqual(DEFAULT_LIMITS.chat);
    expect(limitsOf('messages', 'claude-opus-4-1-20250805')).toEqual({
      contextWindow: 200_000,
      maxOutput: 32_000,
    });
    expect(limitsOf('messages', 'claude-sonnet-4-5')).toEqual({
      contextWindow: 200_000,
      maxOutput: 64_000,
    });
    expect(limitsOf('messages', 'claude-opus-4-6')).toEqual({
      contextWindow: 1_000_000,
      maxOutput: 128_000,
    });
    expect(limitsOf('messages', 'claude-like')).toEqual(DEFAULT_LIMITS.messages);
    expect(DEFAULT_LIMITS.messages.maxOutput).toBe(128_000);
  });

  it('refuse a messages max_tokens above the model output limit, and a prompt beyond its window', async () => {
    t = await buildTestApp();
    const over = await t.messages({
      model: 'claude-3-5-haiku-latest',
      max_tokens: 9000,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(over.statusCode).toBe(400);
    expect(over.json().error).toEqual({
      type: 'invalid_request_error',
      message:
        'max_tokens: 9000 > 8192, which is the maximum allowed number of output tokens for claude-3-5-haiku-latest',
    });
    const long = await t.messages({
      model: 'claude-like',
      max_tokens: 10,
      messages: [{ role: 'user', content: 'abcd '.repeat(200_001) }],
    });
    expect(long.statusCode).toBe(400);
    expect(long.json().error.message).toBe('prompt is too long: 200004 tokens > 200000 maximum');
  });

  it('stop a messages reply where the context window ends: model_context_window_exceeded', async () => {
    t = await buildTestApp();
    const body = (
      await t.messages({
        model: 'claude-like',
        max_tokens: 100,
        messages: [{ role: 'user', content: 'abcd '.repeat(199_990) }],
      })
    ).json();
    expect(body.stop_reason).toBe('model_context_window_exceeded');
    expect(body.usage.output_tokens).toBe(200_000 - 199_993);
  });

  it('refuse a chat completion limit above the model output limit, and prompts beyond the window', async () => {
    t = await buildTestApp();
    const over = await t.chat({
      model: 'gpt-4o',
      max_completion_tokens: 20_000,
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(over.json()).toEqual({
      error: {
        message:
          'max_completion_tokens is too large: 20000. This model supports at most 16384 completion tokens, whereas you provided 20000.',
        type: 'invalid_request_error',
        param: 'max_completion_tokens',
        code: 'invalid_value',
      },
    });
    const prompt = 'abcd '.repeat(127_990);
    const tokens = 3 + 127_990 + 3;
    const withLimit = await t.chat({
      model: 'gpt-4o',
      max_tokens: 100,
      messages: [{ role: 'user', content: prompt }],
    });
    expect(withLimit.json()).toEqual({
      error: {
        message: `This model's maximum context length is 128000 tokens. However, you requested ${tokens + 100} tokens (${tokens} in the messages, 100 in the completion). Please reduce the length of the messages or completion.`,
        type: 'invalid_request_error',
        param: 'messages',
        code: 'context_length_exceeded',
      },
    });
    const tooLong = await t.chat({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'abcd '.repeat(128_000) }],
    });
    expect(tooLong.json().error.message).toBe(
      "This model's maximum context length is 128000 tokens. However, your messages resulted in 128006 tokens. Please reduce the length of the messages.",
    );
    // Without a limit, a reply takes what the window leaves.
    const fits = (
      await t.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: prompt }] })
    ).json();
    expect(fits.usage.completion_tokens).toBeLessThanOrEqual(128_000 - tokens);
  });

  it('answer an 8 MB body with n: 128 with a 400 naming the window, never a 5xx', async () => {
    t = await buildTestApp();
    const res = await t.chat({
      model: 'gpt-4o',
      n: 128,
      messages: [{ role: 'user', content: 'x '.repeat(4_000_000) }],
    });
    expect({ status: res.statusCode, body: res.json() }).toEqual({
      status: 400,
      body: {
        error: {
          message:
            "This model's maximum context length is 128000 tokens. However, your messages resulted in 4000006 tokens. Please reduce the length of the messages.",
          type: 'invalid_request_error',
          param: 'messages',
          code: 'context_length_exceeded',
        },
      },
    });
  });

  it('bound an echo of a long prompt by the output limit', async () => {
    t = await buildTestApp();
    const prompt = `[demo] echo ${'word '.repeat(60_000)}`;
    const body = (
      await t.chat({ model: 'gpt-4o', messages: [{ role: 'user', content: prompt }] })
    ).json();
    expect(body.choices[0].finish_reason).toBe('length');
    expect(countTokens(body.choices[0].message.content)).toBe(16_384);
  });

  it('keep memory bounded for n: 128, stream: true and a 300 KB prompt through the echo rule', async () => {
    emulator = await startEmulator({ logLevel: 'silent' });
    global.gc?.();
    const before = process.memoryUsage().rss;
    const res = await fetch(`${emulator.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'chat-model',
        n: 128,
        stream: true,
        messages: [{ role: 'user', content: `[demo] echo ${'word '.repeat(60_000)}` }],
      }),
    });
    expect(res.status).toBe(200);
    const reader = res.body?.getReader();
    let received = 0;
    let peak = 0;
    while (received < 64 * 1024 * 1024) {
      const chunk = await reader?.read();
      if (!chunk || chunk.done) break;
      received += chunk.value.length;
      peak = Math.max(peak, process.memoryUsage().rss - before);
    }
    await reader?.cancel();
    expect(received).toBeGreaterThanOrEqual(64 * 1024 * 1024);
    // The whole response is about 800 MB; the server holds a chunk of it at a time.
    expect(peak).toBeLessThan(400 * 1024 * 1024);
  }, 60_000);
});
