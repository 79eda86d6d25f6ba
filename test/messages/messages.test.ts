import type { LightMyRequestResponse } from 'fastify';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countTokens, truncateTokens } from '../../src/platform/tokens.js';
import { generateReply } from '../../src/text/default-reply.js';
import { USAGE_REST } from '../helpers/anthropic.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';
import type { GroupRequest } from '../helpers/groups.js';

const HEADERS = { 'x-api-key': 'key-a', 'msgapi-version': '2023-06-01' };

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const post = (payload: unknown, options?: GroupRequest) => t.messages(payload, options);

/** A 400 in the messages envelope with this message when `refused`, else a 200. */
function expectRefusedIf(refused: boolean, res: LightMyRequestResponse, message: string) {
  expect(res.statusCode).toBe(refused ? 400 : 200);
  if (refused) expect(res.json().error).toEqual({ type: 'invalid_request_error', message });
}

const usage = (input: number, output: number, creation = 0, read = 0, c1h = 0) => ({
  input_tokens: input,
  cache_creation_input_tokens: creation,
  cache_read_input_tokens: read,
  cache_creation: { ephemeral_5m_input_tokens: creation - c1h, ephemeral_1h_input_tokens: c1h },
  output_tokens: output,
  service_tier: 'standard',
  ...USAGE_REST,
});

