import fc from 'fast-check';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { trimOldest } from '../../src/platform/lru.js';
import {
  CHAT_BOUNDARIES_FIRST,
  CHAT_BOUNDARIES_LAST,
  PromptCache,
} from '../../src/text/prompt-cache.js';
import { USAGE_REST } from '../helpers/anthropic.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Prompt caching as the gateway states it, one test per rule, plus TTLs, breakpoints, lookback
 * and isolation. Texts are built from "abcd " (one token each) so the arithmetic is exact.
 */

const HEADERS = { 'x-api-key': 'key-a', 'msgapi-version': '2023-06-01' };
const words = (n: number, word = 'abcd') => `${word} `.repeat(n);
const EPHEMERAL = { type: 'ephemeral' } as const;

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

interface Usage {
  input_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
  cache_creation: { ephemeral_5m_input_tokens: number; ephemeral_1h_input_tokens: number };
}

async function usage(payload: object, headers: Record<string, string> = HEADERS): Promise<Usage> {
  const res = await t.inject({
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers,
    payload,
  });
  expect(res.statusCode).toBe(200);
  return res.json().usage;
}

const counted = async (payload: Record<string, unknown>) => {
  const { max_tokens: _, ...rest } = payload;
  return (
    await t.inject({
      method: 'POST',
      url: '/messages-api/v1/messages/count_tokens',
      headers: HEADERS,
      payload: rest,
    })
  ).json().input_tokens as number;
};

const advance = (ms: number) => t.deps.clock.advance(ms);

/** A request with a 1100-token cached system prompt and a short question (3 + 1 tokens). */
const cachedSystem = (system = words(1100), extra: object = {}) => ({
  model: 'm',
  max_tokens: 20,
  system: [{ type: 'text', text: system, cache_control: EPHEMERAL }],
  messages: [{ role: 'user', content: 'hi' }],
  ...extra,
});

const split = (input: number, creation: number, read: number, oneHour = 0) => ({
  input_tokens: input,
  cache_creation_input_tokens: creation,
  cache_read_input_tokens: read,
  cache_creation: {
    ephemeral_5m_input_tokens: creation - oneHour,
    ephemeral_1h_input_tokens: oneHour,
  },
  output_tokens: expect.any(Number),
  service_tier: 'standard',
  ...USAGE_REST,
});

describe("the gateway's prompt-caching rules", () => {
  it('rule 1: caching applies only to blocks with cache_control (system array or messages)', async () => {
    const plain = {
      model: 'm',
      max_tokens: 20,
      system: words(1100),
      messages: [{ role: 'user', content: 'hi' }],
    };
    expect(await usage(plain)).toEqual(split(1104, 0, 0));
    expect(await usage(plain)).toEqual(split(1104, 0, 0));
    expect(await usage(cachedSystem())).toEqual(split(4, 1100, 0));
    const inMessage = {
      model: 'm',
      max_tokens: 20,
      messages: [
        { role: 'user', content: [{ type: 'text', text: words(1200), cache_control: EPHEMERAL }] },
      ],
    };
    expect(await usage(inMessage)).toEqual(split(0, 1203, 0));
  });

  it('rule 2: the first request with a cacheable block creates, reads nothing', async () => {
    const u = await usage(cachedSystem());
    expect(u.cache_creation_input_tokens).toBeGreaterThan(0);
    expect(u.cache_read_input_tokens).toBe(0);
    expect(u).toEqual(split(4, 1100, 0));
  });

  it('rule 3: an identical request within the lifetime reads, creates nothing', async () => {
    await usage(cachedSystem());
    advance(299_000);
    const u = await usage(cachedSystem());
    expect(u.cache_read_input_tokens).toBeGreaterThan(0);
    expect(u.cache_creation_input_tokens).toBe(0);
    expect(u).toEqual(split(4, 0, 1100));
  });

  it('rule 4: both zero when the content is below the minimum cacheable size', async () => {
    expect(await usage(cachedSystem(words(1019)))).toEqual(split(1023, 0, 0));
    expect(await usage(cachedSystem(words(1019)))).toEqual(split(1023, 0, 0));
    // 1024 tokens is enough
    expect(await usage(cachedSystem(words(1024)))).toEqual(split(4, 1024, 0));
  });

  it('rule 4: after the entry expires the prefix is written again (nothing is read)', async () => {
    await usage(cachedSystem());
    advance(300_000);
    expect(await usage(cachedSystem())).toEqual(split(4, 1100, 0));
  });

  it('rule 5: reads are reported apart from input_tokens, so they can be priced at ~10%', async () => {
    await usage(cachedSystem());
    const hit = await usage(cachedSystem());
    expect(hit.input_tokens).toBe(4);
    expect(hit.cache_read_input_tokens).toBe(1100);
    expect(hit.input_tokens + hit.cache_read_input_tokens + hit.cache_creation_input_tokens).toBe(
      await counted(cachedSystem()),
    );
  });

  it('rule 6: a different leading project label is a different cache entry', async () => {
    const a = cachedSystem(`Project: alpha. ${words(1100)}`);
    const b = cachedSystem(`Project: omega. ${words(1100)}`);
    expect(await usage(a)).toEqual(split(4, 1106, 0));
    expect(await usage(b)).toEqual(split(4, 1106, 0));
    expect(await usage(a)).toEqual(split(4, 0, 1106));
    expect(await usage(b)).toEqual(split(4, 0, 1106));
  });
});

