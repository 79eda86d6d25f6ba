import { Ajv } from 'ajv';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countTokens, splitTokens } from '../../src/platform/tokens.js';
import { generateReply } from '../../src/text/default-reply.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';
import { chunkOf, FIRST_FRAME, PROMPT_FILTERS, toolCallFrames } from '../helpers/chat.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    description: 'Current weather for a city',
    parameters: {
      type: 'object',
      properties: {
        city: { type: 'string' },
        unit: { type: ['string', 'null'], enum: ['c', 'f', null] },
      },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
    strict: true,
  },
};
const TIME = {
  type: 'function',
  function: {
    name: 'get_time',
    parameters: { type: 'object', properties: { tz: { type: 'string' } } },
  },
};
const ajv = new Ajv({ strict: false });

const ask = (content: string, extra: object = {}) =>
  t.chat({
    model: 'gpt-test',
    tools: [WEATHER, TIME],
    messages: [{ role: 'user', content }],
    ...extra,
  });

describe('function calling', () => {
  it('calls a tool on auto: content null, tool_calls, finish_reason "tool_calls", empty filter results', async () => {
    const res = await ask('Weather in Paris?');
    expect(res.statusCode).toBe(200);
    const body = res.json();
    const call = body.choices[0].message.tool_calls[0];
    const args = JSON.parse(call.function.arguments);
    expect(ajv.validate(WEATHER.function.parameters, args)).toBe(true);
    expect(body).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: expect.any(Number),
      model: 'gpt-test',
      system_fingerprint: expect.stringMatching(/^fp_/),
      choices: [
        {
          index: 0,
          finish_reason: 'tool_calls',
          logprobs: null,
          message: {
            role: 'assistant',
            content: null,
            tool_calls: [
              {
                id: 'call_1',
                type: 'function',
                function: { name: 'get_weather', arguments: call.function.arguments },
              },
            ],
            refusal: null,
            annotations: [],
          },
          content_filter_results: {},
        },
      ],
      prompt_filter_results: PROMPT_FILTERS,
      usage: {
        prompt_tokens: expect.any(Number),
        completion_tokens: countTokens('get_weather') + countTokens(call.function.arguments),
        total_tokens: expect.any(Number),
        completion_tokens_details: {
          accepted_prediction_tokens: 0,
          audio_tokens: 0,
          reasoning_tokens: 0,
          rejected_prediction_tokens: 0,
        },
        prompt_tokens_details: { audio_tokens: 0, cached_tokens: 0 },
      },
    });
    // Key order on the wire, as upstream: tool_calls before refusal and annotations.
    expect(res.body).toContain('"message":{"role":"assistant","content":null,"tool_calls":[');
    expect(
      (await ask('Weather in Paris?')).json().choices[0].message.tool_calls[0].function.arguments,
    ).toBe(call.function.arguments);
  });

  it('says "stop" for a named tool_choice, "tool_calls" for "required", text for "none"', async () => {
    const named = (
      await ask('hi', { tool_choice: { type: 'function', function: { name: 'get_time' } } })
    ).json().choices[0];
    expect(named.finish_reason).toBe('stop');
    expect(named.message.tool_calls[0].function.name).toBe('get_time');
    const required = (await ask('hi', { tool_choice: 'required' })).json().choices[0];
    expect(required.finish_reason).toBe('tool_calls');
    const none = (await ask('hi', { tool_choice: 'none' })).json().choices[0];
    expect(none).toMatchObject({
      finish_reason: 'stop',
      message: { content: generateReply('hi', 0).text },
    });
    expect(none.message.tool_calls).toBeUndefined();
  });

  it('drops the calls after a stop sequence: finish_reason "stop", none of them counted', async () => {
    await t.inject({
      method: 'POST',
      url: '/_emulator/replies',
      payload: {
        match: { group: 'chat', contains: 'go' },
        reply: 'Hello there STOP and more words here',
        tool_calls: [{ name: 'get_time', input: {} }],
      },
    });
    for (const max_tokens of [12, 200]) {
      const choice = (await ask('go', { stop: ['STOP'], max_tokens })).json();
      expect(choice.choices[0]).toMatchObject({
        finish_reason: 'stop',
        message: { content: 'Hello there ' },
      });
      expect(choice.usage.completion_tokens).toBe(countTokens('Hello there '));
    }
  });

  it('drops a call that does not fit max_tokens: finish_reason "length", the limit spent', async () => {
    for (const stream of [false, true]) {
      const res = await ask('hi', {
        tool_choice: 'required',
        max_tokens: 3,
        stream,
        ...(stream ? { stream_options: { include_usage: true } } : {}),
      });
      const usage = stream
        ? (parseSse(res.body).at(-2)?.data as { usage: { completion_tokens: number } } | undefined)
            ?.usage
        : res.json().usage;
      expect(usage.completion_tokens).toBe(3);
      if (!stream) {
        expect(res.json().choices[0]).toMatchObject({
          finish_reason: 'length',
          message: { content: '' },
        });
        expect(res.json().choices[0].message.tool_calls).toBeUndefined();
      }
    }
  });

  it('calls the tools the prompt names in parallel, one when parallel_tool_calls is false', async () => {
    const both = (await ask('get_time then get_weather')).json().choices[0].message.tool_calls;
    expect(both.map((c: { function: { name: string } }) => c.function.name)).toEqual([
      'get_weather',
      'get_time',
    ]);
    expect(both.map((c: { id: string }) => c.id)).toEqual(['call_1', 'call_2']);
    const one = (await ask('get_time then get_weather', { parallel_tool_calls: false })).json();
    expect(one.choices[0].message.tool_calls).toHaveLength(1);
  });

  it('restricts the tools to allowed_tools', async () => {
    const body = (
      await ask('get_time then get_weather', {
        tool_choice: {
          type: 'allowed_tools',
          allowed_tools: {
            mode: 'required',
            tools: [{ type: 'function', function: { name: 'get_time' } }],
          },
        },
      })
    ).json();
    expect(
      body.choices[0].message.tool_calls.map(
        (c: { function: { name: string } }) => c.function.name,
      ),
    ).toEqual(['get_time']);
    // The same tools again, without the restriction: both are offered again (the tools read
    // once and remembered are not narrowed by one request's allowed_tools).
    const again = (await ask('get_time then get_weather')).json();
    expect(
      again.choices[0].message.tool_calls.map(
        (c: { function: { name: string } }) => c.function.name,
      ),
    ).toEqual(['get_weather', 'get_time']);
  });

  it('answers tool messages with text that uses them, so a runTools loop ends', async () => {
    const first = (await ask('Weather in Paris?')).json().choices[0].message;
    const res = await ask('', {
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: first.tool_calls },
        { role: 'tool', tool_call_id: first.tool_calls[0].id, content: '{"temp":22}' },
      ],
    });
    const choice = res.json().choices[0];
    expect(choice.finish_reason).toBe('stop');
    expect(choice.message.content).toMatch(/^The get_weather tool returned: \{"temp":22\}\. /);
    expect(choice.content_filter_results).toMatchObject({
      hate: { filtered: false, severity: 'safe' },
    });
  });

  it('quotes a long tool result cut before a surrogate pair, never through one', async () => {
    const first = (await ask('Weather in Paris?')).json().choices[0].message;
    const content = `${'a'.repeat(199)}\u{1F600}${'b'.repeat(50)}`;
    const res = await ask('', {
      messages: [
        { role: 'user', content: 'Weather in Paris?' },
        { role: 'assistant', content: null, tool_calls: first.tool_calls },
        { role: 'tool', tool_call_id: first.tool_calls[0].id, content },
      ],
    });
    const text: string = res.json().choices[0].message.content;
    expect(text.startsWith(`The get_weather tool returned: ${'a'.repeat(199)}.... `)).toBe(true);
    expect(text).not.toMatch(/[\ud800-\udbff](?![\udc00-\udfff])/);
    expect(res.body).not.toMatch(/\\ud83d/i);
  });

  it('gives arguments that are a JSON object: other parameter types refused as upstream does', async () => {
    const call = (parameters: object) =>
      t.chat({
        model: 'gpt-test',
        tool_choice: 'required',
        tools: [{ type: 'function', function: { name: 'f', parameters } }],
        messages: [{ role: 'user', content: 'go' }],
      });
    const text = await call({ type: 'string' });
    expect([text.statusCode, text.json()]).toEqual([
      400,
      {
        error: {
          message:
            "Invalid schema for function 'f': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"string\"'.",
          type: 'invalid_request_error',
          param: 'tools[0].function.parameters',
          code: 'invalid_function_parameters',
        },
      },
    ]);
    const argsOf = async (parameters: object) => {
      const res = await call(parameters);
      expect(res.statusCode, res.body).toBe(200);
      return JSON.parse(res.json().choices[0].message.tool_calls[0].function.arguments);
    };
    expect(await argsOf({})).toEqual({});
    const either = {
      anyOf: [
        { properties: { a: { type: 'string' } }, required: ['a'] },
        { properties: { b: { type: 'integer' } }, required: ['b'] },
      ],
    };
    const args = await argsOf(either);
    expect(typeof args === 'object' && args !== null && !Array.isArray(args)).toBe(true);
    expect(ajv.validate(either, args)).toBe(true);
  });

  it('answers legacy functions with function_call', async () => {
    const body = (
      await t.chat({
        model: 'm',
        functions: [WEATHER.function],
        messages: [{ role: 'user', content: 'weather' }],
      })
    ).json();
    expect(body.choices[0].finish_reason).toBe('function_call');
    expect(body.choices[0].message).toEqual({
      role: 'assistant',
      content: null,
      function_call: { name: 'get_weather', arguments: expect.any(String) },
      refusal: null,
      annotations: [],
    });
    const after = await t.chat({
      model: 'm',
      functions: [WEATHER.function],
      messages: [
        { role: 'user', content: 'weather' },
        { role: 'assistant', content: null, function_call: body.choices[0].message.function_call },
        { role: 'function', name: 'get_weather', content: 'sunny' },
      ],
    });
    expect(after.json().choices[0].message.content).toMatch(
      /^The get_weather tool returned: sunny\./,
    );
  });

  it('streams a legacy function_call: name first, then the arguments in pieces', async () => {
    const body = {
      model: 'm',
      functions: [WEATHER.function],
      messages: [{ role: 'user', content: 'weather' }],
    };
    const json = (await t.chat(body)).json();
    const call = json.choices[0].message.function_call;
    const frames = parseSse((await t.chat({ ...body, stream: true })).body).map(
      (f) =>
        (f.data as { choices?: Array<{ delta: object; finish_reason: string | null }> })
          .choices?.[0],
    );
    expect(frames.slice(1, -1)).toEqual([
      {
        index: 0,
        delta: { role: 'assistant', content: null, refusal: null },
        logprobs: null,
        finish_reason: null,
        content_filter_results: {},
      },
      {
        index: 0,
        delta: { function_call: { name: 'get_weather', arguments: '' } },
        logprobs: null,
        finish_reason: null,
        content_filter_results: {},
      },
      ...splitTokens(call.arguments, 4).map((piece) => ({
        index: 0,
        delta: { function_call: { arguments: piece } },
        logprobs: null,
        finish_reason: null,
        content_filter_results: {},
      })),
      {
        index: 0,
        delta: {},
        logprobs: null,
        finish_reason: 'function_call',
        content_filter_results: {},
      },
    ]);
  });

  it('makes calls for every choice of n, each with its own id', async () => {
    const body = (await ask('Weather in Paris?', { n: 2 })).json();
    expect(body.choices).toHaveLength(2);
    const [a, b] = body.choices.map(
      (c: { message: { tool_calls: Array<{ id: string; function: object }> } }) =>
        c.message.tool_calls[0],
    );
    expect(a.id).not.toBe(b.id);
    expect(JSON.parse(a.function.arguments)).toEqual(expect.any(Object));
  });

  it('streams each call: id, type and name first, then the arguments in pieces', async () => {
    const json = (await ask('get_time then get_weather')).json();
    await t.app.close();
    t = await buildTestApp();
    const res = await ask('get_time then get_weather', {
      stream: true,
      stream_options: { include_usage: true },
    });
    const frames = parseSse(res.body).map((f) => f.data);
    const head = {
      id: 'chatcmpl-1',
      object: 'chat.completion.chunk',
      created: expect.any(Number),
      model: 'gpt-test',
      system_fingerprint: expect.stringMatching(/^fp_/),
    };
    const chunk = chunkOf(head, { usage: null });
    const calls = json.choices[0].message.tool_calls as Array<{
      id: string;
      function: { name: string; arguments: string };
    }>;
    expect(frames).toEqual([
      FIRST_FRAME,
      chunk({ role: 'assistant', content: null, refusal: null }),
      ...toolCallFrames(
        calls.map((call) => ({ id: call.id, ...call.function })),
        chunk,
        splitTokens,
      ),
      chunk({}, 'tool_calls'),
      { ...head, choices: [], usage: json.usage },
      '[DONE]',
    ]);
  });
});

