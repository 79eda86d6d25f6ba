import Anthropic from '@anthropic-ai/sdk';
import { betaTool } from '@anthropic-ai/sdk/helpers/beta/json-schema';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_COMPACTION_PROMPT } from '../../src/messages/compaction.js';
import { signCompaction } from '../../src/messages/signed-compaction.js';
import { countTokens } from '../../src/platform/tokens.js';
import { MESSAGE_REST, USAGE_REST, withAnthropic, ZERO_CACHE } from '../helpers/anthropic.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const BETA = { 'anthropic-beta': 'compact-2026-09-04' };
/** A model name the emulator does not know: it compacts, and takes a prefill (count_tokens). */
const MODEL = 'claude-like';
const TOOLS = [{ name: 'search', input_schema: { type: 'object' } }];
const SUMMARIZE = { compaction: { type: 'summarize' } };

/** A finished agent loop: a question, a call, its result, the answer. */
const CONVERSATION = [
  { role: 'user', content: 'Find the answer.' },
  {
    role: 'assistant',
    content: [{ type: 'tool_use', id: 't1', name: 'search', input: { q: 'answer' } }],
  },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'found 42' }] },
  { role: 'assistant', content: 'The answer is 42.' },
];
/** The summary the emulator writes of CONVERSATION. */
const SUMMARY =
  "Summary of the conversation so far: 4 messages (2 from the user, 2 from the assistant); tool calls: search ×1.\nThe user's latest message: Find the answer.";
const BLOCK = { type: 'compaction', content: SUMMARY, signature: signCompaction(SUMMARY) };

const noUsage = {
  input_tokens: 0,
  ...ZERO_CACHE,
  output_tokens: 0,
  service_tier: 'standard',
  ...USAGE_REST,
};

const ask = (extra: object = {}, headers: Record<string, string> = BETA) =>
  t.messages(
    {
      model: MODEL,
      max_tokens: 4096,
      tools: TOOLS,
      messages: CONVERSATION,
      ...SUMMARIZE,
      ...extra,
    },
    { headers },
  );

const count = async (body: object, headers: Record<string, string> = BETA) => {
  const res = await t.messages(
    { model: MODEL, tools: TOOLS, messages: CONVERSATION, ...body },
    { path: '/count_tokens', headers },
  );
  expect(res.statusCode).toBe(200);
  return res.json().input_tokens as number;
};

/** The compaction step of a summary of CONVERSATION written with `prompt`. */
const step = async (prompt: string, output = countTokens(SUMMARY)) => ({
  type: 'compaction',
  input_tokens: (await count({})) + countTokens(prompt),
  output_tokens: output,
  ...ZERO_CACHE,
});