describe('cache lifetime', () => {
  it('renews an entry on each hit', async () => {
    await usage(cachedSystem());
    for (let i = 0; i < 3; i++) {
      advance(299_000);
      expect(await usage(cachedSystem())).toEqual(split(4, 0, 1100));
    }
    advance(300_000);
    expect(await usage(cachedSystem())).toEqual(split(4, 1100, 0));
  });

  it('keeps a ttl "1h" entry for an hour', async () => {
    const hour = cachedSystem(words(1100), {
      system: [
        { type: 'text', text: words(1100), cache_control: { type: 'ephemeral', ttl: '1h' } },
      ],
    });
    expect(await usage(hour)).toEqual(split(4, 1100, 0, 1100));
    advance(3_599_000);
    expect(await usage(hour)).toEqual(split(4, 0, 1100));
    advance(3_600_000);
    expect(await usage(hour)).toEqual(split(4, 1100, 0, 1100));
  });

  it('follows PROMPT_CACHE_TTL_S and PROMPT_CACHE_MIN_TOKENS', async () => {
    const app = await buildTestApp({ promptCacheTtlS: 10, promptCacheMinTokens: 100 });
    const send = async () =>
      (
        await app.inject({
          method: 'POST',
          url: '/messages-api/v1/messages',
          headers: HEADERS,
          payload: cachedSystem(words(150)),
        })
      ).json().usage;
    expect(await send()).toEqual(split(4, 150, 0));
    app.deps.clock.advance(9_999);
    expect(await send()).toEqual(split(4, 0, 150));
    app.deps.clock.advance(10_000);
    expect(await send()).toEqual(split(4, 150, 0));
    await app.app.close();
  });

  it('empties on reset', async () => {
    await usage(cachedSystem());
    await t.inject({ method: 'POST', url: '/_emulator/reset' });
    expect(await usage(cachedSystem())).toEqual(split(4, 1100, 0));
  });
});

describe('breakpoints', () => {
  const conversation = (turns: string[], ttl?: '1h') => ({
    model: 'm',
    max_tokens: 20,
    system: [
      {
        type: 'text',
        text: words(1100),
        cache_control: ttl ? { type: 'ephemeral', ttl } : EPHEMERAL,
      },
    ],
    messages: turns.map((text, i) => ({
      role: i % 2 === 0 ? 'user' : 'assistant',
      content: i === turns.length - 1 ? [{ type: 'text', text, cache_control: EPHEMERAL }] : text,
    })),
  });

  it('writes every cacheable breakpoint and splits creation by TTL', async () => {
    const first = conversation([words(300, 'wxyz')], '1h');
    // system 1100 (1h) + message 3 + 300 (5m)
    expect(await usage(first)).toEqual(split(0, 1403, 0, 1100));
    expect(await usage(first)).toEqual(split(0, 0, 1403));
  });

  it('reads the longest cached prefix of a growing conversation and writes the rest', async () => {
    const turn1 = conversation([words(300, 'wxyz')]);
    expect(await usage(turn1)).toEqual(split(0, 1403, 0));
    // Turn 2: the earlier breakpoint is found by looking back from the new one.
    const turn2 = conversation([words(300, 'wxyz'), 'Sure.', words(50, 'next')]);
    // read 1403; new: assistant 3 + 2, user 3 + 50 = 58 written
    expect(await usage(turn2)).toEqual(split(0, 58, 1403));
    expect(await usage(turn2)).toEqual(split(0, 0, 1461));
  });

  it('reads an earlier breakpoint when a later part changed', async () => {
    expect(await usage(conversation([words(300, 'wxyz')]))).toEqual(split(0, 1403, 0));
    expect(await usage(conversation([words(300, 'qrst')]))).toEqual(split(0, 303, 1100));
  });

  it('keeps input + creation + read equal to count_tokens, whatever the layout', async () => {
    const block = fc.record({
      size: fc.integer({ min: 1, max: 700 }),
      word: fc.constantFrom('abcd', 'xy', 'héllo', '!?'),
      cache: fc.constantFrom(undefined, '5m', '1h'),
    });
    const request = fc
      .record({
        system: fc.array(block, { maxLength: 3 }),
        messages: fc.array(fc.array(block, { minLength: 1, maxLength: 2 }), {
          minLength: 1,
          maxLength: 4,
        }),
      })
      .map(({ system, messages }) => {
        let breakpoints = 0;
        let seenShort = false;
        const toBlock = (b: { size: number; word: string; cache?: '5m' | '1h' }) => {
          const ttl = b.cache === '1h' && seenShort ? '5m' : b.cache;
          const cached = ttl !== undefined && breakpoints < 4;
          if (cached) {
            breakpoints++;
            if (ttl === '5m') seenShort = true;
          }
          return {
            type: 'text',
            text: words(b.size, b.word),
            ...(cached ? { cache_control: { type: 'ephemeral', ttl } } : {}),
          };
        };
        return {
          model: 'm',
          max_tokens: 5,
          system: system.map(toBlock),
          messages: messages.map((blocks, i) => ({
            role: i % 2 === 0 ? 'user' : 'assistant',
            content: blocks.map(toBlock),
          })),
        };
      });
    await fc.assert(
      fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 3 }), async (requests) => {
        for (const payload of [...requests, ...requests]) {
          const u = await usage(payload);
          expect(u.input_tokens).toBeGreaterThanOrEqual(0);
          expect(u.input_tokens + u.cache_creation_input_tokens + u.cache_read_input_tokens).toBe(
            await counted(payload),
          );
          expect(
            u.cache_creation.ephemeral_5m_input_tokens + u.cache_creation.ephemeral_1h_input_tokens,
          ).toBe(u.cache_creation_input_tokens);
        }
      }),
      { numRuns: 40 },
    );
  });
});

