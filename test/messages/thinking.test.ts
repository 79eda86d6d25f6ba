import { Ajv } from 'ajv';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countTokens, splitTokens } from '../../src/platform/tokens.js';
import { signThinking } from '../../src/text/agent.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const THINKING = { type: 'enabled', budget_tokens: 2048 } as const;
const ask = (extra: object = {}) =>
  t.messages({
    model: 'm',
    max_tokens: 4096,
    thinking: THINKING,
    messages: [{ role: 'user', content: 'Why is the sky blue?' }],
    ...extra,
  });

describe('extended thinking', () => {
  it('answers with a signed thinking block first; output_tokens include the thinking', async () => {
    const body = (await ask()).json();
    const [thinking, text] = body.content;
    expect(thinking).toEqual({
      type: 'thinking',
      thinking: expect.stringMatching(
        /^The request asks: "Why is the sky blue\?"\. I can answer this directly\. /,
      ),
      signature: signThinking(thinking.thinking),
    });
    expect(text.type).toBe('text');
    expect(body.usage.output_tokens).toBe(countTokens(thinking.thinking) + countTokens(text.text));
    expect(body.stop_reason).toBe('end_turn');
  });

  it('thinks with adaptive thinking too, and shows an empty thought when display is "omitted"', async () => {
    expect((await ask({ thinking: { type: 'adaptive' } })).json().content[0].type).toBe('thinking');
    const omitted = (await ask({ thinking: { ...THINKING, display: 'omitted' } })).json();
    expect(omitted.content[0]).toEqual({
      type: 'thinking',
      thinking: '',
      signature: signThinking(''),
    });
  });

  it('keeps the thought within budget_tokens', async () => {
    const body = (
      await ask({ max_tokens: 1100, thinking: { type: 'enabled', budget_tokens: 1024 } })
    ).json();
    expect(countTokens(body.content[0].thinking)).toBeLessThanOrEqual(1024);
  });

  it('takes its thinking blocks back unchanged, and refuses an edited one', async () => {
    const first = (await ask()).json();
    const follow = (content: unknown) =>
      ask({
        messages: [
          { role: 'user', content: 'Why is the sky blue?' },
          { role: 'assistant', content },
          { role: 'user', content: 'And at sunset?' },
        ],
      });
    expect((await follow(first.content)).statusCode).toBe(200);
    const edited = [{ ...first.content[0], thinking: 'something else' }, first.content[1]];
    const res = await follow(edited);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual({
      type: 'invalid_request_error',
      message: 'messages.1.content.0: Invalid `signature` in `thinking` block',
    });
    expect(
      (await follow([{ type: 'redacted_thinking', data: 'opaque' }, first.content[1]])).statusCode,
    ).toBe(200);
  });

  it.each([
    [
      'a budget below 1024',
      { thinking: { type: 'enabled', budget_tokens: 1000 } },
      'thinking.enabled.budget_tokens: Input should be greater than or equal to 1024',
    ],
    [
      'max_tokens not above the budget',
      { max_tokens: 2048 },
      '`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size',
    ],
    [
      'a forced tool',
      {
        tools: [{ name: 'calc', input_schema: { type: 'object' } }],
        tool_choice: { type: 'any' },
      },
      'Thinking may not be enabled when tool_choice forces tool use.',
    ],
    [
      'a temperature other than 1',
      { temperature: 0.5 },
      '`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking',
    ],
    ['top_k', { top_k: 5 }, 'top_k: may not be set when thinking is enabled'],
    ['a low top_p', { top_p: 0.5 }, 'top_p: must be between 0.95 and 1 when thinking is enabled'],
    [
      'an unknown thinking type',
      { thinking: { type: 'deep' } },
      'thinking.type: must be one of "enabled", "disabled", "adaptive", "between_tools"',
    ],
  ])('refuses %s', async (_label, extra, message) => {
    const res = await ask(extra);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual({ type: 'invalid_request_error', message });
  });

  it('takes a forced tool with adaptive thinking (only manual thinking refuses it): thinking, then the call', async () => {
    const tools = [{ name: 'calc', input_schema: { type: 'object', properties: {} } }];
    for (const tool_choice of [{ type: 'any' }, { type: 'tool', name: 'calc' }]) {
      const res = await ask({ thinking: { type: 'adaptive' }, tools, tool_choice });
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body.content.map((block: { type: string }) => block.type)).toEqual([
        'thinking',
        'tool_use',
      ]);
      expect(body.content[1]).toMatchObject({ name: 'calc', input: {} });
      expect(body.stop_reason).toBe('tool_use');
    }
  });

  it('wants a tool loop to send the thinking of its last assistant turn back first', async () => {
    const tools = [{ name: 'calc', input_schema: { type: 'object', properties: {} } }];
    const question = { role: 'user', content: 'Use calc please' };
    const turn = (await ask({ tools, messages: [question] })).json().content;
    const call = turn.find((block: { type: string }) => block.type === 'tool_use');
    const loop = (content: unknown[], extra: object = {}) =>
      ask({
        tools,
        messages: [
          question,
          { role: 'assistant', content },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '4' }] },
        ],
        ...extra,
      });
    expect((await loop(turn)).statusCode).toBe(200);
    const bare = await loop([call]);
    expect(bare.statusCode).toBe(400);
    expect(bare.json().error).toEqual({
      type: 'invalid_request_error',
      message:
        'messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking',
    });
    // Without thinking, or with an earlier assistant turn that had no thinking, all is well.
    expect((await loop([call], { thinking: { type: 'disabled' } })).statusCode).toBe(200);
    const textOnly = await ask({
      messages: [
        question,
        { role: 'assistant', content: 'Sure.' },
        { role: 'user', content: 'Go' },
      ],
    });
    expect(textOnly.statusCode).toBe(200);
    // Consecutive assistant messages are one turn: its first message starts with the thinking.
    const [thought, ...rest] = turn;
    const split = (first: unknown[], second: unknown[]) =>
      ask({
        tools,
        messages: [
          question,
          { role: 'assistant', content: first },
          { role: 'assistant', content: second },
          { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '4' }] },
        ],
      });
    expect((await split([thought], rest)).statusCode).toBe(200);
    const late = await split([{ type: 'text', text: 'Let me see.' }], [thought, call]);
    expect(late.statusCode).toBe(400);
    expect(late.json().error.message).toMatch(
      /^messages\.1\.content\.0\.type: Expected `thinking` or `redacted_thinking`, but found `text`\./,
    );
  });

  it('thinks again after tool results only when thinking interleaves (the beta on a Claude 4 model, or adaptive thinking)', async () => {
    const tools = [{ name: 'calc', input_schema: { type: 'object', properties: {} } }];
    const question = { role: 'user', content: 'Use calc please' };
    const BETA = { 'msgapi-beta': 'interleaved-thinking-2025-05-14' };
    const answerTypes = async (model: string, thinking: object, headers = {}) => {
      const first = await t.messages(
        { model, max_tokens: 4096, thinking, tools, messages: [question] },
        { headers },
      );
      expect(first.statusCode, first.body).toBe(200);
      const turn = first.json().content;
      expect(turn[0].type).toBe('thinking'); // a turn starts with its thinking, always
      const call = turn.find((block: { type: string }) => block.type === 'tool_use');
      const next = await t.messages(
        {
          model,
          max_tokens: 4096,
          thinking,
          tools,
          messages: [
            question,
            { role: 'assistant', content: turn },
            {
              role: 'user',
              content: [{ type: 'tool_result', tool_use_id: call.id, content: '4' }],
            },
          ],
        },
        { headers },
      );
      expect(next.statusCode, next.body).toBe(200);
      return next.json().content.map((b: { type: string }) => b.type);
    };
    expect(await answerTypes('claude-sonnet-4-5', THINKING)).toEqual(['text']);
    expect(await answerTypes('claude-sonnet-4-5', THINKING, BETA)).toEqual(['thinking', 'text']);
    expect(await answerTypes('claude-haiku-4-5', THINKING, BETA)).toEqual(['text']);
    expect(await answerTypes('claude-sonnet-4-0', THINKING, BETA)).toEqual(['thinking', 'text']);
    expect(await answerTypes('claude-opus-4-20250514', THINKING, BETA)).toEqual([
      'thinking',
      'text',
    ]);
    // Opus 4.6 ignores the beta; its adaptive thinking interleaves of itself.
    expect(await answerTypes('claude-opus-4-6', THINKING, BETA)).toEqual(['text']);
    expect(await answerTypes('claude-opus-4-6', { type: 'adaptive' })).toEqual([
      'thinking',
      'text',
    ]);
  });

  it('with between_tools, does not think before its first answer, and thinks after tool results', async () => {
    const tools = [{ name: 'calc', input_schema: { type: 'object', properties: {} } }];
    const base = { model: 'claude-sonnet-5', max_tokens: 4096, tools };
    const thinking = { type: 'between_tools' };
    const question = { role: 'user', content: 'Use calc please' };
    const first = (await t.messages({ ...base, thinking, messages: [question] })).json();
    expect(first.content.map((b: { type: string }) => b.type)).toEqual(['text', 'tool_use']);
    expect(first.usage.output_tokens_details).toEqual({ thinking_tokens: 0 });
    const call = first.content[1];
    const next = await t.messages({
      ...base,
      thinking,
      messages: [
        question,
        { role: 'assistant', content: first.content },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: call.id, content: '4' }] },
      ],
    });
    expect(next.statusCode, next.body).toBe(200);
    const [thought, text] = next.json().content;
    expect([thought.type, text.type]).toEqual(['thinking', 'text']);
    expect(next.json().usage.output_tokens_details).toEqual({
      thinking_tokens: countTokens(thought.thinking),
    });
    // (a model without thinking refuses it as it refuses the others)
    const old = await t.messages({
      ...base,
      model: 'claude-3-5-haiku-latest',
      thinking,
      messages: [question],
    });
    expect(old.json().error.message).toBe("'claude-3-5-haiku-latest' does not support thinking.");
  });

  it('lets the budget exceed max_tokens with the interleaved-thinking beta and tools', async () => {
    const tools = [{ name: 'calc', input_schema: { type: 'object', properties: {} } }];
    const wide = { max_tokens: 2000, thinking: { type: 'enabled', budget_tokens: 4000 }, tools };
    for (const header of ['msgapi-beta', 'anthropic-beta']) {
      const res = await t.messages(
        { model: 'm', messages: [{ role: 'user', content: 'Use calc' }], ...wide },
        { headers: { [header]: 'files-api-2025-04-14, interleaved-thinking-2025-05-14' } },
      );
      expect(res.statusCode).toBe(200);
      expect(res.json().usage.output_tokens).toBeLessThanOrEqual(2000);
    }
    // Without the beta, or without tools, the budget must stay below max_tokens.
    expect((await ask(wide)).statusCode).toBe(400);
    const noTools = await t.messages(
      { model: 'm', messages: [{ role: 'user', content: 'x' }], ...wide, tools: undefined },
      { headers: { 'msgapi-beta': 'interleaved-thinking-2025-05-14' } },
    );
    expect(noTools.statusCode).toBe(400);
  });

  it('allows thinking with tool_choice auto, and turns off with type "disabled"', async () => {
    const tools = [{ name: 'calc', input_schema: { type: 'object', properties: {} } }];
    const res = (await ask({ tools })).json();
    expect(res.content.map((b: { type: string }) => b.type)).toEqual([
      'thinking',
      'text',
      'tool_use',
    ]);
    expect(res.content[0].thinking).toMatch(/I should call calc\./);
    expect((await ask({ thinking: { type: 'disabled' } })).json().content[0].type).toBe('text');
  });
});