describe('on-demand compaction: the request', () => {
  it('answers the signed summary alone: stop_reason compaction, zero usage at the top, the step in iterations', async () => {
    const res = await ask();
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({
      model: MODEL,
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      content: [BLOCK],
      stop_reason: 'compaction',
      stop_sequence: null,
      usage: { ...noUsage, iterations: [await step(DEFAULT_COMPACTION_PROMPT)] },
      ...MESSAGE_REST,
    });
  });

  it('counts instructions in place of the default prompt; blank ones count as absent', async () => {
    const instructions = 'Keep every number the tools returned.';
    const custom = await ask({ compaction: { type: 'summarize', instructions } });
    expect(custom.json().usage.iterations).toEqual([await step(instructions)]);
    expect(custom.json().content).toEqual([BLOCK]);
    const blank = await ask({ compaction: { type: 'summarize', instructions: '  \n' } });
    expect(blank.json().usage.iterations).toEqual([await step(DEFAULT_COMPACTION_PROMPT)]);
  });

  it('streams the block whole in its content_block_start, with no deltas', async () => {
    const res = await ask({ stream: true });
    expect(res.statusCode).toBe(200);
    const start = {
      model: MODEL,
      id: expect.stringMatching(/^msg_/),
      type: 'message',
      role: 'assistant',
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...noUsage, output_tokens_details: null },
      ...MESSAGE_REST,
    };
    const { input_tokens, cache_creation_input_tokens, cache_read_input_tokens } = noUsage;
    const { output_tokens, output_tokens_details, server_tool_use } = noUsage;
    const deltaUsage = {
      input_tokens,
      cache_creation_input_tokens,
      cache_read_input_tokens,
      output_tokens,
      output_tokens_details,
      server_tool_use,
    };
    expect(parseSse(res.body)).toEqual([
      { event: 'message_start', data: { type: 'message_start', message: start } },
      {
        event: 'content_block_start',
        data: { type: 'content_block_start', index: 0, content_block: BLOCK },
      },
      { event: 'ping', data: { type: 'ping' } },
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: {
            stop_reason: 'compaction',
            stop_sequence: null,
            stop_details: null,
            container: null,
          },
          usage: { ...deltaUsage, iterations: [await step(DEFAULT_COMPACTION_PROMPT)] },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
  });

  it('a summary past max_tokens: no block, stop_reason max_tokens, the step billed', async () => {
    const res = await ask({ max_tokens: 10 });
    expect(res.json()).toMatchObject({
      content: [],
      stop_reason: 'max_tokens',
      usage: { ...noUsage, iterations: [await step(DEFAULT_COMPACTION_PROMPT, 10)] },
    });
  });

  it('is no prefill: a conversation ending on an assistant turn compacts on a model that refuses prefills', async () => {
    const model = 'claude-opus-4-6';
    expect((await ask({ model })).statusCode).toBe(200);
    const plain = await t.messages(
      { model, max_tokens: 100, messages: CONVERSATION },
      { headers: BETA },
    );
    expect(plain.json().error.message).toBe(
      'This model does not support assistant message prefill. The conversation must end with a user message.',
    );
    // count_tokens ignores `compaction`: the conversation as sent is a prefill there
    const counted = await t.messages(
      { model, messages: CONVERSATION, ...SUMMARIZE },
      { path: '/count_tokens', headers: BETA },
    );
    expect(counted.statusCode).toBe(400);
  });

  it('compacts on Haiku 5.5, not on Haiku 4.5', async () => {
    expect((await ask({ model: 'claude-haiku-5-5' })).json().stop_reason).toBe('compaction');
    expect((await ask({ model: 'claude-haiku-4-5' })).json().error.message).toBe(
      'compaction: not supported on claude-haiku-4-5',
    );
  });

  it('count_tokens takes the parameter and ignores it', async () => {
    expect(await count(SUMMARIZE)).toBe(await count({}));
  });

  it('count_tokens checks a signed block sent back as messages does', async () => {
    const forged = { ...BLOCK, signature: 'EuYBCkQYAiJAabc=' };
    const res = await t.messages(
      {
        model: MODEL,
        messages: [
          { role: 'assistant', content: [forged] },
          { role: 'user', content: 'Hi.' },
        ],
      },
      { path: '/count_tokens', headers: BETA },
    );
    expect(res.json()).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: 'messages.0.content.0.signature: Invalid `signature` in `compaction` block',
        details: { error_code: 'compaction_signature_invalid' },
      },
      request_id: expect.any(String),
    });
  });

  it('a summary the context window has no room left for: no block, stop_reason model_context_window_exceeded', async () => {
    // 'abcd' is one token: a conversation 10 tokens short of the 200 000-token window
    const conversation = (words: number) => [
      { role: 'user', content: 'abcd '.repeat(words) },
      { role: 'assistant', content: 'Noted.' },
    ];
    const base = await count({ messages: conversation(199_000), tools: undefined });
    const messages = conversation(199_000 + (200_000 - 10 - base));
    expect(await count({ messages, tools: undefined })).toBe(200_000 - 10);
    const res = await ask({ messages, tools: undefined });
    expect(res.json()).toMatchObject({
      content: [],
      stop_reason: 'model_context_window_exceeded',
      usage: { ...noUsage, iterations: [{ type: 'compaction', output_tokens: 10 }] },
    });
  });

  it('a prompt cache breakpoint: the summarizing step writes the conversation to the cache', async () => {
    const long = 'a fact to keep. '.repeat(400);
    const messages = [
      {
        role: 'user',
        content: [{ type: 'text', text: long, cache_control: { type: 'ephemeral' } }],
      },
      { role: 'assistant', content: 'Noted.' },
    ];
    const res = await ask({ messages });
    const [summarizing] = res.json().usage.iterations;
    expect(summarizing.cache_creation_input_tokens).toBeGreaterThan(1024);
    expect(summarizing.cache_creation.ephemeral_5m_input_tokens).toBe(
      summarizing.cache_creation_input_tokens,
    );
  });
});