describe('POST /messages-api/v1/messages', () => {
  it('answers with the whole message object', async () => {
    const res = await post({
      model: 'claude-like',
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['request-id']).toBe('req_1');
    const reply = generateReply('Hello there', 0);
    expect(res.json()).toEqual({
      model: 'claude-like',
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      content: [{ type: 'text', text: reply.text, citations: null }],
      container: null,
      stop_reason: 'end_turn',
      stop_sequence: null,
      stop_details: null,
      // 3 (message framing) + 4 ("Hello there")
      usage: usage(7, reply.tokens),
      diagnostics: null,
    });
    // (upstream's order, as captured answers have it)
    expect(Object.keys(res.json())).toEqual([
      'model',
      'id',
      'type',
      'role',
      'content',
      'container',
      'stop_reason',
      'stop_sequence',
      'stop_details',
      'usage',
      'diagnostics',
    ]);
    expect(Object.keys(res.json().usage)).toEqual([
      'input_tokens',
      'cache_creation_input_tokens',
      'cache_read_input_tokens',
      'cache_creation',
      'output_tokens',
      'output_tokens_details',
      'server_tool_use',
      'service_tier',
      'inference_geo',
      'speed',
    ]);
  });

  it.each([
    ['claude-sonnet-4-5-20250929', true],
    ['claude-opus-4-1', true],
    ['claude-haiku-4-5', true],
    ['claude-opus-4-6', true],
    ['claude-sonnet-4-20250514', false],
    ['claude-3-7-sonnet-latest', false],
    ['claude-like', false],
  ])('%s: temperature with top_p refused (%s), either alone taken', async (model, refused) => {
    const ask = (extra: object) =>
      post({ model, max_tokens: 20, messages: [{ role: 'user', content: 'x' }], ...extra });
    expectRefusedIf(
      refused,
      await ask({ temperature: 0.5, top_p: 0.9 }),
      'temperature and top_p cannot both be specified for this model. Please use only one.',
    );
    expect((await ask({ temperature: 0.5 })).statusCode).toBe(200);
    expect((await ask({ top_p: 0.9 })).statusCode).toBe(200);
  });

  it.each([
    ['claude-opus-4-6', true],
    ['claude-sonnet-4-6', true],
    ['claude-opus-4-7-20260301', true],
    ['claude-sonnet-5', true],
    ['claude-sonnet-4-5', false],
    ['claude-like', false],
  ])('%s: a prefill (a last assistant turn) refused (%s)', async (model, refused) => {
    const ask = (last: object[]) =>
      post({
        model,
        max_tokens: 20,
        messages: [{ role: 'user', content: 'Name a colour' }, ...last],
      });
    expectRefusedIf(
      refused,
      await ask([{ role: 'assistant', content: 'The colour is' }]),
      'This model does not support assistant message prefill. The conversation must end with a user message.',
    );
    expect((await ask([])).statusCode).toBe(200);
    expect((await ask([{ role: 'assistant', content: '' }])).statusCode).toBe(200);
  });

  it('takes a system prompt, multi-turn history and text blocks', async () => {
    const res = await post({
      model: 'm',
      max_tokens: 100,
      system: [
        { type: 'text', text: 'Be brief.' },
        { type: 'text', text: 'Use English.' },
      ],
      temperature: 0.2,
      top_p: 0.9,
      top_k: 40,
      metadata: { user_id: 'u-1' },
      messages: [
        { role: 'user', content: 'What is a cat?' },
        { role: 'assistant', content: [{ type: 'text', text: 'An animal.' }] },
        { role: 'user', content: [{ type: 'text', text: 'And a dog?' }] },
      ],
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.content[0].text).toBe(generateReply('And a dog?', 0).text);
    // system 4 + 4; messages 3 x 3 framing + 5 + 4 + 4
    expect(body.usage.input_tokens).toBe(4 + 4 + 9 + 5 + 4 + 4);
  });

  it('merges consecutive turns of one role when choosing the reply', async () => {
    const res = await post({
      model: 'm',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'first part' },
        { role: 'user', content: 'second part' },
      ],
    });
    expect(res.json().content[0].text).toBe(generateReply('first part\nsecond part', 0).text);
  });

  it('continues an assistant prefill: the reply is keyed on the last user turn', async () => {
    const res = await post({
      model: 'm',
      max_tokens: 100,
      messages: [
        { role: 'user', content: 'Name a colour' },
        { role: 'assistant', content: 'The colour is' },
      ],
    });
    expect(res.json().content[0].text).toBe(generateReply('Name a colour', 0).text);
  });

  it('takes the standard container, inference_geo, speed and diagnostics fields; usage says the speed and region asked for', async () => {
    const base = { model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'Hi' }] };
    const plain = (await post(base)).json();
    for (const [extra, served] of [
      [
        { container: 'container_011', inference_geo: 'us', speed: 'fast' },
        { inference_geo: 'us', speed: 'fast' },
      ],
      [
        {
          container: {
            id: null,
            skills: [{ skill_id: 'pptx', type: 'anthropic', version: 'latest' }],
          },
        },
        {},
      ],
      [{ container: null, inference_geo: null, speed: null, diagnostics: null }, {}],
      // (opting in on a first turn: nothing to compare with)
      [{ speed: 'standard', diagnostics: { previous_message_id: null } }, {}],
    ] as const) {
      const res = await post({ ...base, ...extra });
      expect(res.statusCode).toBe(200);
      expect({ ...res.json(), id: plain.id }).toEqual({
        ...plain,
        usage: { ...plain.usage, ...served },
      });
    }
  });

  it('with diagnostics.previous_message_id, says it cannot tell why the cache missed a prompt that read nothing from it', async () => {
    const body = {
      model: 'm',
      max_tokens: 10,
      system: [{ type: 'text', text: 'abcd '.repeat(1100), cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Hi' }],
      diagnostics: { previous_message_id: 'msg_0' },
    };
    const missed = (await post(body)).json();
    expect(missed.usage.cache_read_input_tokens).toBe(0);
    expect(missed.diagnostics).toEqual({ cache_miss_reason: { type: 'unavailable' } });
    const read = (await post(body)).json();
    expect(read.usage.cache_read_input_tokens).toBe(1100);
    expect(read.diagnostics).toBeNull();
  });

  it('takes an empty last assistant message (no prefill) and refuses an empty earlier one', async () => {
    const user = { role: 'user', content: 'Hi' };
    const plain = (await post({ model: 'm', max_tokens: 50, messages: [user] })).json();
    const res = await post({
      model: 'm',
      max_tokens: 50,
      messages: [user, { role: 'assistant', content: '' }],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().content).toEqual(plain.content);
    const earlier = await post({
      model: 'm',
      max_tokens: 50,
      messages: [user, { role: 'assistant', content: '' }, user],
    });
    expect(earlier.statusCode).toBe(400);
    expect(earlier.json().error.message).toBe(
      'messages.1.content: must contain non-whitespace text',
    );
  });

  it('cuts at max_tokens with stop_reason "max_tokens"', async () => {
    const res = await post({
      model: 'm',
      max_tokens: 5,
      messages: [{ role: 'user', content: 'x' }],
    });
    const expected = truncateTokens(generateReply('x', 0).text, 5).text;
    expect(res.json()).toMatchObject({
      content: [{ type: 'text', text: expected }],
      stop_reason: 'max_tokens',
      stop_sequence: null,
      usage: { output_tokens: 5 },
    });
  });

  it('stops before a stop sequence with stop_reason "stop_sequence" naming it', async () => {
    const full = generateReply('stop please', 0).text;
    const word = full.split(' ')[2] as string;
    const res = await post({
      model: 'm',
      max_tokens: 500,
      stop_sequences: ['never-there', word],
      messages: [{ role: 'user', content: 'stop please' }],
    });
    const text = full.slice(0, full.indexOf(word));
    expect(res.json()).toMatchObject({
      content: [{ type: 'text', text }],
      stop_reason: 'stop_sequence',
      stop_sequence: word,
      usage: { output_tokens: countTokens(text) },
    });
  });

  it('answers nothing visible with content [] (no empty text block), streamed too', async () => {
    const full = generateReply('stop please', 0).text;
    const first = full.split(' ')[0] as string;
    const forced = {
      tools: [{ name: 'calc', input_schema: { type: 'object', properties: {} } }],
      tool_choice: { type: 'any' },
    };
    // (a call cut by max_tokens was being written: its token counts)
    for (const [extra, reason, outputTokens] of [
      [{ stop_sequences: [first] }, 'stop_sequence', 0],
      [{ ...forced, max_tokens: 1 }, 'max_tokens', 1],
    ] as const) {
      const body = {
        model: 'm',
        max_tokens: 500,
        messages: [{ role: 'user', content: 'stop please' }],
        ...extra,
      };
      const res = (await post(body)).json();
      expect(res).toMatchObject({
        content: [],
        stop_reason: reason,
        usage: { output_tokens: outputTokens },
      });
      const events = parseSse((await post({ ...body, stream: true })).body).map(
        (frame) => frame.event,
      );
      expect(events).toEqual(['message_start', 'message_delta', 'message_stop']);
    }
  });

  it('takes the key from x-api-key or, like upstream, from Authorization: Bearer', async () => {
    const res = await post(
      { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] },
      { key: null, headers: { authorization: 'Bearer key-a', 'msgapi-version': '2023-06-01' } },
    );
    expect(res.statusCode).toBe(200);
  });

  it('accepts a msgapi-beta header listing betas', async () => {
    const res = await post(
      { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] },
      { headers: { 'msgapi-beta': 'prompt-caching-2024-07-31,other-beta' } },
    );
    expect(res.statusCode).toBe(200);
  });
});