describe('refused requests', () => {
  it('leave the cache as it was', async () => {
    const refused = await t.inject({
      method: 'POST',
      url: '/messages-api/v1/messages',
      headers: { ...HEADERS, 'x-emulator-stream-delay-ms': 'abc' },
      payload: { ...cachedSystem(), stream: true },
    });
    expect(refused.statusCode).toBe(400);
    expect(await usage(cachedSystem())).toEqual(split(4, 1100, 0));
  });
});

describe('cache isolation', () => {
  it('is per API key', async () => {
    await usage(cachedSystem());
    expect(await usage(cachedSystem(), { ...HEADERS, 'x-api-key': 'key-b' })).toEqual(
      split(4, 1100, 0),
    );
    expect(await usage(cachedSystem())).toEqual(split(4, 0, 1100));
  });

  it('is per model', async () => {
    await usage(cachedSystem());
    expect(await usage({ ...cachedSystem(), model: 'other-model' })).toEqual(split(4, 1100, 0));
  });
});

describe('the cache store', () => {
  const part = (text: string) => ({ framing: 3, texts: [text] });

  it('one chat request writes at most its first 16 and last 48 message boundaries', () => {
    const cache = new PromptCache({ ttlS: 300, minTokens: 1024, maxEntries: 50_000 });
    const messages = [part(words(1100)), ...Array.from({ length: 5000 }, (_, i) => part(`m${i}`))];
    expect(cache.accountChat('k', messages, 0)).toBe(0);
    expect(cache.size).toBe(CHAT_BOUNDARIES_FIRST + CHAT_BOUNDARIES_LAST);
    // the shared long system prompt is still found, and so is the whole conversation
    expect(cache.accountChat('k', [messages[0] as ReturnType<typeof part>, part('new')], 0)).toBe(
      1024,
    );
    expect(cache.accountChat('k', [...messages, part('next')], 0)).toBeGreaterThan(1024);
  });

  it('one key flooding the store leaves it bounded, trimmed a sixteenth at a time', () => {
    const cache = new PromptCache({ ttlS: 300, minTokens: 1024, maxEntries: 1600 });
    for (let i = 0; i < 1000; i++) cache.accountChat('k', [part(words(1100, `w${i}`))], 0);
    expect(cache.size).toBe(1000);
    for (let i = 0; i < 1000; i++) cache.accountChat('k', [part(words(1100, `v${i}`))], 0);
    expect(cache.size).toBeLessThanOrEqual(1600);
    expect(cache.size).toBeGreaterThan(1600 - 100 - 1);
  });

  it('trimOldest forgets the oldest entries, down to the limit less a sixteenth', () => {
    const map = new Map(Array.from({ length: 33 }, (_, i) => [i, i]));
    trimOldest(map, 33);
    expect(map.size).toBe(33);
    trimOldest(map, 32);
    expect([...map.keys()]).toEqual(Array.from({ length: 30 }, (_, i) => i + 3));
  });
});