describe('on-demand compaction: the block sent back', () => {
  it('first, as an assistant turn of its own: the summary stands for what it replaced', async () => {
    const messages = [
      { role: 'assistant', content: [BLOCK] },
      { role: 'user', content: 'Go on.' },
    ];
    const res = await t.messages({ model: MODEL, max_tokens: 100, messages }, { headers: BETA });
    expect(res.statusCode).toBe(200);
    const counted = await t.messages(
      { model: MODEL, messages },
      { path: '/count_tokens', headers: BETA },
    );
    expect(res.json().usage.input_tokens).toBe(counted.json().input_tokens);
    expect(res.json().stop_reason).not.toBe('compaction');
  });

  it('first in the first user turn, then more of the conversation; compacting again summarizes the summary too', async () => {
    const messages = [
      { role: 'user', content: [BLOCK, { type: 'text', text: 'Now search again.' }] },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 't2', name: 'search', input: { q: 'again' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: 'found 43' }] },
    ];
    const res = await ask({ messages });
    expect(res.statusCode).toBe(200);
    const summary = `Summary of the conversation so far: 3 messages (2 from the user, 1 from the assistant); tool calls: search ×1.\nBefore that: ${SUMMARY}\nThe user's latest message: Now search again.`;
    expect(res.json().content).toEqual([
      { type: 'compaction', content: summary, signature: signCompaction(summary) },
    ]);
  });

  it.each([
    [
      'a block not first (what it summarizes sent again)',
      [...CONVERSATION, { role: 'assistant', content: [BLOCK] }, { role: 'user', content: 'Hi.' }],
      'compaction_block_misplaced',
      'messages.4.content.0: `compaction` block must be sent first, in place of the messages it summarizes; remove those messages',
    ],
    [
      'an edited summary',
      [{ role: 'assistant', content: [{ ...BLOCK, content: `${SUMMARY}!` }] }],
      'compaction_content_mismatch',
      'messages.0.content.0.content: `content` differs from the summary its `signature` was made for; send the block back as it was returned',
    ],
    [
      'a signature the emulator did not make',
      [{ role: 'assistant', content: [{ ...BLOCK, signature: 'EuYBCkQYAiJAabc=' }] }],
      'compaction_signature_invalid',
      'messages.0.content.0.signature: Invalid `signature` in `compaction` block',
    ],
    [
      'a signed block with its content null',
      [{ role: 'assistant', content: [{ ...BLOCK, content: null }] }],
      'compaction_content_mismatch',
      'messages.0.content.0.content: `content` differs from the summary its `signature` was made for; send the block back as it was returned',
    ],
    [
      'tool_changes the block was not returned with',
      [
        {
          role: 'assistant',
          content: [
            {
              ...BLOCK,
              tool_changes: [
                { type: 'tool_removal', tool: { type: 'tool_reference', name: 'search' } },
              ],
            },
          ],
        },
      ],
      'compaction_tool_changes_mismatch',
      'messages.0.content.0.tool_changes: `tool_changes` differs from what was returned with the block',
    ],
    [
      'two blocks with content',
      [
        { role: 'assistant', content: [BLOCK] },
        { role: 'user', content: 'Hi.' },
        { role: 'assistant', content: [BLOCK] },
      ],
      'compaction_block_ambiguous',
      'messages: more than one `compaction` block has content; send only the block the conversation returned last',
    ],
    [
      'an empty conversation (a compaction request)',
      [],
      'compaction_nothing_to_summarize',
      'messages: there is no `user` or `assistant` content to summarize',
    ],
  ])('refuses %s with its error code', async (_name, messages, code, message) => {
    const res = await ask({
      messages,
      compaction: messages.length === 0 ? { type: 'summarize' } : null,
      max_tokens: 100,
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message, details: { error_code: code } },
      request_id: expect.any(String),
    });
  });

  it('an empty conversation without compaction is refused as before', async () => {
    const res = await ask({ messages: [], compaction: null });
    expect(res.json().error.message).toBe('messages: must have at least 1 item(s)');
  });
});

