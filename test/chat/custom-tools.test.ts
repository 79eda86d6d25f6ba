import OpenAI from 'openai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startEmulator } from '../../src/emulator.js';
import { countTokens, splitTokens } from '../../src/platform/tokens.js';
import { parseLark, sampleLark } from '../../src/text/lark.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';
import { chunkOf, FIRST_FRAME } from '../helpers/chat.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

/** The LangChain docs' arithmetic grammar: a sum of products of integers. */
const MATH = `
start: expr
expr: term (SP ADD SP term)* -> add
    | term
term: factor (SP MUL SP factor)* -> mul
    | factor
factor: INT
SP: " "
ADD: "+"
MUL: "*"
%import common.INT
`;
const CODE = {
  type: 'custom',
  custom: { name: 'run_python', description: 'Runs Python code', format: { type: 'text' } },
};
const DATE = {
  type: 'custom',
  custom: {
    name: 'set_date',
    format: {
      type: 'grammar',
      grammar: { syntax: 'regex', definition: '\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d)' },
    },
  },
};
const MATHS = {
  type: 'custom',
  custom: {
    name: 'do_math',
    format: { type: 'grammar', grammar: { syntax: 'lark', definition: MATH } },
  },
};
const WEATHER = {
  type: 'function',
  function: {
    name: 'get_weather',
    parameters: { type: 'object', properties: { city: { type: 'string' } } },
  },
};

const ask = (tool: object, extra: object = {}) =>
  t.chat({
    model: 'gpt-test',
    tools: [tool, WEATHER],
    tool_choice: 'required',
    parallel_tool_calls: false,
    messages: [{ role: 'user', content: 'Do it.' }],
    ...extra,
  });

const callOf = async (tool: object, extra: object = {}) => {
  const res = await ask(tool, extra);
  expect(res.statusCode).toBe(200);
  const call = res.json().choices[0].message.tool_calls[0];
  expect(Object.keys(call)).toEqual(['id', 'type', 'custom']);
  expect(call.type).toBe('custom');
  return call.custom as { name: string; input: string };
};