describe('what a model takes of thinking, sampling and effort', () => {
  const refused = async (extra: object, message: string) => {
    const res = await ask(extra);
    expect(res.statusCode, JSON.stringify(extra)).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message },
      request_id: expect.any(String),
    });
  };
  const ADAPTIVE = { type: 'adaptive' };

  it.each([
    [
      { model: 'claude-3-5-sonnet-20241022' },
      "'claude-3-5-sonnet-20241022' does not support thinking.",
    ],
    [
      { model: 'claude-3-opus-20240229', thinking: ADAPTIVE },
      "'claude-3-opus-20240229' does not support thinking.",
    ],
    [
      { model: 'claude-sonnet-4-5', thinking: ADAPTIVE },
      'adaptive thinking is not supported on this model',
    ],
    [
      { model: 'claude-opus-4-5-20251101', thinking: ADAPTIVE },
      'adaptive thinking is not supported on this model',
    ],
    [
      { model: 'claude-3-7-sonnet-20250219', thinking: ADAPTIVE },
      'adaptive thinking is not supported on this model',
    ],
    [
      { model: 'claude-opus-4-7' },
      '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
    ],
    [
      { model: 'claude-sonnet-5' },
      '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
    ],
    [
      { model: 'claude-opus-4-7', thinking: undefined, temperature: 0.5 },
      '`temperature` is deprecated for this model.',
    ],
    [
      { model: 'claude-opus-4-8', thinking: ADAPTIVE, top_p: 0.99 },
      '`top_p` is deprecated for this model.',
    ],
    [
      { model: 'claude-opus-4-7', thinking: undefined, top_k: 5 },
      '`top_k` is deprecated for this model.',
    ],
    [
      { model: 'claude-haiku-4-5', thinking: undefined, output_config: { effort: 'low' } },
      'This model does not support the effort parameter',
    ],
    [
      { model: 'claude-sonnet-4-5', thinking: undefined, output_config: { effort: 'high' } },
      'This model does not support the effort parameter',
    ],
  ])("refuses %j in upstream's words", async (extra, message) => {
    await refused(extra, message);
  });

  it('takes what each model takes (and every setting on a name it does not know)', async () => {
    for (const extra of [
      { model: 'claude-3-7-sonnet-20250219' },
      { model: 'claude-sonnet-4-5' },
      { model: 'claude-sonnet-4-6', thinking: ADAPTIVE, output_config: { effort: 'low' } },
      { model: 'claude-sonnet-4-6' },
      { model: 'claude-opus-4-5', thinking: undefined, output_config: { effort: 'high' } },
      { model: 'claude-opus-4-7', thinking: ADAPTIVE, output_config: { effort: 'max' } },
      { model: 'claude-3-5-haiku-20241022', thinking: { type: 'disabled' }, temperature: 0.2 },
      { model: 'claude-like', thinking: ADAPTIVE, output_config: { effort: 'low' } },
      { model: 'claude-like', temperature: 1, top_p: 0.99 },
      // dated and aliased names are the models they name
      { model: 'claude-opus-4-20250514', thinking: undefined, temperature: 0.5, top_k: 5 },
      { model: 'claude-opus-4-1-20250805', thinking: undefined, temperature: 0.5 },
      // Opus 4.7 takes the default values
      { model: 'claude-opus-4-7', thinking: undefined, temperature: 1 },
      { model: 'claude-opus-4-7', thinking: undefined, top_p: 1 },
    ]) {
      const res = await ask(extra);
      expect(res.statusCode, `${JSON.stringify(extra)}: ${res.body}`).toBe(200);
    }
  });
});