describe('function calling refusals', () => {
  const base = { model: 'm', messages: [{ role: 'user', content: 'x' }] };
  const error = (message: string, param: string | null, code: string | null = null) => ({
    error: { message, type: 'invalid_request_error', param, code },
  });
  it.each([
    [
      'tool_choice without tools',
      { ...base, tool_choice: 'auto' },
      error(
        "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.",
        'tool_choice',
      ),
    ],
    [
      'parallel_tool_calls without tools',
      { ...base, parallel_tool_calls: false },
      error(
        "Invalid value for 'parallel_tool_calls': 'parallel_tool_calls' is only allowed when 'tools' are specified.",
        'parallel_tool_calls',
      ),
    ],
    [
      'a named function that is not a tool',
      { ...base, tools: [TIME], tool_choice: { type: 'function', function: { name: 'nope' } } },
      error(
        "Invalid value for 'tool_choice': no function named 'nope' was specified in the 'tools' parameter.",
        'tool_choice',
      ),
    ],
    [
      'more than 128 tools',
      {
        ...base,
        tools: Array.from({ length: 129 }, (_, i) => ({
          type: 'function',
          function: { name: `f${i}` },
        })),
      },
      error(
        "Invalid 'tools': array too long. Expected an array with maximum length 128, but got an array with length 129 instead.",
        'tools',
        'array_above_max_length',
      ),
    ],
    [
      'a function name over 64 characters',
      { ...base, tools: [{ type: 'function', function: { name: 'a'.repeat(65) } }] },
      error(
        "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, but got a string with length 65 instead.",
        'tools[0].function.name',
        'string_above_max_length',
      ),
    ],
    [
      'a strict tool without additionalProperties: false',
      {
        ...base,
        tools: [
          {
            type: 'function',
            function: {
              name: 'f',
              strict: true,
              parameters: {
                type: 'object',
                properties: { a: { type: 'string' } },
                required: ['a'],
              },
            },
          },
        ],
      },
      error(
        "Invalid schema for function 'f': In context=(), 'additionalProperties' is required to be supplied and to be false.",
        'tools[0].function.parameters',
        'invalid_function_parameters',
      ),
    ],
    [
      'tool schemas over the request budget, counted before they are compiled',
      {
        ...base,
        tools: Array.from({ length: 3 }, (_, i) => ({
          type: 'function',
          function: {
            name: `f${i}`,
            // 3 + 2 × 900 = 1803 JSON nodes each: the third passes 5000
            parameters: {
              type: 'object',
              properties: Object.fromEntries(
                Array.from({ length: 900 }, (_, k) => [`t${i}p${k}`, { type: 'string' }]),
              ),
            },
          },
        })),
      },
      error(
        "Invalid schema for function 'f2': the request's schemas have more than 5000 JSON nodes in all, more than the emulator checks in one request",
        'tools[2].function.parameters',
        'invalid_function_parameters',
      ),
    ],
    [
      'a tool schema over the emulator limit for one schema',
      {
        ...base,
        tools: [
          {
            type: 'function',
            function: {
              name: 'big',
              parameters: {
                type: 'object',
                properties: {
                  e: { type: 'string', enum: Array.from({ length: 3000 }, (_, k) => `v${k}`) },
                },
              },
            },
          },
        ],
      },
      error(
        "Invalid schema for function 'big': it has more than 2000 JSON nodes (a pattern counting one more per 200 instructions it compiles to, 100 more with lookaround or a backreference), more than the emulator checks in one schema",
        'tools[0].function.parameters',
        'invalid_function_parameters',
      ),
    ],
    [
      'tools over the request node budget, all counted before any is compiled (the first is no JSON Schema)',
      {
        ...base,
        tools: [
          {
            type: 'function',
            function: { name: 'bad', parameters: { type: 'object', minimum: 'x' } },
          },
          ...Array.from({ length: 3 }, (_, t) => ({
            type: 'function',
            function: {
              name: `big${t}`,
              parameters: {
                type: 'object',
                properties: Object.fromEntries(
                  Array.from({ length: 990 }, (_, k) => [`p${k}`, { type: 'string' }]),
                ),
              },
            },
          })),
        ],
      },
      error(
        "Invalid schema for function 'big2': the request's schemas have more than 5000 JSON nodes in all, more than the emulator checks in one request",
        'tools[3].function.parameters',
        'invalid_function_parameters',
      ),
    ],
    [
      'a strict response_format over the node limit, counted before strict mode reads it',
      {
        ...base,
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'big',
            strict: true,
            schema: {
              type: 'object',
              additionalProperties: false,
              properties: Object.fromEntries(
                Array.from({ length: 3000 }, (_, k) => [`p${k}`, { type: 'string' }]),
              ),
              required: Array.from({ length: 3000 }, (_, k) => `p${k}`),
            },
          },
        },
      },
      error(
        "Invalid schema for response_format 'big': it has more than 2000 JSON nodes (a pattern counting one more per 200 instructions it compiles to, 100 more with lookaround or a backreference), more than the emulator checks in one schema",
        'response_format',
        null,
      ),
    ],
    [
      'a strict tool with a property missing from required',
      {
        ...base,
        tools: [
          {
            type: 'function',
            function: {
              name: 'question',
              strict: true,
              parameters: {
                type: 'object',
                properties: {
                  questions: {
                    type: 'array',
                    items: {
                      type: 'object',
                      properties: { text: { type: 'string' }, multiple: { type: 'boolean' } },
                      required: ['text'],
                      additionalProperties: false,
                    },
                  },
                },
                required: ['questions'],
                additionalProperties: false,
              },
            },
          },
        ],
      },
      error(
        "Invalid schema for function 'question': In context=('properties', 'questions', 'items'), 'required' is required to be supplied and to be an array including every key in properties. Missing 'multiple'.",
        'tools[0].function.parameters',
        'invalid_function_parameters',
      ),
    ],
    [
      'a tool message that answers no call',
      {
        ...base,
        messages: [
          { role: 'user', content: 'x' },
          { role: 'tool', tool_call_id: 'call_x', content: 'r' },
        ],
      },
      error(
        "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.",
        'messages.[1].role',
      ),
    ],
    [
      'calls left unanswered',
      {
        ...base,
        messages: [
          { role: 'user', content: 'x' },
          {
            role: 'assistant',
            content: null,
            tool_calls: [
              { id: 'call_a', type: 'function', function: { name: 'f', arguments: '{}' } },
              { id: 'call_b', type: 'function', function: { name: 'f', arguments: '{}' } },
            ],
          },
          { role: 'tool', tool_call_id: 'call_a', content: 'r' },
          { role: 'user', content: 'next' },
        ],
      },
      error(
        "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: call_b",
        'messages.[3].role',
      ),
    ],
  ])('refuses %s', async (_label, payload, expected) => {
    const res = await t.chat(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(expected);
  });
});

describe('what one request may ask to be generated', () => {
  const thirty = {
    type: 'object',
    properties: Object.fromEntries(
      Array.from({ length: 30 }, (_, k) => [`p${k}`, { type: 'string' }]),
    ),
    required: ['p0'],
  }; // at most 1 + 30 × 65 JSON nodes or characters a value
  const ask = (n: number) =>
    t.chat({
      model: 'gpt-4o',
      n,
      tool_choice: 'required',
      tools: [{ type: 'function', function: { name: 'f', parameters: thirty } }],
      messages: [{ role: 'user', content: 'call f' }],
    });

  it('makes values for every choice within 200 000 nodes or characters, and refuses past it', async () => {
    const fits = await ask(100); // 100 × 1951
    expect(fits.statusCode).toBe(200);
    expect(fits.json().choices).toHaveLength(100);
    const over = await ask(128); // 128 × 1951 = 249 728
    expect(over.statusCode).toBe(400);
    expect(over.json().error).toMatchObject({
      message: expect.stringContaining(
        'the values this request asks for (each choice, each call) could need more than 200000 JSON nodes or characters in all',
      ),
      param: 'tools[0].function.parameters',
    });
  });
});
