import Anthropic from '@anthropic-ai/sdk';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator.js';
import { splitTokens } from '../../src/platform/tokens.js';
import { generateReply } from '../../src/text/default-reply.js';

let emulator: Emulator;
let client: Anthropic;

const sdk = (
  apiKey: string,
  headers: Record<string, string> = { 'msgapi-version': '2023-06-01' },
) =>
  new Anthropic({
    apiKey,
    baseURL: `${emulator.url}/messages-api`,
    defaultHeaders: headers,
    maxRetries: 0,
  });

beforeAll(async () => {
  emulator = await startEmulator({ apiKeys: ['sk-ant-test'], logLevel: 'silent' });
  client = sdk('sk-ant-test');
});
afterAll(() => emulator.close());

describe('official @anthropic-ai/sdk against the emulator', () => {
  it('creates a message', async () => {
    const { data, request_id } = await client.messages
      .create({
        model: 'claude-like',
        max_tokens: 256,
        system: 'You are terse.',
        messages: [{ role: 'user', content: 'Say hello' }],
      })
      .withResponse();
    const reply = generateReply('Say hello', 0);
    expect(data.content).toEqual([{ type: 'text', text: reply.text, citations: null }]);
    expect(data.stop_reason).toBe('end_turn');
    expect(data.usage.output_tokens).toBe(reply.tokens);
    expect(request_id).toMatch(/^req_/);
  });

  it('streams with messages.stream() to the same final message', async () => {
    const request = {
      model: 'claude-like',
      max_tokens: 8,
      messages: [{ role: 'user' as const, content: 'Stream this' }],
    };
    const stream = client.messages.stream(request);
    let text = '';
    stream.on('text', (delta) => {
      text += delta;
    });
    const final = await stream.finalMessage();
    const plain = await client.messages.create(request);
    expect(final.content).toEqual(plain.content);
    expect(text).toBe((plain.content[0] as { text: string }).text);
    expect(final.stop_reason).toBe('max_tokens');
    expect(final.usage.output_tokens).toBe(8);
  });

  it('streams thinking and tool use: the SDK sees every event, in order, and the same final message', async () => {
    const request = {
      model: 'claude-like',
      max_tokens: 4096,
      thinking: { type: 'enabled' as const, budget_tokens: 2048 },
      tools: [
        {
          name: 'get_weather',
          input_schema: {
            type: 'object' as const,
            properties: { city: { type: 'string' } },
            required: ['city'],
          },
        },
      ],
      messages: [{ role: 'user' as const, content: 'Weather in Lima?' }],
    };
    const whole = await client.messages.create(request);
    const stream = client.messages.stream(request);
    const events: unknown[] = [];
    for await (const event of stream) events.push(structuredClone(event));
    const final = await stream.finalMessage();
    expect(final.content).toEqual(
      whole.content.map((b) => (b.type === 'tool_use' ? { ...b, id: expect.any(String) } : b)),
    );
    const [thinking, text, use] = whole.content;
    if (thinking?.type !== 'thinking' || text?.type !== 'text' || use?.type !== 'tool_use') {
      throw new Error(`unexpected blocks ${whole.content.map((b) => b.type)}`);
    }
    const useId = (final.content[2] as { id: string }).id;
    const deltas = (index: number, type: string, field: string, text: string) =>
      splitTokens(text, 4).map((piece) => ({
        type: 'content_block_delta',
        index,
        delta: { type, [field]: piece },
      }));
    expect(events).toEqual([
      {
        type: 'message_start',
        message: {
          model: 'claude-like',
          id: expect.stringMatching(/^msg_/),
          type: 'message',
          role: 'assistant',
          content: [],
          container: null,
          stop_reason: null,
          stop_sequence: null,
          stop_details: null,
          // (the thinking's tokens come with message_delta)
          usage: { ...whole.usage, output_tokens: 1, output_tokens_details: null },
          diagnostics: null,
        },
      },
      {
        type: 'content_block_start',
        index: 0,
        content_block: { type: 'thinking', thinking: '', signature: '' },
      },
      ...deltas(0, 'thinking_delta', 'thinking', thinking.thinking),
      {
        type: 'content_block_delta',
        index: 0,
        delta: { type: 'signature_delta', signature: thinking.signature },
      },
      { type: 'content_block_stop', index: 0 },
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'text', text: '', citations: null },
      },
      ...deltas(1, 'text_delta', 'text', text.text),
      { type: 'content_block_stop', index: 1 },
      {
        type: 'content_block_start',
        index: 2,
        content_block: {
          type: 'tool_use',
          id: useId,
          name: 'get_weather',
          input: {},
          caller: { type: 'direct' },
        },
      },
      ...deltas(2, 'input_json_delta', 'partial_json', JSON.stringify(use.input)),
      { type: 'content_block_stop', index: 2 },
      {
        type: 'message_delta',
        delta: {
          stop_reason: 'tool_use',
          stop_sequence: null,
          stop_details: null,
          container: null,
        },
        usage: {
          input_tokens: whole.usage.input_tokens,
          cache_creation_input_tokens: 0,
          cache_read_input_tokens: 0,
          output_tokens: whole.usage.output_tokens,
          output_tokens_details: whole.usage.output_tokens_details,
          server_tool_use: null,
        },
      },
      { type: 'message_stop' },
    ]);
  });

  it('reports prompt caching in usage', async () => {
    const request = {
      model: 'claude-like',
      max_tokens: 8,
      system: [
        {
          type: 'text' as const,
          text: 'abcd '.repeat(1100),
          cache_control: { type: 'ephemeral' as const },
        },
      ],
      messages: [{ role: 'user' as const, content: 'hi' }],
    };
    const first = await client.messages.create(request, {
      headers: { 'msgapi-beta': 'prompt-caching-2024-07-31' },
    });
    const second = await client.messages.create(request);
    expect(first.usage).toMatchObject({
      cache_creation_input_tokens: 1100,
      cache_read_input_tokens: 0,
    });
    expect(second.usage).toMatchObject({
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 1100,
    });
    const counted = await client.messages.countTokens({
      model: 'claude-like',
      system: request.system,
      messages: request.messages,
    });
    expect(counted.input_tokens).toBe(1104);
  });

  it('raises the SDK typed errors', async () => {
    const auth = await sdk('sk-ant-wrong')
      .messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(auth).toBeInstanceOf(Anthropic.AuthenticationError);

    const bad = await client.messages
      .create({ model: 'm', max_tokens: -1, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(Anthropic.BadRequestError);
    expect((bad as InstanceType<typeof Anthropic.BadRequestError>).error).toMatchObject({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: 'max_tokens: must be greater than or equal to 0',
      },
    });

    const noVersion = await sdk('sk-ant-test', {})
      .messages.create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(noVersion).toBeInstanceOf(Anthropic.BadRequestError);
    expect(String((noVersion as Error).message)).toContain('msgapi-version: header is required');
  });
});

