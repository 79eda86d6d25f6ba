import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Automatic prompt caching of chat completions: a repeated prefix of whole messages of at least
 * 1024 tokens is reported in `cached_tokens`, in 128-token steps.
 * @see https://platform.openai.com/docs/guides/prompt-caching
 */

const words = (n: number, word = 'abcd') => `${word} `.repeat(n);

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const advance = (ms: number) => t.deps.clock.advance(ms);

describe('chat completions automatic caching', () => {
  const chat = (system: string, key = 'key-a') =>
    t.chat(
      {
        model: 'chat-model',
        messages: [
          { role: 'system', content: system },
          { role: 'user', content: 'hi' },
        ],
      },
      { key },
    );
  const cachedTokens = async (system: string, key?: string) =>
    (await chat(system, key)).json().usage.prompt_tokens_details.cached_tokens as number;

  it('reports a repeated prefix of at least 1024 tokens in 128-token steps', async () => {
    // prefix: 3 + 2000, then 3 + 1 = 2007 tokens; 2007 rounds down to 1920
    expect(await cachedTokens(words(2000))).toBe(0);
    expect(await cachedTokens(words(2000))).toBe(1920);
    expect(await cachedTokens(words(500))).toBe(0);
    expect(await cachedTokens(words(500))).toBe(0);
  });

  it('is per key and follows the TTL', async () => {
    await cachedTokens(words(2000));
    expect(await cachedTokens(words(2000), 'key-b')).toBe(0);
    advance(300_000);
    expect(await cachedTokens(words(2000))).toBe(0);
    expect(await cachedTokens(words(2000))).toBe(1920);
  });

  it('starts at 1024 tokens whatever PROMPT_CACHE_MIN_TOKENS says', async () => {
    await t.app.close();
    t = await buildTestApp({ promptCacheMinTokens: 100 });
    await cachedTokens(words(300));
    expect(await cachedTokens(words(300))).toBe(0);
    await cachedTokens(words(1100));
    expect(await cachedTokens(words(1100))).toBe(1024);
  });

  it('keeps prompt_tokens whole: cached tokens are a part of them', async () => {
    await chat(words(2000));
    const usage = (await chat(words(2000))).json().usage;
    expect(usage.prompt_tokens).toBe(2000 + 3 + 1 + 3 + 3);
    expect(usage.prompt_tokens_details.cached_tokens).toBe(1920);
  });
});