describe('on-demand compaction: refused as upstream refuses it', () => {
  const CM_AND_DEMAND = { 'anthropic-beta': 'context-management-2025-06-27,compact-2026-09-04' };
  const BOTH = { 'anthropic-beta': 'compact-2026-01-12,compact-2026-09-04' };
  const signedFirst = [
    { role: 'assistant', content: [BLOCK] },
    { role: 'user', content: 'Go on.' },
  ];
  it.each([
    [
      'without its beta',
      {},
      {},
      'compaction: requires the compact-2026-09-04 beta (msgapi-beta or anthropic-beta)',
    ],
    [
      'with context_management',
      { context_management: { edits: [{ type: 'clear_tool_uses_20250919' }] } },
      CM_AND_DEMAND,
      'context_management: cannot be combined with `compaction`',
    ],
    [
      'with stop_sequences',
      { stop_sequences: ['END'] },
      BETA,
      'stop_sequences: cannot be combined with `compaction`',
    ],
    [
      'with a structured-output format',
      {
        output_config: {
          format: { type: 'json_schema', schema: { type: 'object', additionalProperties: false } },
        },
      },
      BETA,
      'output_config.format: cannot be combined with `compaction`',
    ],
    [
      'with tool_choice any',
      { tool_choice: { type: 'any' } },
      BETA,
      'tool_choice.type: cannot be combined with `compaction`',
    ],
    [
      'with a forced tool',
      { tool_choice: { type: 'tool', name: 'search' } },
      BETA,
      'tool_choice.type: cannot be combined with `compaction`',
    ],
    [
      'on a model from before compaction',
      { model: 'claude-sonnet-4-5' },
      BETA,
      'compaction: not supported on claude-sonnet-4-5',
    ],
    [
      'a signed block without either beta',
      { messages: signedFirst, compaction: null },
      {},
      "messages.0.content.0: Input tag 'compaction' found using 'type' does not match any of the expected tags (a compaction block takes the compact-2026-01-12 or compact-2026-09-04 beta)",
    ],
    [
      'two blocks with content, without either beta (the tag is refused first)',
      {
        messages: [
          { role: 'assistant', content: [BLOCK] },
          { role: 'user', content: 'Hi.' },
          { role: 'assistant', content: [BLOCK] },
        ],
        compaction: null,
      },
      {},
      "messages.0.content.0: Input tag 'compaction' found using 'type' does not match any of the expected tags (a compaction block takes the compact-2026-01-12 or compact-2026-09-04 beta)",
    ],
    [
      'a signed block with the threshold beta only',
      { messages: signedFirst, compaction: null },
      { 'anthropic-beta': 'compact-2026-01-12' },
      'messages.0.content.0.compaction.signature: requires the compact-2026-09-04 beta',
    ],
    [
      'a signed block with a compact_20260112 edit',
      {
        messages: signedFirst,
        compaction: null,
        context_management: { edits: [{ type: 'compact_20260112' }] },
      },
      BOTH,
      'context_management.edits: `compact_20260112` cannot run on a request that carries a signed `compaction` block',
    ],
  ])('%s', async (_name, extra, headers, message) => {
    const res = await ask(extra, headers);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message },
      request_id: expect.any(String),
    });
  });

  it('a conversation ending on a tool call with no result: a 400 with no code, as for any request', async () => {
    const res = await ask({ messages: CONVERSATION.slice(0, 2) });
    expect(res.json()).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message:
          'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: t1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
      },
      request_id: expect.any(String),
    });
  });
});

describe('on-demand compaction through the official SDK', () => {
  const messages = CONVERSATION as Anthropic.Beta.BetaMessageParam[];
  const params = {
    model: MODEL,
    max_tokens: 4096,
    tools: [{ name: 'search', input_schema: { type: 'object' as const } }],
    betas: ['compact-2026-09-04'],
  };

  it('create and stream compact; the block goes back first; one sent after other messages is the SDK error class', async () => {
    await withAnthropic(async (client) => {
      const created = await client.beta.messages.create({
        ...params,
        messages,
        compaction: { type: 'summarize' },
      });
      expect(created.content).toEqual([BLOCK]);
      expect(created.stop_reason).toBe('compaction');
      const streamed = await client.beta.messages
        .stream({ ...params, messages, compaction: { type: 'summarize' } })
        .finalMessage();
      expect(streamed.content).toEqual([BLOCK]);
      expect(streamed.usage.iterations).toEqual(created.usage.iterations);
      const next = await client.beta.messages.create({
        ...params,
        messages: [
          { role: 'assistant', content: created.content },
          { role: 'user', content: 'And then?' },
        ],
      });
      // (a reply as any: the agent calls the tool it was offered)
      expect(next.stop_reason).toBe('tool_use');
      expect(next.content.map((block) => block.type)).not.toContain('compaction');
      const misplaced = client.beta.messages.create({
        ...params,
        messages: [
          { role: 'user', content: 'Hi.' },
          { role: 'assistant', content: created.content },
          { role: 'user', content: 'And then?' },
        ],
      });
      await expect(misplaced).rejects.toBeInstanceOf(
        Anthropic.Messages.CompactionBlockMisplacedError,
      );
    });
  });

  it('the tool runner: compactBeforeNextTurn replaces the history with the summary', async () => {
    await withAnthropic(async (client) => {
      const search = betaTool({
        name: 'search',
        description: 'Search the notes',
        inputSchema: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] },
        run: async () => 'found 42',
      });
      const runner = client.beta.messages.toolRunner({
        model: MODEL,
        max_tokens: 4096,
        betas: ['compact-2026-09-04'],
        tools: [search],
        tool_choice: { type: 'auto' },
        messages: [{ role: 'user', content: 'Search the notes for the answer.' }],
      });
      const seen: string[] = [];
      for await (const message of runner) {
        seen.push(message.stop_reason ?? '');
        if (seen.length === 1) runner.compactBeforeNextTurn();
        if (seen.length > 6) break;
      }
      expect(seen).toContain('compaction');
      const history = runner.params.messages;
      const first = history[0];
      expect(first?.role).toBe('assistant');
      expect(Array.isArray(first?.content) && first.content[0]?.type).toBe('compaction');
    });
  });
});