describe('@anthropic-ai/sdk and injected faults', () => {
  const rule = (body: object) =>
    fetch(`${emulator.url}/_emulator/faults`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });

  it.each([
    ['a one-shot 529 overload', { status: 529, times: 1, retry_after_s: 1 }, [529, 200]],
    ['a one-shot 429', { status: 429, times: 1, retry_after_s: 1 }, [429, 200]],
    ['a one-shot 500', { status: 500, times: 1 }, [500, 200]],
    ['a dropped connection', { kind: 'disconnect', times: 1 }, [0, 200]],
  ])('retries %s and succeeds', async (_name, fault, statuses) => {
    emulator.reset();
    await rule({ path: '/messages-api/v1/messages', ...fault });
    const retrying = new Anthropic({
      apiKey: 'sk-ant-test',
      baseURL: `${emulator.url}/messages-api`,
      defaultHeaders: { 'msgapi-version': '2023-06-01' },
      maxRetries: 2,
    });
    const message = await retrying.messages.create({
      model: 'm',
      max_tokens: 500,
      messages: [{ role: 'user', content: 'retry me' }],
    });
    expect(message.content[0]).toEqual({
      type: 'text',
      text: generateReply('retry me', 0).text,
      citations: null,
    });
    const { requests } = (await (await fetch(`${emulator.url}/_emulator/requests`)).json()) as {
      requests: Array<{ status: number }>;
    };
    expect(requests.map((r) => r.status)).toEqual(statuses);
  });

  it('reports a dropped connection as APIConnectionError without retries', async () => {
    emulator.reset();
    await rule({ path: '/messages-api/v1/messages', kind: 'disconnect', times: 1 });
    const failure = await client.messages
      .create({ model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] })
      .catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(Anthropic.APIConnectionError);
  });

  it('sees an error event in the middle of a stream as an overloaded error', async () => {
    emulator.reset();
    await rule({
      path: '/messages-api/v1/messages',
      kind: 'stream_error',
      after_events: 4,
      times: 1,
    });
    const stream = client.messages.stream({
      model: 'm',
      max_tokens: 100,
      messages: [{ role: 'user', content: 'stream then fail' }],
    });
    const failure = await stream.finalMessage().catch((e: unknown) => e);
    expect(failure).toBeInstanceOf(Anthropic.APIError);
    expect((failure as { error?: unknown }).error).toMatchObject({
      type: 'error',
      error: { type: 'overloaded_error', message: 'Overloaded' },
    });
  });

  it('takes context editing through client.beta: the edits applied on the message, the stream and count_tokens', async () => {
    const big = 'word '.repeat(2000);
    const request = {
      model: 'claude-sonnet-4-5',
      max_tokens: 16,
      betas: ['context-management-2025-06-27'],
      tools: [{ name: 'search', input_schema: { type: 'object' as const } }],
      messages: [
        { role: 'user' as const, content: 'go' },
        {
          role: 'assistant' as const,
          content: [{ type: 'tool_use' as const, id: 't1', name: 'search', input: {} }],
        },
        {
          role: 'user' as const,
          content: [{ type: 'tool_result' as const, tool_use_id: 't1', content: big }],
        },
      ],
      context_management: {
        edits: [
          {
            type: 'clear_tool_uses_20250919' as const,
            trigger: { type: 'input_tokens' as const, value: 1000 },
            keep: { type: 'tool_uses' as const, value: 0 },
          },
        ],
      },
    };
    const message = await client.beta.messages.create(request);
    const applied = message.context_management?.applied_edits;
    expect(applied).toEqual([
      {
        type: 'clear_tool_uses_20250919',
        cleared_tool_uses: 1,
        cleared_input_tokens: expect.any(Number),
      },
    ]);
    const final = await client.beta.messages.stream(request).finalMessage();
    expect(final.context_management).toEqual(message.context_management);
    const { model, messages, tools, betas, context_management } = request;
    const counted = await client.beta.messages.countTokens({
      model,
      messages,
      tools,
      betas,
      context_management,
    });
    expect(counted.input_tokens).toBe(message.usage.input_tokens);
    expect(counted.context_management).toEqual({
      original_input_tokens:
        message.usage.input_tokens + (applied?.[0]?.cleared_input_tokens ?? Number.NaN),
    });
  });
});
