import { Ajv } from 'ajv';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countTokens } from '../../src/platform/tokens.js';
import { generateReply } from '../../src/text/default-reply.js';
import { MESSAGE_REST, USAGE_REST } from '../helpers/anthropic.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

const DIRECT = { type: 'direct' };

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const WEATHER = {
  name: 'get_weather',
  description: 'Current weather for a city',
  input_schema: {
    type: 'object',
    properties: {
      city: { type: 'string', minLength: 1 },
      unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
    },
    required: ['city', 'unit'],
  },
};
const TIME = {
  name: 'get_time',
  input_schema: {
    type: 'object',
    properties: { zone: { type: 'string', format: 'date-time' } },
    required: ['zone'],
  },
};
const ajv = new Ajv({ strict: false });
const validInput = (tool: { input_schema: object }, input: unknown) =>
  ajv.validate(tool.input_schema, input);

const ask = (content: string, extra: object = {}) =>
  t.messages({
    model: 'm',
    max_tokens: 1024,
    tools: [WEATHER, TIME],
    messages: [{ role: 'user', content }],
    ...extra,
  });

const tokensOf = (call: { name: string; input: unknown }) =>
  countTokens(call.name) + countTokens(JSON.stringify(call.input));

describe('tool use', () => {
  it('calls the first tool on auto, with a line before it and input valid against its schema', async () => {
    const res = await ask('What should I wear in Paris?');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const input = body.content[1].input;
    expect(validInput(WEATHER, input)).toBe(true);
    const preface = 'I will use the get_weather tool for this.';
    const counted = await t.messages(
      {
        model: 'm',
        tools: [WEATHER, TIME],
        messages: [{ role: 'user', content: 'What should I wear in Paris?' }],
      },
      { path: '/count_tokens' },
    );
    expect(body).toEqual({
      model: 'm',
      id: 'msg_1',
      type: 'message',
      role: 'assistant',
      content: [
        { type: 'text', text: preface, citations: null },
        { type: 'tool_use', id: 'toolu_1', name: 'get_weather', input, caller: DIRECT },
      ],
      stop_reason: 'tool_use',
      stop_sequence: null,
      usage: {
        input_tokens: counted.json().input_tokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        output_tokens: countTokens(preface) + tokensOf({ name: 'get_weather', input }),
        service_tier: 'standard',
        ...USAGE_REST,
      },
      ...MESSAGE_REST,
    });
    // The same request gets the same call.
    expect((await ask('What should I wear in Paris?')).json().content[1].input).toEqual(input);
  });

  it('calls every tool the prompt names, in parallel, unless parallel use is disabled', async () => {
    const both = (await ask('Use get_time and get_weather')).json();
    expect(both.content.map((b: { type: string; name?: string }) => b.name ?? b.type)).toEqual([
      'text',
      'get_weather',
      'get_time',
    ]);
    expect(both.content[0].text).toBe('I will use the get_weather and get_time tools for this.');
    expect(validInput(TIME, both.content[2].input)).toBe(true);
    const one = (
      await ask('Use get_time and get_weather', {
        tool_choice: { type: 'auto', disable_parallel_tool_use: true },
      })
    ).json();
    expect(one.content.filter((b: { type: string }) => b.type === 'tool_use')).toHaveLength(1);
  });

  it('forces a tool with "any" or "tool" (no text before it), and answers text with "none"', async () => {
    const any = (await ask('Hello', { tool_choice: { type: 'any' } })).json();
    expect(any.content.map((b: { type: string }) => b.type)).toEqual(['tool_use']);
    expect(any.stop_reason).toBe('tool_use');
    const named = (await ask('Hello', { tool_choice: { type: 'tool', name: 'get_time' } })).json();
    expect(named.content).toEqual([
      {
        type: 'tool_use',
        id: expect.stringMatching(/^toolu_/),
        name: 'get_time',
        input: expect.any(Object),
        caller: DIRECT,
      },
    ]);
    const none = (await ask('Hello', { tool_choice: { type: 'none' } })).json();
    expect(none.content).toEqual([
      { type: 'text', text: generateReply('Hello', 0).text, citations: null },
    ]);
    expect(none.stop_reason).toBe('end_turn');
  });

  it('answers a tool result with text that uses it, so the agent loop ends', async () => {
    const first = (await ask('Weather in Oslo?')).json();
    const call = first.content[1];
    const res = await ask('', {
      messages: [
        { role: 'user', content: 'Weather in Oslo?' },
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [
            {
              type: 'tool_result',
              tool_use_id: call.id,
              content: [{ type: 'text', text: '{"temp": -3}' }],
            },
          ],
        },
      ],
    });
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.stop_reason).toBe('end_turn');
    expect(body.content).toHaveLength(1);
    expect(body.content[0].text).toMatch(/^The get_weather tool returned: \{"temp": -3\}\. /);

    const error = {
      type: 'tool_result',
      tool_use_id: call.id,
      content: 'city not found',
      is_error: true,
    };
    const after = (...turn: object[]) =>
      ask('', {
        messages: [
          { role: 'user', content: 'Weather in Oslo?' },
          { role: 'assistant', content: first.content },
          ...turn,
        ],
      });
    // The results and a text in one user message, or as two user messages (one turn): the
    // results are answered the same.
    for (const turn of [
      [{ role: 'user', content: [error, { type: 'text', text: 'Try again later.' }] }],
      [
        { role: 'user', content: [error] },
        { role: 'user', content: 'Try again later.' },
      ],
    ]) {
      const failed = (await after(...turn)).json();
      expect(failed).toMatchObject({ stop_reason: 'end_turn', content: [{ type: 'text' }] });
      expect(failed.content[0].text).toMatch(
        /^The get_weather tool failed with: city not found\. /,
      );
    }
  });

  it('drops calls that do not fit max_tokens and stops for max_tokens, all of them spent', async () => {
    const body = (await ask('Hello', { max_tokens: 12 })).json();
    expect(body.stop_reason).toBe('max_tokens');
    expect(body.content).toEqual([
      { type: 'text', text: 'I will use the get_weather tool for this.', citations: null },
    ]);
    expect(countTokens('I will use the get_weather tool for this.')).toBeLessThan(12);
    // the call was being written when the limit came, as upstream counts it
    expect(body.usage.output_tokens).toBe(12);
  });

  it.each([
    [{ type: 'bash_20250124', name: 'bash' }, { command: 'ls' }],
    [
      { type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' },
      { command: 'view', path: '.' },
    ],
    [
      { type: 'memory_20250818', name: 'memory' },
      { command: 'view', path: '/memories' },
    ],
    [
      {
        type: 'computer_20250124',
        name: 'computer',
        display_width_px: 1024,
        display_height_px: 768,
      },
      { action: 'screenshot' },
    ],
  ])(
    'calls the Anthropic-defined client tool %j (the client runs it) with input %j',
    async (tool, input) => {
      const forced = await ask('Go', {
        tools: [tool, { type: 'web_search_20250305', name: 'web_search' }],
        tool_choice: { type: 'any' },
      });
      expect(forced.json()).toMatchObject({
        stop_reason: 'tool_use',
        content: [{ type: 'tool_use', name: tool.name, input }],
      });
      const named = await ask(`Use ${tool.name} now`, { tools: [WEATHER, tool] });
      expect(named.json().content[1]).toMatchObject({ type: 'tool_use', name: tool.name, input });
    },
  );

  it('accepts server tools and tools with cache_control, strict and $schema; on auto with no tool named, calls the first of the tools it calls (web search when first)', async () => {
    const body = {
      model: 'm',
      max_tokens: 100,
      tools: [
        { type: 'tool_search_tool_bm25_20251119', name: 'tool_search_tool_bm25' },
        { type: 'tool_search_tool_regex', name: 'tool_search_tool_regex' },
        {
          type: 'custom',
          ...WEATHER,
          strict: true,
          input_schema: {
            $schema: 'https://json-schema.org/draft/2020-12/schema',
            ...WEATHER.input_schema,
            // strict: what structured outputs take (no minLength, a closed object)
            properties: { ...WEATHER.input_schema.properties, city: { type: 'string' } },
            additionalProperties: false,
          },
          cache_control: { type: 'ephemeral' },
        },
        { type: 'web_search_20250305', name: 'web_search', max_uses: 3 },
      ],
      messages: [{ role: 'user', content: 'search the web' }],
    };
    const res = await t.messages(body);
    expect(res.statusCode).toBe(200);
    // tool search is not called (no tool is deferred); the client's tool is the first called
    expect(res.json().content[1].name).toBe('get_weather');
    const searchFirst = await t.messages({ ...body, tools: [...body.tools].reverse() });
    expect(searchFirst.json().content[1]).toEqual({
      type: 'server_tool_use',
      id: 'srvtoolu_1',
      name: 'web_search',
      input: { query: 'search the web' },
      caller: DIRECT,
    });
  });

  it('takes the browser and computer toolsets (no name; configs by member), counted as their JSON, and never calls a member', async () => {
    const browser = {
      type: 'browser_toolset_20260801',
      configs: { navigate: { enabled: true }, javascript_exec: { enabled: false } },
    };
    const computer = { type: 'computer_toolset_20260801', configs: null };
    const count = async (tools: object[]) =>
      (
        await t.messages(
          { model: 'm', tools, messages: [{ role: 'user', content: 'Open the page' }] },
          { path: '/count_tokens' },
        )
      ).json().input_tokens as number;
    expect((await count([WEATHER, browser, computer])) - (await count([WEATHER]))).toBe(
      countTokens(JSON.stringify(browser)) + countTokens(JSON.stringify(computer)),
    );
    const res = await ask('Open the page', { tools: [browser, computer] });
    expect(res.statusCode).toBe(200);
    expect(res.json().content.map((b: { type: string }) => b.type)).toEqual(['text']);
    const refused = await ask('x', {
      tools: [{ type: 'computer_toolset_20260801', configs: { navigate: {} } }],
    });
    expect(refused.statusCode).toBe(400);
    expect(refused.json().error.message).toMatch(/^tools\.0\.configs\.navigate: /);
  });

  it('refuses an Anthropic-defined tool under another name, and a caller of no list', async () => {
    const refused = async (tool: object) => (await ask('x', { tools: [tool] })).json().error;
    expect(await refused({ type: 'bash_20250124', name: 'shell' })).toEqual({
      type: 'invalid_request_error',
      message: "tools.0.bash_20250124.name: Input should be 'bash'",
    });
    expect(await refused({ type: 'text_editor_20250124', name: 'edit' })).toEqual({
      type: 'invalid_request_error',
      message: "tools.0.text_editor_20250124.name: Input should be 'str_replace_editor'",
    });
    expect(
      await refused({
        type: 'web_search_20250305',
        name: 'web_search',
        allowed_callers: ['direct', 'code_execution_20240101'],
      }),
    ).toEqual({
      type: 'invalid_request_error',
      message:
        "tools.0.web_search_20250305.allowed_callers.1: Input should be 'direct', 'code_execution_20250825', 'code_execution_20260120' or 'code_execution_20260521'",
    });
    expect(await refused({ type: 'code_execution_20250825' })).toEqual({
      type: 'invalid_request_error',
      message: 'tools.0.code_execution_20250825.name: Field required',
    });
    // Each kind its own name, the text editor's by its version (the schema states them all).
    const names = [
      ['memory_20250818', 'memory'],
      ['computer_20250124', 'computer'],
      ['code_execution_20250825', 'code_execution'],
      ['text_editor_20250428', 'str_replace_editor'],
      ['text_editor_20250429', 'str_replace_based_edit_tool'],
      ['text_editor_20250728', 'str_replace_based_edit_tool'],
    ];
    for (const [type, name] of names) {
      expect(await refused({ type, name: 'other' })).toEqual({
        type: 'invalid_request_error',
        message: `tools.0.${type}.name: Input should be '${name}'`,
      });
    }
    expect(
      await refused({ type: 'bash_20250124', name: 'bash', allowed_callers: 'direct' }),
    ).toEqual({
      type: 'invalid_request_error',
      message: 'tools.0.bash_20250124.allowed_callers: Input should be a valid list',
    });
  });

  it('takes a history with the blocks of upstream tools, counted as their JSON', async () => {
    const results = {
      type: 'web_search_result',
      url: 'https://example.com',
      title: 'Example',
      encrypted_content: 'AAAA',
    };
    const used = [
      { type: 'text', text: 'Let me search.' },
      {
        type: 'server_tool_use',
        id: 'srvtoolu_01',
        name: 'web_search',
        input: { query: 'sky colour' },
        caller: { type: 'direct' },
      },
      { type: 'web_search_tool_result', tool_use_id: 'srvtoolu_01', content: [results] },
      { type: 'text', text: 'The sky is blue.' },
    ];
    const body = (messages: object[]) => ({
      model: 'm',
      tools: [{ type: 'web_search_20250305', name: 'web_search' }],
      messages,
    });
    const ask = { role: 'user', content: 'What colour is the sky?' };
    const next = { role: 'user', content: 'Thanks' };
    const res = await t.messages({
      ...body([ask, { role: 'assistant', content: used }, next]),
      max_tokens: 50,
    });
    expect(res.statusCode).toBe(200);
    const count = async (messages: object[]) =>
      (await t.messages(body(messages), { path: '/count_tokens' })).json().input_tokens as number;
    const without = await count([ask, { role: 'assistant', content: [used[0], used[3]] }, next]);
    expect((await count([ask, { role: 'assistant', content: used }, next])) - without).toBe(
      countTokens(`web_search\n${JSON.stringify({ query: 'sky colour' })}`) +
        countTokens(JSON.stringify([results])),
    );
    // They are the assistant's: a user turn may not hold them.
    const misplaced = await t.messages({
      ...body([{ role: 'user', content: [used[2]] }]),
      max_tokens: 50,
    });
    expect(misplaced.statusCode).toBe(400);
    expect(misplaced.json().error.message).toBe(
      'messages.0.content.0.type: "web_search_tool_result" blocks may only appear in assistant messages',
    );
  });

  it('counts tools in count_tokens', async () => {
    const count = async (body: object) =>
      (await t.messages(body, { path: '/count_tokens' })).json().input_tokens as number;
    const plain = await count({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const withTool = await count({
      model: 'm',
      tools: [WEATHER],
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(withTool - plain).toBe(countTokens(JSON.stringify(WEATHER)));
  });
});

describe('tool use refusals', () => {
  const toolUse = {
    type: 'tool_use',
    id: 'toolu_a',
    name: 'get_weather',
    input: { city: 'x', unit: 'celsius' },
  };
  const result = (id = 'toolu_a') => ({ type: 'tool_result', tool_use_id: id, content: 'ok' });
  const conversation = (...messages: object[]) => ({
    model: 'm',
    max_tokens: 100,
    tools: [WEATHER],
    messages,
  });
  it.each([
    [
      'a tool name outside the pattern',
      {
        model: 'm',
        max_tokens: 10,
        tools: [{ ...WEATHER, name: 'has space' }],
        messages: [{ role: 'user', content: 'x' }],
      },
      "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
    ],
    [
      'duplicate tool names',
      {
        model: 'm',
        max_tokens: 10,
        tools: [WEATHER, WEATHER],
        messages: [{ role: 'user', content: 'x' }],
      },
      'tools: Tool names must be unique.',
    ],
    [
      'an invalid input_schema',
      {
        model: 'm',
        max_tokens: 10,
        tools: [
          { ...WEATHER, input_schema: { type: 'object', properties: { a: { type: 'strnig' } } } },
        ],
        messages: [{ role: 'user', content: 'x' }],
      },
      'tools.0.custom.input_schema: JSON schema is invalid. It must match JSON Schema draft 2020-12 (https://json-schema.org/draft/2020-12).',
    ],
    [
      'tools over the request node budget, all counted before any is compiled (the first is no JSON Schema)',
      {
        model: 'm',
        max_tokens: 10,
        tools: [
          { ...WEATHER, name: 'bad', input_schema: { type: 'object', minimum: 'x' } },
          ...Array.from({ length: 3 }, (_, t) => ({
            name: `big${t}`,
            input_schema: {
              type: 'object',
              properties: Object.fromEntries(
                Array.from({ length: 990 }, (_, k) => [`p${k}`, { type: 'string' }]),
              ),
            },
          })),
        ],
        messages: [{ role: 'user', content: 'x' }],
      },
      "tools.3.custom.input_schema: the request's schemas have more than 5000 JSON nodes in all, more than the emulator checks in one request",
    ],
    [
      'an input_schema pattern too large to run (the emulator checks patterns with RE2)',
      {
        model: 'm',
        max_tokens: 10,
        tools: [
          {
            ...WEATHER,
            input_schema: {
              type: 'object',
              properties: { a: { type: 'string', pattern: '(?!x)[ab]{1000}[cd]{1000}' } },
            },
          },
        ],
        messages: [{ role: 'user', content: 'x' }],
      },
      'tools.0.custom.input_schema: a pattern: /(?!x)[ab]{1000}[cd]{1000}/ compiles to about 2003 instructions, more than the 2000 the emulator runs (large repetition counts cost that much on every character)',
    ],
    [
      'more than 1000 tools (the emulator bounds what one request makes it read)',
      {
        model: 'm',
        max_tokens: 10,
        tools: Array.from({ length: 1001 }, (_, i) => ({
          type: 'web_search_20250305',
          name: `w${i}`,
        })),
        messages: [{ role: 'user', content: 'x' }],
      },
      'tools: must have at most 1000 item(s)',
    ],
    [
      'a tool without input_schema',
      {
        model: 'm',
        max_tokens: 10,
        tools: [{ name: 'x' }],
        messages: [{ role: 'user', content: 'x' }],
      },
      'tools.0.input_schema: Field required',
    ],
    [
      'tool_choice naming an unknown tool',
      {
        ...conversation({ role: 'user', content: 'x' }),
        tool_choice: { type: 'tool', name: 'nope' },
      },
      "tool_choice.name: Tool 'nope' not found in tools",
    ],
    [
      'a forced tool_choice without tools',
      {
        model: 'm',
        max_tokens: 10,
        tool_choice: { type: 'any' },
        messages: [{ role: 'user', content: 'x' }],
      },
      'tool_choice.type: "any" requires tools to be provided',
    ],
    [
      'a tool_result answering no tool_use',
      conversation(
        { role: 'user', content: 'x' },
        { role: 'assistant', content: 'y' },
        { role: 'user', content: [result('toolu_zz')] },
      ),
      'messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_zz. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.',
    ],
    [
      'a tool_use left without its result',
      conversation(
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [toolUse] },
        { role: 'user', content: 'no result' },
      ),
      'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    ],
    [
      'text before the tool results',
      conversation(
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [toolUse] },
        { role: 'user', content: [{ type: 'text', text: 'first' }, result()] },
      ),
      'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    ],
    [
      'two tool_use blocks of one id in a turn',
      conversation(
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [toolUse, toolUse] },
        { role: 'user', content: [result()] },
      ),
      'messages.1.content.1: `tool_use` ids must be unique',
    ],
    [
      'a tool_use id used again in a later turn',
      conversation(
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [toolUse] },
        { role: 'user', content: [result()] },
        { role: 'assistant', content: [toolUse] },
        { role: 'user', content: [result()] },
      ),
      'messages.3.content.0: `tool_use` ids must be unique',
    ],
    [
      'a tool_use id outside upstream pattern',
      conversation(
        { role: 'user', content: 'x' },
        { role: 'assistant', content: [{ ...toolUse, id: 'bad id!' }] },
        { role: 'user', content: [result('bad id!')] },
      ),
      "messages.1.content.0.id: String should match pattern '^[a-zA-Z0-9_-]+$'",
    ],
    [
      'a tool_use at the end of the conversation',
      conversation({ role: 'user', content: 'x' }, { role: 'assistant', content: [toolUse] }),
      'messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. Each `tool_use` block must have a corresponding `tool_result` block in the next message.',
    ],
    [
      'tool_use in a user message',
      conversation({ role: 'user', content: [toolUse] }),
      'messages.0.content.0.type: "tool_use" blocks may only appear in assistant messages',
    ],
    [
      'tool_result in an assistant message',
      conversation({ role: 'user', content: 'x' }, { role: 'assistant', content: [result()] }),
      'messages.1.content.0.type: "tool_result" blocks may only appear in user messages',
    ],
    [
      'an unknown tool_choice type',
      { ...conversation({ role: 'user', content: 'x' }), tool_choice: { type: 'sometimes' } },
      'tool_choice.type: must be one of "auto", "any", "tool", "none"',
    ],
  ])('refuses %#: %s', async (_label, payload, message) => {
    const res = await t.messages(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message },
      request_id: 'req_1',
    });
  });

  it('accepts a conversation whose tool uses are all answered, results first', async () => {
    const res = await t.messages(
      conversation(
        { role: 'user', content: 'x' },
        {
          role: 'assistant',
          content: [{ type: 'text', text: 'Checking.' }, toolUse, { ...toolUse, id: 'toolu_b' }],
        },
        {
          role: 'user',
          content: [result('toolu_b'), result('toolu_a'), { type: 'text', text: 'thanks' }],
        },
      ),
    );
    expect(res.statusCode).toBe(200);
  });

  it('refuses message threads with the error code that makes clients resend the history', async () => {
    const res = await t.messages({
      ...conversation({ role: 'user', content: 'x' }),
      thread: { type: 'create' },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message: 'thread: message threads are not supported by this gateway',
        details: { error_code: 'thread_unsupported_request', unsupported: [] },
      },
      request_id: 'req_1',
    });
  });
});
