import { createAnthropic } from '@ai-sdk/anthropic';
import type Anthropic from '@anthropic-ai/sdk';
import { generateText, type ModelMessage } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_COMPACTION_PROMPT } from '../../src/messages/compaction.js';
import { countTokens, truncateTokens } from '../../src/platform/tokens.js';
import {
  MESSAGE_REST,
  USAGE_REST,
  withAnthropic,
  withEmulator,
  ZERO_CACHE,
} from '../helpers/anthropic.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const BETA = { 'anthropic-beta': 'compact-2026-01-12' };
const MODEL = 'claude-opus-4-6';
const TOOLS = [{ name: 'search', input_schema: { type: 'object' } }];
const SYSTEM = 'You are a research agent.';
/** A tool result of ~60 000 tokens: the conversation is past a 50 000-token trigger. */
const HUGE = 'word '.repeat(60_000);

/** An agent loop whose one tool result is huge. */
const LOOP = [
  { role: 'user', content: 'Find the answer.' },
  {
    role: 'assistant',
    content: [{ type: 'tool_use', id: 't1', name: 'search', input: { q: 'answer' } }],
  },
  {
    role: 'user',
    content: [
      { type: 'tool_result', tool_use_id: 't1', content: HUGE },
      { type: 'text', text: 'Now sum it up.' },
    ],
  },
];
/** The summary the emulator writes of LOOP. */
const SUMMARY =
  "Summary of the conversation so far: 3 messages (2 from the user, 1 from the assistant); tool calls: search ×1.\nThe user's latest message: Now sum it up.";

const compact = (fields: object = {}) => ({
  context_management: {
    edits: [
      { type: 'compact_20260112', trigger: { type: 'input_tokens', value: 50_000 }, ...fields },
    ],
  },
});

const ask = (extra: object = {}, headers: Record<string, string> = BETA) =>
  t.messages(
    {
      model: MODEL,
      max_tokens: 300,
      system: SYSTEM,
      tools: TOOLS,
      messages: LOOP,
      ...compact(),
      ...extra,
    },
    { headers },
  );

const count = async (messages: unknown, extra: object = {}) => {
  const res = await t.messages(
    { model: MODEL, system: SYSTEM, tools: TOOLS, messages, ...compact(), ...extra },
    { path: '/count_tokens', headers: BETA },
  );
  expect(res.statusCode).toBe(200);
  return res.json().input_tokens as number;
};

/** A conversation sent back starting at a compaction block, then a user's word. */
const summaryThenHi = (block: object) => [
  { role: 'assistant', content: [block] },
  { role: 'user', content: 'hi' },
];

/** The reply to LOOP without compaction (no beta): what follows the summary. */
async function plainReply() {
  const res = await t.messages(
    { model: MODEL, max_tokens: 300, system: SYSTEM, tools: TOOLS, messages: LOOP },
    {},
  );
  expect(res.statusCode).toBe(200);
  return res.json();
}