describe('POST /messages-api/v1/messages/count_tokens', () => {
  it('counts with the same counter as usage', async () => {
    const request = {
      model: 'm',
      system: 'You are terse.',
      messages: [
        { role: 'user', content: 'Hello there' },
        { role: 'assistant', content: 'Hi!' },
        { role: 'user', content: [{ type: 'text', text: 'How are you?' }] },
      ],
    };
    const counted = await t.inject({
      method: 'POST',
      url: '/messages-api/v1/messages/count_tokens',
      headers: HEADERS,
      payload: request,
    });
    expect(counted.statusCode).toBe(200);
    // system 5; framing 9; 4 + 2 + 4
    expect(counted.json()).toEqual({ input_tokens: 5 + 9 + 4 + 2 + 4 });
    const created = await post({ ...request, max_tokens: 10 });
    expect(created.json().usage.input_tokens).toBe(24);
  });

  it('refuses max_tokens-only fields and bad bodies in the messages envelope', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/messages-api/v1/messages/count_tokens',
      headers: HEADERS,
      payload: { model: 'm', messages: [], max_tokens: 5 },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: 'max_tokens: Extra inputs are not permitted',
      },
      request_id: res.headers['request-id'],
    });
  });
});

describe('messages validation', () => {
  const base = { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'x' }] };
  it.each([
    [{ model: 'm', messages: base.messages }, 'max_tokens: Field required'],
    [{ ...base, max_tokens: -1 }, 'max_tokens: must be greater than or equal to 0'],
    [{ ...base, max_tokens: 2.5 }, 'max_tokens: must be an integer'],
    [{ ...base, model: undefined }, 'model: Field required'],
    [{ ...base, messages: [] }, 'messages: must have at least 1 item(s)'],
    [
      { ...base, messages: [{ role: 'tool', content: 'x' }] },
      'messages.0.role: must be one of "user", "assistant", "system"',
    ],
    [
      { ...base, messages: [{ role: 'user', content: 5 }] },
      'messages.0.content: must be a string or a non-empty array of content blocks',
    ],
    [
      { ...base, messages: [{ role: 'user', content: [] }] },
      'messages.0.content: must have at least 1 item(s)',
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'video', text: 'x' }] }] },
      'messages.0.content.0.type: must be one of "text", "image", "document", "search_result", "tool_use", "tool_result", "thinking", "redacted_thinking", "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "code_execution_tool_result", "bash_code_execution_tool_result", "text_editor_code_execution_tool_result", "tool_search_tool_result", "container_upload", "compaction"',
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'text', text: 'x', extra: 1 }] }] },
      'messages.0.content.0.extra: Extra inputs are not permitted',
    ],
    [
      { ...base, messages: [{ role: 'user', content: '   ' }] },
      'messages.0.content: must contain non-whitespace text',
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'text', text: '' }] }] },
      'messages.0.content.0.text: must contain non-whitespace text',
    ],
    [{ ...base, temperature: 1.5 }, 'temperature: must be less than or equal to 1'],
    [{ ...base, top_p: -0.1 }, 'top_p: must be greater than or equal to 0'],
    [{ ...base, top_k: -1 }, 'top_k: must be greater than or equal to 0'],
    [{ ...base, stream: 'true' }, 'stream: must be a boolean'],
    [{ ...base, stop_sequences: 'END' }, 'stop_sequences: must be an array'],
    [{ ...base, system: 42 }, 'system: must be a string or an array of text blocks'],
    [
      { ...base, system: [{ type: 'text', text: 'x', cache_control: { type: 'persistent' } }] },
      'system.0.cache_control.type: must be "ephemeral"',
    ],
    [
      {
        ...base,
        system: [{ type: 'text', text: 'x', cache_control: { type: 'ephemeral', ttl: '2h' } }],
      },
      'system.0.cache_control.ttl: must be one of "5m", "1h"',
    ],
    [
      {
        ...base,
        system: [
          { type: 'text', text: 'a', cache_control: { type: 'ephemeral' } },
          { type: 'text', text: 'b', cache_control: { type: 'ephemeral', ttl: '1h' } },
        ],
      },
      'system.1.cache_control.ttl: a "1h" cache_control may not come after a "5m" one',
    ],
    [
      {
        ...base,
        system: [1, 2, 3].map((n) => ({
          type: 'text',
          text: `s${n}`,
          cache_control: { type: 'ephemeral' },
        })),
        messages: [
          {
            role: 'user',
            content: [1, 2].map((n) => ({
              type: 'text',
              text: `m${n}`,
              cache_control: { type: 'ephemeral' },
            })),
          },
        ],
      },
      'messages.0.content.1.cache_control: A maximum of 4 blocks with cache_control may be provided. Found 5.',
    ],
    [
      {
        ...base,
        cache_control: { type: 'ephemeral' },
        system: [1, 2, 3, 4].map((n) => ({
          type: 'text',
          text: `s${n}`,
          cache_control: { type: 'ephemeral' },
        })),
      },
      'cache_control: A maximum of 4 blocks with cache_control may be provided. Found 5.',
    ],
    [{ ...base, workspace: 'w' }, 'workspace: Extra inputs are not permitted'],
    [{ ...base, speed: 'slow' }, 'speed: must be one of "standard", "fast"'],
  ])('refuses %j', async (payload, message) => {
    const res = await post(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message },
      request_id: res.headers['request-id'],
    });
  });

  it('refuses a wrong content type with 415 in its envelope', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/messages-api/v1/messages',
      headers: { ...HEADERS, 'content-type': 'text/plain' },
      payload: 'hi',
    });
    expect(res.statusCode).toBe(415);
    expect(res.json().error.type).toBe('invalid_request_error');
  });
});