describe('custom tools (chat)', () => {
  it('calls a custom tool with free text: {id, type: "custom", custom: {name, input}}, finish "tool_calls"', async () => {
    const res = await ask(CODE);
    const body = res.json();
    const call = body.choices[0].message.tool_calls[0];
    expect(body.choices[0]).toEqual({
      index: 0,
      finish_reason: 'tool_calls',
      logprobs: null,
      message: {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_1',
            type: 'custom',
            custom: { name: 'run_python', input: call.custom.input },
          },
        ],
        refusal: null,
        annotations: [],
      },
      content_filter_results: {},
    });
    expect(call.custom.input.length).toBeGreaterThan(0);
    expect(body.usage.completion_tokens).toBe(
      countTokens('run_python') + countTokens(call.custom.input),
    );
    // the same request, the same input
    expect((await callOf(CODE)).input).toBe(call.custom.input);
  });

  it('a regex format: the input matches the whole pattern', async () => {
    const { input } = await callOf(DATE);
    expect(input).toMatch(/^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d)$/);
  });

  it('a Lark format: the input is a text of the grammar (its shortest derivation)', async () => {
    const { input } = await callOf(MATHS);
    expect(input).toBe('42');
    const sql = `
      start: "SELECT " column (", " column)* " FROM " TABLE
      column: NAME | "*"
      TABLE: NAME "s"
      NAME: /[a-z]{3,8}/
    `;
    const { input: query } = await callOf({
      type: 'custom',
      custom: {
        name: 'query',
        format: { type: 'grammar', grammar: { syntax: 'lark', definition: sql } },
      },
    });
    expect(query).toMatch(/^SELECT \* FROM [a-z]{3,8}s$/);
  });

  it('tool_choice {type: "custom"} names one; allowed_tools takes custom tools', async () => {
    const named = (
      await ask(CODE, { tool_choice: { type: 'custom', custom: { name: 'run_python' } } })
    ).json().choices[0];
    expect(named.finish_reason).toBe('stop');
    expect(named.message.tool_calls[0].custom.name).toBe('run_python');
    const allowed = (
      await ask(CODE, {
        tool_choice: {
          type: 'allowed_tools',
          allowed_tools: {
            mode: 'required',
            tools: [{ type: 'custom', custom: { name: 'run_python' } }],
          },
        },
      })
    ).json().choices[0];
    expect(allowed.message.tool_calls.map((c: { type: string }) => c.type)).toEqual(['custom']);
  });

  it('streams a custom call as a function call streams: its opening, then its input in pieces', async () => {
    const json = (await ask(CODE)).json();
    const input = json.choices[0].message.tool_calls[0].custom.input as string;
    const res = await ask(CODE, { stream: true });
    expect(res.statusCode).toBe(200);
    const frames = parseSse(res.body).map((f) => f.data);
    const chunk = chunkOf({
      id: 'chatcmpl-2',
      object: 'chat.completion.chunk',
      created: expect.any(Number),
      model: 'gpt-test',
      system_fingerprint: expect.stringMatching(/^fp_/),
    });
    expect(frames).toEqual([
      FIRST_FRAME,
      chunk({ role: 'assistant', content: null, refusal: null }),
      chunk({
        tool_calls: [
          { index: 0, id: 'call_2', type: 'custom', custom: { name: 'run_python', input: '' } },
        ],
      }),
      ...splitTokens(input, 4).map((piece) =>
        chunk({ tool_calls: [{ index: 0, custom: { input: piece } }] }),
      ),
      chunk({}, 'tool_calls'),
      '[DONE]',
    ]);
  });

  it('takes custom calls and their results back in the history, and answers the results', async () => {
    const res = await t.chat({
      model: 'gpt-test',
      tools: [CODE],
      messages: [
        { role: 'user', content: 'Run it.' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_9', type: 'custom', custom: { name: 'run_python', input: 'print(6*7)' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_9', content: '42' },
      ],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().choices[0].message.content).toMatch(/^The run_python tool returned: 42\./);
  });

  it('a scripted rule gives a custom tool its input as a string', async () => {
    const added = await t.inject({
      method: 'POST',
      url: '/_emulator/replies',
      payload: {
        match: { group: 'chat', contains: 'patch' },
        tool_calls: [{ name: 'run_python', input: 'x = 1' }],
      },
    });
    expect(added.statusCode).toBe(200);
    const res = await t.chat({
      model: 'gpt-test',
      tools: [CODE],
      messages: [{ role: 'user', content: 'patch it' }],
    });
    expect(res.json().choices[0].message.tool_calls[0]).toEqual({
      id: 'call_1',
      type: 'custom',
      custom: { name: 'run_python', input: 'x = 1' },
    });
  });

  it.each([
    [
      'a Lark grammar with no start rule',
      {
        type: 'custom',
        custom: {
          name: 'x',
          format: { type: 'grammar', grammar: { syntax: 'lark', definition: 'expr: "a"' } },
        },
      },
      `Invalid grammar for custom tool 'x': no "start" rule`,
      'tools[0].custom.format.grammar.definition',
    ],
    [
      'a Lark rule that is not defined',
      {
        type: 'custom',
        custom: {
          name: 'x',
          format: { type: 'grammar', grammar: { syntax: 'lark', definition: 'start: item+' } },
        },
      },
      `Invalid grammar for custom tool 'x': "start" uses "item", which is not defined`,
      'tools[0].custom.format.grammar.definition',
    ],
    [
      'a regex grammar that is not a regex',
      {
        type: 'custom',
        custom: {
          name: 'x',
          format: { type: 'grammar', grammar: { syntax: 'regex', definition: '(a' } },
        },
      },
      "Invalid grammar for custom tool 'x': a pattern: Invalid regular expression: /(a/u: Unterminated group",
      'tools[0].custom.format.grammar.definition',
    ],
    [
      'a bad custom tool name',
      { type: 'custom', custom: { name: 'no spaces' } },
      "Invalid 'tools[0].custom.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
      'tools[0].custom.name',
    ],
  ])('refuses %s', async (_name, tool, message, param) => {
    const res = await t.chat({
      model: 'gpt-test',
      tools: [tool],
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({ message, param });
  });

  it('refuses a custom tool_choice naming a function, and a function choice naming a custom tool', async () => {
    const custom = await ask(CODE, {
      tool_choice: { type: 'custom', custom: { name: 'get_weather' } },
    });
    expect(custom.json().error.message).toBe(
      "Invalid value for 'tool_choice': no custom tool named 'get_weather' was specified in the 'tools' parameter.",
    );
    const fn = await ask(CODE, {
      tool_choice: { type: 'function', function: { name: 'run_python' } },
    });
    expect(fn.json().error.message).toBe(
      "Invalid value for 'tool_choice': no function named 'run_python' was specified in the 'tools' parameter.",
    );
  });
});

describe('Lark sampling', () => {
  it('joins the tokens of a grammar that ignores whitespace with a space; a terminal is one token', async () => {
    const grammar = parseLark(`
      start: "let" NAME "=" NUMBER
      NUMBER: DIGIT+ "." DIGIT+
      NAME: "x"
      %import common.DIGIT
      %import common.WS
      %ignore WS
    `);
    expect(await sampleLark(grammar, async () => 'r')).toBe('let x = 7.7');
  });

  it('refuses what it cannot read or derive', () => {
    expect(() => parseLark('%declare X\nstart: "a"')).toThrow('%declare is not supported');
    expect(() => parseLark('start: "a"\nstart: "b"')).toThrow('"start" is defined twice');
    expect(() => parseLark('start: "a" ]')).toThrow('unexpected text in the definition of "start"');
    expect(() => parseLark('start: "x" start')).toThrow('"start" derives no finite text');
  });

  it('is bounded: nesting, the shortest text, the steps and the regex terminals it takes', async () => {
    expect(() => parseLark(`start: ${'('.repeat(1000)}"a"${')'.repeat(1000)}`)).toThrow(
      'groups nest deeper than 64',
    );
    expect(() => parseLark('start: "a" ~ 1000000000')).toThrow(
      'its shortest text has more than 20000 tokens',
    );
    expect(() => parseLark(`start: "a"\n${'r: "b"\n'.repeat(2000)}`)).toThrow('is defined twice');
    const many = Array.from({ length: 1001 }, (_, i) => `r${i}: "b"`).join('\n');
    expect(() => parseLark(`start: "a"\n${many}`)).toThrow('more than 1000 rules');
    // optional items cost no token but a step each: refused when read, not when sampled
    expect(() => parseLark('start: x ~ 1000000000\nx: ["a"]')).toThrow(
      'its shortest text takes more than 20000 steps to make',
    );
    await expect(
      sampleLark(parseLark(`start: X ~ 3\nX: "${'a'.repeat(9000)}"`), async () => ''),
    ).rejects.toThrow('its shortest text is longer than 20000 characters');
    // a rule that ties with its own recursion still ends (the lower derivation is taken)
    expect(await sampleLark(parseLark('start: a\na: b | "x"\nb: a'), async () => '')).toBe('x');
    await expect(sampleLark(parseLark('start: /a/ ~ 201'), async () => 'a')).rejects.toThrow(
      'its shortest text has more than 200 regex terminals',
    );
  });

  it('refuses through the API what it cannot sample, naming the tool (a 400, never a hang)', async () => {
    const tool = {
      type: 'custom',
      custom: {
        name: 'loop',
        format: {
          type: 'grammar',
          grammar: { syntax: 'lark', definition: 'start: x ~ 1000000000\nx: ["a"]' },
        },
      },
    };
    const res = await t.chat({
      model: 'gpt-test',
      tools: [tool],
      tool_choice: 'required',
      messages: [{ role: 'user', content: 'x' }],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toMatchObject({
      message:
        "Invalid grammar for custom tool 'loop': its shortest text takes more than 20000 steps to make",
      param: 'tools[0].custom.format.grammar.definition',
    });
  });
});

describe('custom tools through the official SDK', () => {
  it('chat.completions.create and a streamed call, as openai-node types them', async () => {
    const emulator = await startEmulator({ logLevel: 'silent' });
    try {
      const client = new OpenAI({
        apiKey: 'sk-local',
        baseURL: `${emulator.url}/v1`,
        maxRetries: 0,
      });
      const tools: OpenAI.Chat.Completions.ChatCompletionTool[] = [
        {
          type: 'custom',
          custom: {
            name: 'do_math',
            format: { type: 'grammar', grammar: { syntax: 'lark', definition: MATH } },
          },
        },
      ];
      const made = await client.chat.completions.create({
        model: 'gpt-5',
        tools,
        tool_choice: { type: 'custom', custom: { name: 'do_math' } },
        messages: [{ role: 'user', content: 'What is 6 times 7?' }],
      });
      const call = made.choices[0]?.message.tool_calls?.[0];
      expect(call?.type === 'custom' ? call.custom : undefined).toEqual({
        name: 'do_math',
        input: '42',
      });
      const stream = await client.chat.completions.create({
        model: 'gpt-5',
        tools,
        tool_choice: { type: 'custom', custom: { name: 'do_math' } },
        messages: [{ role: 'user', content: 'What is 6 times 7?' }],
        stream: true,
      });
      const deltas: unknown[] = [];
      for await (const chunk of stream) deltas.push(...(chunk.choices[0]?.delta.tool_calls ?? []));
      expect(deltas[0]).toMatchObject({
        index: 0,
        type: 'custom',
        custom: { name: 'do_math', input: '' },
      });
      expect(deltas.slice(1)).toEqual([{ index: 0, custom: { input: '42' } }]);
    } finally {
      await emulator.close();
    }
  });
});