describe('compaction: compact_20260112', () => {
  it('below its trigger, answers as usual, with usage.iterations and an empty applied_edits', async () => {
    const short = LOOP.slice(0, 1);
    const res = await ask({
      messages: short,
      ...compact({ trigger: { type: 'input_tokens', value: 60_000 } }),
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const input = await count(short);
    const output = body.usage.output_tokens;
    expect(body.content.some((b: { type: string }) => b.type === 'compaction')).toBe(false);
    expect(body.usage).toEqual({
      input_tokens: input,
      ...ZERO_CACHE,
      output_tokens: output,
      service_tier: 'standard',
      ...USAGE_REST,
      iterations: [
        {
          type: 'message',
          input_tokens: input,
          output_tokens: output,
          ...ZERO_CACHE,
          model: MODEL,
        },
      ],
    });
    expect(body.context_management).toEqual({ applied_edits: [] });
  });

  it('past its trigger, summarizes first: a compaction block, then the reply written from tools, system and summary; usage counts both steps', async () => {
    const plain = await plainReply();
    const original = await count(LOOP);
    // The compacted prompt: what a follow-up that starts at the summary counts.
    const compacted = await count([
      { role: 'assistant', content: [{ type: 'compaction', content: SUMMARY }] },
    ]);
    const res = await ask();
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const output = plain.usage.output_tokens;
    expect(body).toEqual({
      ...plain,
      id: body.id,
      content: [{ type: 'compaction', content: SUMMARY }, ...plain.content],
      usage: {
        input_tokens: compacted,
        ...ZERO_CACHE,
        output_tokens: output,
        service_tier: 'standard',
        ...USAGE_REST,
        iterations: [
          {
            type: 'compaction',
            input_tokens: original + countTokens(DEFAULT_COMPACTION_PROMPT),
            output_tokens: countTokens(SUMMARY),
            ...ZERO_CACHE,
          },
          {
            type: 'message',
            input_tokens: compacted,
            output_tokens: output,
            ...ZERO_CACHE,
            model: MODEL,
          },
        ],
      },
      context_management: { applied_edits: [] },
    });
    expect(compacted).toBeLessThan(1000);
    expect(original).toBeGreaterThan(60_000);
  });

  it('counts the instructions sent in place of the default summarizing prompt', async () => {
    const instructions = 'Keep only the numbers.';
    const body = (await ask(compact({ instructions }))).json();
    expect(body.usage.iterations[0].input_tokens).toBe(
      (await count(LOOP)) + countTokens(instructions),
    );
    expect(body.content[0]).toEqual({ type: 'compaction', content: SUMMARY });
  });

  it('the next request drops everything before the summary it sends back (count_tokens too)', async () => {
    const first = (await ask()).json();
    const next = [
      ...LOOP,
      { role: 'assistant', content: first.content },
      { role: 'user', content: 'Thanks. And then?' },
    ];
    const pruned = next.slice(LOOP.length);
    const input = await count(next);
    expect(input).toBe(await count(pruned));
    expect(input).toBeLessThan(1000);
    const res = await ask({ messages: next });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    // below the trigger now: no new summary
    expect(body.content.some((b: { type: string }) => b.type === 'compaction')).toBe(false);
    expect(body.usage.input_tokens).toBe(input);
    // a compaction block with no summary (null) drops nothing
    const kept = [
      ...LOOP,
      {
        role: 'assistant',
        content: [
          { type: 'compaction', content: null },
          { type: 'text', text: 'ok' },
        ],
      },
      { role: 'user', content: 'go on' },
    ];
    expect(await count(kept)).toBeGreaterThan(60_000);
  });

  it('a new summary takes in the one before it', async () => {
    const earlier = 'The user asked for the answer; the search found many words.';
    const messages = [
      { role: 'assistant', content: [{ type: 'compaction', content: earlier }] },
      {
        role: 'user',
        content: [
          { type: 'text', text: HUGE },
          { type: 'text', text: 'More?' },
        ],
      },
    ];
    const body = (await ask({ messages })).json();
    expect(body.content[0]).toEqual({
      type: 'compaction',
      content: `Summary of the conversation so far: 1 message (1 from the user, 0 from the assistant).\nBefore that: ${earlier}\nThe user's latest message: ${truncateTokens(`${HUGE}\nMore?`, 500).text}`,
    });
  });

  it('with pause_after_compaction, stops after the summary (stop_reason "compaction", no message step); the turn sent back continues', async () => {
    const res = await ask(compact({ pause_after_compaction: true }));
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body).toEqual({
      model: MODEL,
      id: body.id,
      type: 'message',
      role: 'assistant',
      content: [{ type: 'compaction', content: SUMMARY }],
      ...MESSAGE_REST,
      stop_reason: 'compaction',
      stop_sequence: null,
      usage: {
        input_tokens: 0,
        ...ZERO_CACHE,
        output_tokens: 0,
        service_tier: 'standard',
        ...USAGE_REST,
        iterations: [
          {
            type: 'compaction',
            input_tokens: (await count(LOOP)) + countTokens(DEFAULT_COMPACTION_PROMPT),
            output_tokens: countTokens(SUMMARY),
            ...ZERO_CACHE,
          },
        ],
      },
      context_management: { applied_edits: [] },
    });
    // An assistant turn of compaction blocks is no prefill (the 4.6 models refuse those).
    const next = [...LOOP, { role: 'assistant', content: body.content }];
    const more = await ask({ messages: next, ...compact({ pause_after_compaction: true }) });
    expect(more.statusCode).toBe(200);
    expect(more.json().stop_reason).not.toBe('compaction');
  });

  it('runs after clear_tool_uses (which the compaction beta takes alone too): a prompt cleared under the trigger is not summarized', async () => {
    const clear = {
      type: 'clear_tool_uses_20250919',
      trigger: { type: 'input_tokens', value: 1000 },
      keep: { type: 'tool_uses', value: 0 },
    };
    const res = await ask({
      context_management: {
        edits: [
          clear,
          { type: 'compact_20260112', trigger: { type: 'input_tokens', value: 50_000 } },
        ],
      },
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.content.some((b: { type: string }) => b.type === 'compaction')).toBe(false);
    expect(body.context_management).toEqual({
      applied_edits: [
        {
          type: 'clear_tool_uses_20250919',
          cleared_tool_uses: 1,
          cleared_input_tokens: expect.any(Number),
        },
      ],
    });
    expect(body.usage.input_tokens).toBeLessThan(1000);
    expect(body.usage.iterations).toEqual([
      {
        type: 'message',
        input_tokens: body.usage.input_tokens,
        output_tokens: body.usage.output_tokens,
        ...ZERO_CACHE,
        model: MODEL,
      },
    ]);
  });

  it('with thinking and tools, the turn sent back starts with the summary, then its thinking (which leads the turn)', async () => {
    const thinking = { type: 'enabled', budget_tokens: 2000 };
    const question = [{ role: 'user', content: `Please search this. ${HUGE}` }];
    const first = await ask({ thinking, max_tokens: 4000, messages: question });
    expect(first.statusCode).toBe(200);
    const body = first.json();
    expect(body.content.map((b: { type: string }) => b.type)).toEqual([
      'compaction',
      'thinking',
      'text',
      'tool_use',
    ]);
    const use = body.content[3];
    const answer = {
      role: 'user',
      content: [{ type: 'tool_result', tool_use_id: use.id, content: 'found' }],
    };
    const next = [...question, { role: 'assistant', content: body.content }, answer];
    const res = await ask({ thinking, max_tokens: 4000, messages: next });
    expect(res.statusCode).toBe(200);
    // a turn whose thinking does not follow the summary is still refused, naming that block
    const without = [...question, { role: 'assistant', content: [body.content[0], use] }, answer];
    const refused = await ask({ thinking, max_tokens: 4000, messages: without });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.message).toMatch(
      /^messages\.1\.content\.1\.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`\./,
    );
  });

  it('streams a paused compaction as the summary alone: stop_reason "compaction", no message step', async () => {
    const json = (await ask(compact({ pause_after_compaction: true }))).json();
    const res = await ask({ stream: true, ...compact({ pause_after_compaction: true }) });
    const frames = parseSse(res.body);
    expect(frames.map((f) => f.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'content_block_delta',
      'content_block_stop',
      'message_delta',
      'message_stop',
    ]);
    expect(frames[5]?.data).toEqual({
      type: 'message_delta',
      delta: {
        stop_reason: 'compaction',
        stop_sequence: null,
        stop_details: null,
        container: null,
      },
      usage: {
        input_tokens: 0,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        output_tokens: 0,
        output_tokens_details: { thinking_tokens: 0 },
        server_tool_use: null,
        iterations: json.usage.iterations,
      },
      context_management: { applied_edits: [] },
    });
  });

  it('compacts on a model name the emulator does not know (a gateway may rename its models)', async () => {
    const body = (await ask({ model: 'claude-like' })).json();
    expect(body.content[0]).toEqual({ type: 'compaction', content: SUMMARY });
  });

  it('streams the summary as one compaction_delta; message_delta carries the iterations', async () => {
    const json = (await ask()).json();
    const res = await ask({ stream: true });
    expect(res.statusCode).toBe(200);
    const frames = parseSse(res.body);
    const { iterations, ...startUsage } = json.usage;
    expect(frames.slice(0, 5)).toEqual([
      {
        event: 'message_start',
        data: {
          type: 'message_start',
          message: {
            model: MODEL,
            id: expect.any(String),
            type: 'message',
            role: 'assistant',
            content: [],
            ...MESSAGE_REST,
            stop_reason: null,
            stop_sequence: null,
            usage: { ...startUsage, output_tokens: 1, output_tokens_details: null },
            context_management: null,
          },
        },
      },
      {
        event: 'content_block_start',
        data: {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'compaction', content: null },
        },
      },
      { event: 'ping', data: { type: 'ping' } },
      {
        event: 'content_block_delta',
        data: {
          type: 'content_block_delta',
          index: 0,
          delta: { type: 'compaction_delta', content: SUMMARY },
        },
      },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
    ]);
    expect(frames.at(-2)).toEqual({
      event: 'message_delta',
      data: {
        type: 'message_delta',
        delta: {
          stop_reason: json.stop_reason,
          stop_sequence: null,
          stop_details: null,
          container: null,
        },
        usage: {
          input_tokens: json.usage.input_tokens,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: json.usage.output_tokens,
          output_tokens_details: { thinking_tokens: 0 },
          server_tool_use: null,
          iterations,
        },
        context_management: { applied_edits: [] },
      },
    });
  });

  it('caches as upstream: the summarizing step reads the cached conversation, the reply step the cached system prompt', async () => {
    const system = [
      {
        type: 'text',
        text: `${SYSTEM} ${'rule '.repeat(2000)}`,
        cache_control: { type: 'ephemeral' },
      },
    ];
    const first = (await ask({ system })).json();
    const [summarizing, replying] = first.usage.iterations;
    // the system prompt was written by the first step and read by the second
    expect(summarizing.cache_creation_input_tokens).toBeGreaterThan(2000);
    expect(replying.cache_read_input_tokens).toBe(summarizing.cache_creation_input_tokens);
    expect(first.usage.cache_read_input_tokens).toBe(replying.cache_read_input_tokens);
  });

  it.each([
    [
      'a compact edit with only the context-management beta',
      compact(),
      { 'anthropic-beta': 'context-management-2025-06-27' },
      "context_management.edits.0: Input tag 'compact_20260112' found using 'type' does not match any of the expected tags: 'clear_thinking_20251015', 'clear_tool_uses_20250919'",
    ],
    [
      'context_management with neither beta',
      compact(),
      {},
      'context_management: Extra inputs are not permitted',
    ],
    [
      'a trigger under 50 000 tokens',
      compact({ trigger: { type: 'input_tokens', value: 49_999 } }),
      BETA,
      'context_management.edits.0.compact_20260112: trigger.value must be at least 50000',
    ],
    [
      'a model from before compaction',
      { model: 'claude-sonnet-4-5', ...compact() },
      BETA,
      'context_management.edits.0: `compact_20260112` is not supported on claude-sonnet-4-5',
    ],
    [
      'a compaction block without the beta',
      {
        context_management: undefined,
        messages: summaryThenHi({ type: 'compaction', content: 's' }),
      },
      {},
      "messages.0.content.0: Input tag 'compaction' found using 'type' does not match any of the expected tags (a compaction block takes the compact-2026-01-12 or compact-2026-09-04 beta)",
    ],
    [
      'a compaction block without a compact edit',
      {
        context_management: undefined,
        messages: summaryThenHi({ type: 'compaction', content: 's' }),
      },
      BETA,
      '`compaction` blocks require a `compact_20260112` strategy in `context_management.edits`.',
    ],
    [
      'an empty summary',
      {
        messages: summaryThenHi({ type: 'compaction', content: '' }),
      },
      BETA,
      "messages.0.content.0.compaction.content: content can't be empty",
    ],
    [
      'encrypted_content sent back with a summary',
      {
        messages: summaryThenHi({ type: 'compaction', content: 's', encrypted_content: null }),
      },
      BETA,
      'messages.0.content.0.encrypted_content: Extra inputs are not permitted',
    ],
    [
      'a compaction block in a user turn',
      { messages: [{ role: 'user', content: [{ type: 'compaction', content: 's' }] }] },
      BETA,
      'messages.0.content.0.type: "compaction" blocks may only appear in assistant messages',
    ],
  ])('refuses %s', async (_name, extra, headers, message) => {
    const res = await ask(extra, headers);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message },
      request_id: expect.any(String),
    });
  });
});

describe('compaction through the official SDK', () => {
  it('beta.messages.stream: the final message holds the summary; the next turn sends it back', async () => {
    await withAnthropic(async (client) => {
      const params = {
        model: MODEL,
        max_tokens: 300,
        system: SYSTEM,
        tools: [{ name: 'search', input_schema: { type: 'object' as const } }],
        betas: ['compact-2026-01-12'],
        context_management: {
          edits: [
            {
              type: 'compact_20260112' as const,
              trigger: { type: 'input_tokens' as const, value: 50_000 },
            },
          ],
        },
      };
      const messages = LOOP as Anthropic.Beta.BetaMessageParam[];
      const stream = client.beta.messages.stream({ ...params, messages });
      const final = await stream.finalMessage();
      expect(final.content[0]).toEqual({ type: 'compaction', content: SUMMARY });
      expect(final.usage.iterations?.map((step) => step.type)).toEqual(['compaction', 'message']);
      const next = await client.beta.messages.create({
        ...params,
        messages: [
          ...messages,
          { role: 'assistant', content: final.content },
          { role: 'user', content: 'And then?' },
        ],
      });
      expect(next.content.some((block) => block.type === 'compaction')).toBe(false);
      expect(next.usage.input_tokens).toBeLessThan(1000);
    });
  });
});

describe('compaction through the Vercel AI SDK', () => {
  it('generateText: the summary is a text part marked as compaction, sent back as a compaction block', async () => {
    await withEmulator(async (emulator) => {
      const anthropic = createAnthropic({
        baseURL: `${emulator.url}/messages-api/v1`,
        apiKey: 'sk-local',
        headers: { 'msgapi-version': '2023-06-01' },
      });
      const providerOptions = {
        anthropic: {
          contextManagement: {
            edits: [
              {
                type: 'compact_20260112' as const,
                trigger: { type: 'input_tokens' as const, value: 50_000 },
              },
            ],
          },
        },
      };
      const messages: ModelMessage[] = [
        { role: 'system', content: SYSTEM },
        { role: 'user', content: `Read this: ${HUGE}` },
      ];
      // AI SDK 7 takes system messages in `messages` only when told to
      const first = await generateText({
        model: anthropic(MODEL),
        messages,
        allowSystemInMessages: true,
        providerOptions,
      });
      const summary = first.content[0];
      expect(summary).toMatchObject({
        type: 'text',
        text: expect.stringMatching(
          /^Summary of the conversation so far: 1 message \(1 from the user, 0 from the assistant\)\.\n/,
        ),
        providerMetadata: { anthropic: { type: 'compaction' } },
      });
      const next = await generateText({
        model: anthropic(MODEL),
        messages: [...messages, ...first.response.messages, { role: 'user', content: 'And then?' }],
        allowSystemInMessages: true,
        providerOptions,
      });
      // the huge message is before the summary sent back: dropped
      expect(next.usage.inputTokens).toBeLessThan(1000);
      expect(
        next.content.some(
          (part) =>
            'providerMetadata' in part && part.providerMetadata?.anthropic?.type === 'compaction',
        ),
      ).toBe(false);
    });
  });
});