describe('streamed thinking and tool use', () => {
  it('sends thinking_delta then signature_delta, then the text, then input_json_delta pieces, in order', async () => {
    const tools = [
      {
        name: 'lookup',
        input_schema: {
          type: 'object',
          properties: { q: { type: 'string', const: 'sky colour' } },
          required: ['q'],
        },
      },
    ];
    const json = (await ask({ tools })).json();
    const [thinking, text, use] = json.content;
    await t.app.close();
    t = await buildTestApp();
    const res = await ask({ tools, stream: true });
    const events = parseSse(res.body);
    const delta = (index: number, d: object) => ({
      event: 'content_block_delta',
      data: { type: 'content_block_delta', index, delta: d },
    });
    const start = (index: number, block: object) => ({
      event: 'content_block_start',
      data: { type: 'content_block_start', index, content_block: block },
    });
    const stop = (index: number) => ({
      event: 'content_block_stop',
      data: { type: 'content_block_stop', index },
    });
    expect(events.slice(1)).toEqual([
      start(0, { type: 'thinking', thinking: '', signature: '' }),
      { event: 'ping', data: { type: 'ping' } },
      ...splitTokens(thinking.thinking, 4).map((piece) =>
        delta(0, { type: 'thinking_delta', thinking: piece }),
      ),
      delta(0, { type: 'signature_delta', signature: thinking.signature }),
      stop(0),
      start(1, { type: 'text', text: '', citations: null }),
      ...splitTokens(text.text, 4).map((piece) => delta(1, { type: 'text_delta', text: piece })),
      stop(1),
      start(2, {
        type: 'tool_use',
        id: 'toolu_1',
        name: 'lookup',
        input: {},
        caller: { type: 'direct' },
      }),
      ...splitTokens(JSON.stringify(use.input), 4).map((piece) =>
        delta(2, { type: 'input_json_delta', partial_json: piece }),
      ),
      stop(2),
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: {
            stop_reason: 'tool_use',
            stop_sequence: null,
            stop_details: null,
            container: null,
          },
          usage: {
            input_tokens: json.usage.input_tokens,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: json.usage.output_tokens,
            output_tokens_details: json.usage.output_tokens_details,
            server_tool_use: null,
          },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
    expect(use.input).toEqual({ q: 'sky colour' });
  });
});

describe('structured output (output_config.format)', () => {
  const schema = {
    type: 'object',
    properties: {
      answer: { type: 'string' },
      confidence: { type: 'number' },
      sources: { type: 'array', items: { type: 'string', format: 'uri' }, minItems: 1 },
    },
    required: ['answer', 'confidence', 'sources'],
    additionalProperties: false,
  };
  const structured = (extra: object = {}) =>
    t.messages({
      model: 'm',
      max_tokens: 1024,
      output_config: { format: { type: 'json_schema', schema }, effort: 'high' },
      messages: [{ role: 'user', content: 'Why is the sky blue?' }],
      ...extra,
    });

  it('answers with text that is JSON valid against the schema, the same each time', async () => {
    const body = (await structured()).json();
    expect(body.content).toHaveLength(1);
    const value = JSON.parse(body.content[0].text);
    expect(new Ajv({ strict: false, validateFormats: false }).validate(schema, value)).toBe(true);
    expect((await structured()).json().content[0].text).toBe(body.content[0].text);
    const streamed = parseSse((await structured({ stream: true })).body)
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => (e.data as { delta: { text: string } }).delta.text)
      .join('');
    expect(streamed).toBe(body.content[0].text);
  });

  it('counts the schema in the prompt, as chat counts its response_format', async () => {
    const plain = { model: 'm', messages: [{ role: 'user', content: 'Why is the sky blue?' }] };
    const count = async (extra: object) =>
      (await t.messages({ ...plain, ...extra }, { path: '/count_tokens' })).json()
        .input_tokens as number;
    const format = { type: 'json_schema', schema };
    const withSchema = await count({ output_config: { format } });
    expect(withSchema - (await count({}))).toBe(countTokens(JSON.stringify(schema)));
    expect((await structured()).json().usage.input_tokens).toBe(withSchema);
  });

  it('takes the beta spelling output_format the same way (output_config.format wins)', async () => {
    const body = (await structured()).json();
    const beta = await structured({
      output_config: undefined,
      output_format: { type: 'json_schema', schema },
    });
    expect(beta.statusCode).toBe(200);
    expect(beta.json().content).toEqual(body.content);
    const both = await structured({
      output_format: { type: 'json_schema', schema: { type: 'object', properties: {} } },
    });
    expect(both.json().content).toEqual(body.content);
    // Only the format in force is read: a broken beta schema beside output_config is not.
    const shadowed = await structured({
      output_format: { type: 'json_schema', schema: { type: 'nope' } },
    });
    expect(shadowed.statusCode).toBe(200);
    expect(shadowed.json().content).toEqual(body.content);
    const bad = await structured({
      output_config: undefined,
      output_format: { type: 'json_schema', schema: { type: 'nope' } },
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.message).toMatch(/^output_format\.schema: is not a valid JSON schema/);
  });

  it('refuses a schema that is not JSON Schema', async () => {
    const res = await structured({
      output_config: { format: { type: 'json_schema', schema: { type: 'obj' } } },
    });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toMatch(
      /^output_config\.format\.schema: is not a valid JSON schema: /,
    );
  });

  it('takes a null effort and a null thinking display as absent', async () => {
    const res = await structured({
      output_config: { effort: null },
      thinking: { type: 'adaptive', display: null },
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().content[0].type).toBe('thinking');
  });

  it('refuses an unknown effort', async () => {
    const res = await structured({ output_config: { effort: 'extreme' } });
    expect(res.json().error.message).toBe(
      'output_config.effort: must be one of "low", "medium", "high", "xhigh", "max"',
    );
  });
});
