import { createAnthropic } from '@ai-sdk/anthropic';
import type Anthropic from '@anthropic-ai/sdk';
import { generateText } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countTokens } from '../../src/platform/tokens.js';
import { withAnthropic, withEmulator } from '../helpers/anthropic.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Mid-conversation system messages (`role: "system"` in `messages`).
 * @see https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages
 */

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const MODEL = 'claude-opus-4-8';
const TOOLS = [{ name: 'search', input_schema: { type: 'object' } }];
const NOTE = 'From now on, answer in one short line.';
const hi = { role: 'user', content: 'Hi there.' };
const note = { role: 'system', content: NOTE };

const ask = (messages: object[], extra: object = {}) =>
  t.messages({ model: MODEL, max_tokens: 60, tools: TOOLS, messages, ...extra }, {});
const count = async (messages: object[]) =>
  (await t.messages({ model: MODEL, tools: TOOLS, messages }, { path: '/count_tokens' })).json()
    .input_tokens as number;

describe('mid-conversation system messages', () => {
  it('after a user turn, last: counted as a turn of its own (framing and text), the reply keyed on the user turn', async () => {
    const plain = await ask([hi]);
    const res = await ask([hi, note]);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    // the same reply (its tool_use id apart, which counts up)
    const withoutIds = (content: Array<Record<string, unknown>>) =>
      content.map(({ id: _, ...block }) => block);
    expect(withoutIds(body.content)).toEqual(withoutIds(plain.json().content));
    expect(body.usage.input_tokens).toBe(await count([hi, note]));
    expect((await count([hi, note])) - (await count([hi]))).toBe(3 + countTokens(NOTE));
  });

  it('several in a row, as text blocks, before an assistant turn; after tool results the reply still reads them', async () => {
    const loop = [
      { role: 'user', content: 'Find it.' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'search', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: 'found 42' }] },
      { role: 'system', content: [{ type: 'text', text: 'Cite the tool.' }] },
      { role: 'system', content: NOTE },
    ];
    const last = await ask(loop);
    expect(last.statusCode).toBe(200);
    expect(last.json().content[0].text).toMatch(/^The search tool returned: found 42\./);
    const before = await ask([...loop, { role: 'assistant', content: 'Done.' }, hi]);
    expect(before.statusCode).toBe(200);
  });

  it("after an assistant turn ending in an upstream tool's result", async () => {
    const searched = {
      role: 'assistant',
      content: [
        { type: 'server_tool_use', id: 'srvtoolu_01', name: 'web_search', input: { query: 'sky' } },
        { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01', content: [] },
      ],
    };
    const tools = [{ type: 'web_search_20250305', name: 'web_search' }];
    expect((await ask([hi, searched, note], { tools })).statusCode).toBe(200);
  });

  it("is no message of either side in a compaction's summary", async () => {
    const res = await t.messages(
      {
        model: MODEL,
        max_tokens: 4096,
        compaction: { type: 'summarize' },
        messages: [hi, note, { role: 'assistant', content: 'Hello.' }],
      },
      { headers: { 'anthropic-beta': 'compact-2026-09-04' } },
    );
    expect(res.json().content[0].content).toBe(
      "Summary of the conversation so far: 2 messages (1 from the user, 1 from the assistant).\nThe user's latest message: Hi there.",
    );
  });

  it('appended after a cached prefix, keeps the cache: the prefix is read', async () => {
    const long = {
      role: 'user',
      content: [{ type: 'text', text: 'abcd '.repeat(1500), cache_control: { type: 'ephemeral' } }],
    };
    const first = (await ask([long])).json().usage;
    expect(first.cache_creation_input_tokens).toBeGreaterThan(1500);
    const next = (await ask([long, note])).json().usage;
    expect(next.cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
  });

  it.each([
    [
      'first',
      [note, hi],
      "messages.0: use the top-level 'system' parameter for the initial system prompt",
    ],
    [
      'before a user turn',
      [hi, note, { role: 'user', content: 'Again.' }],
      "messages.1: role 'system' must precede an 'assistant' message or end the array",
    ],
    [
      'between a tool call and its result',
      [
        hi,
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'search', input: {} }] },
        note,
      ],
      "messages.2: role 'system' must follow a 'user' message or an 'assistant' message ending in a server tool result",
    ],
    [
      'with a block that is not text',
      [
        hi,
        {
          role: 'system',
          content: [{ type: 'image', source: { type: 'url', url: 'https://x/y.png' } }],
        },
      ],
      "messages.1.content.0.type: role 'system' supports text blocks only",
    ],
  ])('refuses one %s', async (_name, messages, message) => {
    const res = await ask(messages);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message },
      request_id: expect.any(String),
    });
  });

  it.each([
    'claude-opus-4-7',
    'claude-sonnet-4-6',
    'claude-sonnet-5',
    'claude-haiku-4-5',
    'claude-3-5-haiku-latest',
  ])('is refused on %s, as models before it refuse the role', async (model) => {
    const res = await ask([hi, note], { model });
    expect(res.json().error.message).toBe(
      'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.',
    );
  });

  it.each([
    'claude-opus-4-8',
    'claude-opus-5',
    'claude-sonnet-5-5',
    'claude-haiku-5-5',
    'claude-like',
  ])('is taken on %s', async (model) => {
    expect((await ask([hi, note], { model })).statusCode).toBe(200);
  });

  it('through the SDK: messages.create and stream with a system message in messages', async () => {
    await withAnthropic(async (client) => {
      const messages: Anthropic.MessageParam[] = [
        { role: 'user', content: 'Hi there.' },
        { role: 'system', content: NOTE },
      ];
      const created = await client.messages.create({ model: MODEL, max_tokens: 60, messages });
      expect(created.stop_reason).toBe('max_tokens');
      const streamed = await client.messages
        .stream({ model: MODEL, max_tokens: 60, messages })
        .finalMessage();
      expect(streamed.content).toEqual(created.content);
    });
  });

  it('through the Vercel AI SDK: a system message after a user turn goes as one (with its beta), and is answered', async () => {
    await withEmulator(async (emulator) => {
      const anthropic = createAnthropic({
        baseURL: `${emulator.url}/messages-api/v1`,
        apiKey: 'sk-local',
        headers: { 'msgapi-version': '2023-06-01' },
      });
      const result = await generateText({
        model: anthropic(MODEL),
        maxOutputTokens: 60,
        // AI SDK 7 takes system messages in `messages` only when told to
        allowSystemInMessages: true,
        messages: [
          { role: 'system', content: 'You are terse.' },
          { role: 'user', content: 'Hi there.' },
          { role: 'system', content: NOTE },
        ],
      });
      expect(result.finishReason).toBe('length');
      const [entry] = await emulator.journal({ group: 'messages' });
      const sent = entry?.body as { system: unknown; messages: Array<{ role: string }> };
      expect(sent.messages.map((m) => m.role)).toEqual(['user', 'system']);
      expect(entry?.status).toBe(200);
    });
  });
});
