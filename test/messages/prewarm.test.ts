import type Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { MESSAGE_REST, USAGE_REST, withAnthropic } from '../helpers/anthropic.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * `max_tokens: 0`: the prompt is read and its cache breakpoints written, nothing is generated.
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching#pre-warming-the-cache
 */

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

/** A 1 500-token system prompt ("abcd" is one token), cached, and a placeholder question. */
const SYSTEM = [{ type: 'text', text: 'abcd '.repeat(1500), cache_control: { type: 'ephemeral' } }];
const warm = (extra: object = {}) => ({
  model: 'claude-like',
  max_tokens: 0,
  system: SYSTEM,
  messages: [{ role: 'user', content: 'warm up' }],
  ...extra,
});

describe('max_tokens: 0 (cache pre-warming)', () => {
  it('answers no content, stop_reason max_tokens, and the cache it wrote; the next request reads it', async () => {
    const res = await t.messages(warm(), {});
    expect(res.statusCode).toBe(200);
    const counted = await t.messages(
      { model: 'claude-like', system: SYSTEM, messages: [{ role: 'user', content: 'warm up' }] },
      { path: '/count_tokens' },
    );
    const total = counted.json().input_tokens as number;
    const body = res.json();
    const written = body.usage.cache_creation_input_tokens;
    expect(written).toBe(1500);
    expect(body).toEqual({
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      content: [],
      model: 'claude-like',
      stop_reason: 'max_tokens',
      stop_sequence: null,
      usage: {
        input_tokens: total - written,
        cache_creation_input_tokens: written,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: written, ephemeral_1h_input_tokens: 0 },
        output_tokens: 0,
        service_tier: 'standard',
        ...USAGE_REST,
      },
      ...MESSAGE_REST,
    });
    const next = await t.messages(
      warm({ max_tokens: 50, messages: [{ role: 'user', content: 'the real question' }] }),
      {},
    );
    expect(next.json().usage).toMatchObject({
      cache_read_input_tokens: written,
      cache_creation_input_tokens: 0,
    });
    expect(next.json().content).not.toEqual([]);
  });

  it('sent again every 4 minutes, reads the entry and keeps it alive past its 5-minute lifetime', async () => {
    const first = (await t.messages(warm(), {})).json().usage;
    expect(first.cache_creation_input_tokens).toBe(1500);
    for (let i = 0; i < 3; i++) {
      t.deps.clock.advance(4 * 60_000);
      const again = (await t.messages(warm(), {})).json().usage;
      expect(again).toMatchObject({
        cache_read_input_tokens: 1500,
        cache_creation_input_tokens: 0,
      });
    }
    t.deps.clock.advance(5 * 60_000 + 1);
    const expired = (await t.messages(warm(), {})).json().usage;
    expect(expired).toMatchObject({
      cache_read_input_tokens: 0,
      cache_creation_input_tokens: 1500,
    });
  });

  it('consults no scripted reply and no stub: nothing is generated', async () => {
    const stub = await t.inject({
      method: 'POST',
      url: '/_emulator/replies',
      payload: { match: { group: 'messages' }, reply: 'stubbed', times: 1 },
    });
    expect(stub.statusCode).toBeLessThan(300);
    expect((await t.messages(warm(), {})).json().content).toEqual([]);
    // the stub is still there for the next request that generates
    const next = await t.messages(warm({ max_tokens: 50 }), {});
    expect(next.json().content).toEqual([{ type: 'text', text: 'stubbed', citations: null }]);
  });

  it('with the compaction beta, lists its one step in usage.iterations', async () => {
    const res = await t.messages(warm(), { headers: { 'anthropic-beta': 'compact-2026-01-12' } });
    const usage = res.json().usage;
    const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens } = usage;
    const { cache_creation, output_tokens, iterations } = usage;
    expect(iterations).toEqual([
      {
        type: 'message',
        input_tokens,
        cache_creation_input_tokens,
        cache_read_input_tokens,
        cache_creation,
        output_tokens,
        model: 'claude-like',
      },
    ]);
  });

  it('takes adaptive thinking and tool_choice auto', async () => {
    const tools = [{ name: 'search', input_schema: { type: 'object' } }];
    const res = await t.messages(
      warm({
        model: 'claude-opus-4-6',
        thinking: { type: 'adaptive' },
        tools,
        tool_choice: { type: 'auto' },
      }),
      {},
    );
    expect(res.statusCode).toBe(200);
    expect(res.json().content).toEqual([]);
  });

  it.each([
    ['stream: true', { stream: true }, {}, 'stream'],
    [
      'manual thinking',
      { thinking: { type: 'enabled', budget_tokens: 1024 } },
      {},
      'thinking.type',
    ],
    [
      'a structured-output format',
      { output_config: { format: { type: 'json_schema', schema: { type: 'object' } } } },
      {},
      'output_config.format',
    ],
    [
      'a forced tool',
      {
        tools: [{ name: 'search', input_schema: { type: 'object' } }],
        tool_choice: { type: 'any' },
      },
      {},
      'tool_choice.type',
    ],
    [
      'a compaction request',
      { compaction: { type: 'summarize' } },
      { 'anthropic-beta': 'compact-2026-09-04' },
      'compaction',
    ],
  ])('refuses %s', async (_name, extra, headers, field) => {
    const res = await t.messages(warm(extra), { headers });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: `${field}: not allowed with max_tokens: 0, which generates nothing`,
      },
      request_id: expect.any(String),
    });
  });

  it('through the SDK: messages.create with max_tokens 0', async () => {
    await withAnthropic(async (client) => {
      const system = SYSTEM as Anthropic.TextBlockParam[];
      const messages = [{ role: 'user' as const, content: 'warm up' }];
      const prewarm = await client.messages.create({
        model: 'claude-like',
        max_tokens: 0,
        system,
        messages,
      });
      expect(prewarm.content).toEqual([]);
      expect(prewarm.stop_reason).toBe('max_tokens');
      const real = await client.messages.create({
        model: 'claude-like',
        max_tokens: 50,
        system,
        messages,
      });
      expect(real.usage.cache_read_input_tokens).toBe(prewarm.usage.cache_creation_input_tokens);
    });
  });
});
