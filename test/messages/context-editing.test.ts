import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CLEARED_RESULT } from '../../src/messages/prompt/index.js';
import { countTokens } from '../../src/platform/tokens.js';
import { signThinking } from '../../src/text/agent.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const BETA = { 'anthropic-beta': 'context-management-2025-06-27' };
const TOOLS = [
  { name: 'search', input_schema: { type: 'object' } },
  { name: 'read', input_schema: { type: 'object' } },
];
const BIG = 'word '.repeat(3000);

/** An agent loop: three tool uses (search, search, read), each answered. */
const LOOP = [
  { role: 'user', content: 'go' },
  {
    role: 'assistant',
    content: [{ type: 'tool_use', id: 't1', name: 'search', input: { q: 'a' } }],
  },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: BIG }] },
  {
    role: 'assistant',
    content: [{ type: 'tool_use', id: 't2', name: 'search', input: { q: 'b' } }],
  },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't2', content: BIG }] },
  { role: 'assistant', content: [{ type: 'tool_use', id: 't3', name: 'read', input: { q: 'c' } }] },
  { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't3', content: 'small' }] },
];

/** The same loop with cleared results (and inputs) written out: what the edit leaves. */
const cleared = (ids: string[], inputs: string[] = []) =>
  LOOP.map((message) =>
    typeof message.content === 'string'
      ? message
      : {
          ...message,
          content: message.content.map((block) =>
            'tool_use_id' in block && ids.includes(block.tool_use_id)
              ? { ...block, content: CLEARED_RESULT }
              : 'id' in block && inputs.includes(block.id)
                ? { ...block, input: {} }
                : block,
          ),
        },
  );

const count = async (messages: unknown, extra: object = {}) =>
  (
    await t.messages(
      { model: 'claude-sonnet-4-5', tools: TOOLS, messages, ...extra },
      { path: '/count_tokens', headers: BETA },
    )
  ).json();

const ask = (extra: object, headers: Record<string, string> = BETA) =>
  t.messages(
    { model: 'claude-sonnet-4-5', max_tokens: 50, tools: TOOLS, messages: LOOP, ...extra },
    { headers },
  );

const edit = (fields: object = {}) => ({
  context_management: { edits: [{ type: 'clear_tool_uses_20250919', ...fields }] },
});

describe('context editing: clear_tool_uses_20250919', () => {
  it('past its trigger, clears the results of all but the `keep` latest tool uses; usage and count_tokens count the cleared prompt', async () => {
    const original = (await count(LOOP)).input_tokens;
    const after = (await count(cleared(['t1', 't2']))).input_tokens;
    const config = edit({
      trigger: { type: 'input_tokens', value: 1000 },
      keep: { type: 'tool_uses', value: 1 },
    });
    const res = await ask(config);
    expect(res.statusCode).toBe(200);
    const body = res.json();
    expect(body.usage.input_tokens).toBe(after);
    expect(body.context_management).toEqual({
      applied_edits: [
        {
          type: 'clear_tool_uses_20250919',
          cleared_tool_uses: 2,
          cleared_input_tokens: original - after,
        },
      ],
    });
    // the latest result is kept, so the reply still reads it
    expect(body.content[0].text).toMatch(/^The read tool returned: small\./);
    expect(await count(LOOP, config)).toEqual({
      input_tokens: after,
      context_management: { original_input_tokens: original },
    });
  });

  it('by default triggers past 100 000 input tokens and keeps 3 tool uses', async () => {
    const small = (await ask(edit())).json();
    expect(small.context_management).toEqual({ applied_edits: [] });
    expect(small.usage.input_tokens).toBe((await count(LOOP)).input_tokens);
    const huge = 'word '.repeat(100_000);
    const long = [
      ...LOOP.slice(0, 2),
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', content: huge }] },
      ...LOOP.slice(3),
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 't4', name: 'read', input: { q: 'd' } }],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't4', content: 'tiny' }] },
    ];
    const body = (await ask({ messages: long, ...edit() })).json();
    expect(body.context_management.applied_edits).toEqual([
      {
        type: 'clear_tool_uses_20250919',
        cleared_tool_uses: 1,
        cleared_input_tokens: countTokens(huge) - countTokens(CLEARED_RESULT),
      },
    ]);
  });

  it('triggers on a count of tool uses, passes over exclude_tools, clears inputs when clear_tool_inputs says so (true, or the tool names)', async () => {
    const byUses = {
      trigger: { type: 'tool_uses', value: 2 },
      keep: { type: 'tool_uses', value: 0 },
    };
    const excluded = (
      await ask(edit({ ...byUses, exclude_tools: ['search'], clear_tool_inputs: true }))
    ).json();
    const original = (await count(LOOP)).input_tokens;
    expect(excluded.usage.input_tokens).toBe((await count(cleared(['t3'], ['t3']))).input_tokens);
    expect(excluded.context_management.applied_edits).toEqual([
      {
        type: 'clear_tool_uses_20250919',
        cleared_tool_uses: 1,
        cleared_input_tokens: Math.max(0, original - excluded.usage.input_tokens),
      },
    ]);
    // the last result was cleared: the reply reads the placeholder
    expect(excluded.content[0].text).toMatch(/^The read tool returned: \[cleared\]\./);
    const listed = (await ask(edit({ ...byUses, clear_tool_inputs: ['read'] }))).json();
    expect(listed.usage.input_tokens).toBe(
      (await count(cleared(['t1', 't2', 't3'], ['t3']))).input_tokens,
    );
    // not past the trigger: nothing is cleared
    const under = (await ask(edit({ trigger: { type: 'tool_uses', value: 3 } }))).json();
    expect(under.context_management).toEqual({ applied_edits: [] });
  });

  it('leaves a result no longer than the placeholder as it is, and clears every result sent for one id', async () => {
    const everything = {
      trigger: { type: 'tool_uses', value: 1 },
      keep: { type: 'tool_uses', value: 0 },
    };
    const original = (await count(LOOP)).input_tokens;
    const body = (await ask(edit(everything))).json();
    // t3's result, "small", is shorter than the placeholder: kept
    expect(body.usage.input_tokens).toBe((await count(cleared(['t1', 't2']))).input_tokens);
    expect(body.context_management.applied_edits).toEqual([
      {
        type: 'clear_tool_uses_20250919',
        cleared_tool_uses: 2,
        cleared_input_tokens: original - body.usage.input_tokens,
      },
    ]);
    const twice = [
      { role: 'user', content: 'go' },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'a', name: 'search', input: {} }] },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: 'a', content: BIG },
          { type: 'tool_result', tool_use_id: 'a', content: BIG },
        ],
      },
    ];
    const edited = await count(
      twice,
      edit({
        trigger: { type: 'input_tokens', value: 1000 },
        keep: { type: 'tool_uses', value: 0 },
      }),
    );
    const both = twice.map((m, i) =>
      i === 2
        ? {
            ...m,
            content: [
              { type: 'tool_result', tool_use_id: 'a', content: CLEARED_RESULT },
              { type: 'tool_result', tool_use_id: 'a', content: CLEARED_RESULT },
            ],
          }
        : m,
    );
    expect(edited.input_tokens).toBe((await count(both)).input_tokens);
  });

  it('clears nothing unless at least clear_at_least tokens would be', async () => {
    const base = {
      trigger: { type: 'tool_uses', value: 1 },
      keep: { type: 'tool_uses', value: 2 },
    };
    const freed = (await count(LOOP)).input_tokens - (await count(cleared(['t1']))).input_tokens;
    const exact = (
      await ask(edit({ ...base, clear_at_least: { type: 'input_tokens', value: freed } }))
    ).json();
    expect(exact.context_management.applied_edits).toEqual([
      { type: 'clear_tool_uses_20250919', cleared_tool_uses: 1, cleared_input_tokens: freed },
    ]);
    const more = (
      await ask(edit({ ...base, clear_at_least: { type: 'input_tokens', value: freed + 1 } }))
    ).json();
    expect(more.context_management).toEqual({ applied_edits: [] });
    expect(more.usage.input_tokens).toBe((await count(LOOP)).input_tokens);
  });

  it('streams the edits applied in message_delta, with null in message_start', async () => {
    const res = await ask({
      stream: true,
      ...edit({ trigger: { type: 'tool_uses', value: 1 }, keep: { type: 'tool_uses', value: 2 } }),
    });
    const frames = parseSse(res.body) as Array<{ event: string; data: Record<string, unknown> }>;
    const start = frames.find((f) => f.event === 'message_start')?.data.message as {
      context_management: unknown;
    };
    expect(start.context_management).toBeNull();
    const delta = frames.find((f) => f.event === 'message_delta')?.data;
    const freed = (await count(LOOP)).input_tokens - (await count(cleared(['t1']))).input_tokens;
    expect(delta?.context_management).toEqual({
      applied_edits: [
        { type: 'clear_tool_uses_20250919', cleared_tool_uses: 1, cleared_input_tokens: freed },
      ],
    });
  });
});

describe('context editing: the beta and its rules', () => {
  it('without the beta header the field is refused, and answers carry no context_management', async () => {
    const res = await ask(edit(), {});
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual({
      type: 'invalid_request_error',
      message: 'context_management: Extra inputs are not permitted',
    });
    const plain = (await ask({}, {})).json();
    expect(Object.keys(plain)).not.toContain('context_management');
    // the beta named in the gateway's own header works too
    const gateway = await ask(edit(), { 'msgapi-beta': 'context-management-2025-06-27' });
    expect(gateway.json().context_management).toEqual({ applied_edits: [] });
  });

  it.each([
    [
      { edits: [{ type: 'clear_thinking_20251015' }] },
      {},
      '`clear_thinking_20251015` strategy requires `thinking` to be enabled or adaptive',
    ],
    [
      { edits: [{ type: 'clear_tool_uses_20250919' }, { type: 'clear_thinking_20251015' }] },
      { model: 'claude-sonnet-4-6', thinking: { type: 'adaptive' } },
      'context_management: `clear_thinking_20251015` must be the first strategy in `context_management.edits` when provided',
    ],
    [
      { edits: [{ type: 'clear_tool_uses_20250919' }, { type: 'clear_tool_uses_20250919' }] },
      {},
      'context_management.edits.1: duplicate context management strategy `clear_tool_uses_20250919`',
    ],
    [
      { edits: [{ type: 'compact_20260112' }] },
      {},
      "context_management.edits.0: Input tag 'compact_20260112' found using 'type' does not match any of the expected tags: 'clear_thinking_20251015', 'clear_tool_uses_20250919'",
    ],
    [
      {
        edits: [{ type: 'clear_tool_uses_20250919', trigger: { type: 'input_tokens', value: 0 } }],
      },
      {},
      'context_management.edits.0.trigger.value: must be greater than or equal to 1',
    ],
    [
      { edits: [{ type: 'clear_tool_uses_20250919', keep: { type: 'tool_uses', value: -1 } }] },
      {},
      'context_management.edits.0.keep.value: must be greater than or equal to 0',
    ],
  ])('refuses %j', async (config, extra, message) => {
    const res = await ask({ context_management: config, ...extra });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual({ type: 'invalid_request_error', message });
  });
});

describe('context editing: clear_thinking_20251015', () => {
  const THINKING = { type: 'enabled', budget_tokens: 2048 } as const;
  const thought = (text: string) => ({
    type: 'thinking',
    thinking: text,
    signature: signThinking(text),
  });
  /** Three assistant turns, each with its thinking. */
  const turns = [
    { role: 'user', content: 'one' },
    { role: 'assistant', content: [thought('first thought here'), { type: 'text', text: 'a' }] },
    { role: 'user', content: 'two' },
    { role: 'assistant', content: [thought('second thought'), { type: 'text', text: 'b' }] },
    { role: 'user', content: 'three' },
    { role: 'assistant', content: [thought('third'), { type: 'text', text: 'c' }] },
    { role: 'user', content: 'four' },
  ];
  const withThinking = (model: string, keep?: unknown) =>
    t.messages(
      {
        model,
        max_tokens: 4096,
        thinking: THINKING,
        messages: turns,
        ...(keep === undefined
          ? {}
          : {
              context_management: {
                edits: [{ type: 'clear_thinking_20251015', ...(keep === null ? {} : { keep }) }],
              },
            }),
      },
      { headers: BETA },
    );
  const tokens = (...texts: string[]) => texts.reduce((sum, text) => sum + countTokens(text), 0);

  it('keeps the thinking of the `keep` latest turns (1 by default, or "all"), and reports the turns cleared', async () => {
    const all = (await withThinking('claude-sonnet-4-5', 'all')).json();
    expect(all.context_management).toEqual({ applied_edits: [] });
    const one = (await withThinking('claude-sonnet-4-5', null)).json();
    expect(one.context_management).toEqual({
      applied_edits: [
        {
          type: 'clear_thinking_20251015',
          cleared_thinking_turns: 2,
          cleared_input_tokens: tokens('first thought here', 'second thought'),
        },
      ],
    });
    expect(all.usage.input_tokens - one.usage.input_tokens).toBe(
      tokens('first thought here', 'second thought'),
    );
    const two = (
      await withThinking('claude-sonnet-4-5', { type: 'thinking_turns', value: 2 })
    ).json();
    expect(two.context_management.applied_edits).toEqual([
      {
        type: 'clear_thinking_20251015',
        cleared_thinking_turns: 1,
        cleared_input_tokens: tokens('first thought here'),
      },
    ]);
    expect(
      (await withThinking('claude-sonnet-4-5', { type: 'all' })).json().usage.input_tokens,
    ).toBe(all.usage.input_tokens);
  });

  it('counts a turn that held only thinking in original_input_tokens, its framing kept', async () => {
    const onlyThinking = [
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: [thought('a thought alone')] },
      { role: 'user', content: 'again' },
      { role: 'assistant', content: [thought('the last thought'), { type: 'text', text: 'b' }] },
      { role: 'user', content: 'more' },
    ];
    const countWith = async (keep: unknown) =>
      (
        await t.messages(
          {
            model: 'claude-sonnet-4-5',
            thinking: THINKING,
            messages: onlyThinking,
            context_management: { edits: [{ type: 'clear_thinking_20251015', keep }] },
          },
          { path: '/count_tokens', headers: BETA },
        )
      ).json();
    const all = await countWith('all');
    const one = await countWith({ type: 'thinking_turns', value: 1 });
    expect(one.context_management.original_input_tokens).toBe(all.input_tokens);
    expect(all.input_tokens - one.input_tokens).toBe(tokens('a thought alone'));
  });

  it("without the edit keeps the model's default: every turn's thinking on Opus 4.5+ and Sonnet 4.6+, the last turn's on the others", async () => {
    const all = (await withThinking('claude-sonnet-4-5', 'all')).json().usage.input_tokens;
    const one = (await withThinking('claude-sonnet-4-5', null)).json().usage.input_tokens;
    expect((await withThinking('claude-sonnet-4-5')).json().usage.input_tokens).toBe(one);
    expect((await withThinking('claude-haiku-4-5')).json().usage.input_tokens).toBe(one);
    expect((await withThinking('claude-opus-4-5')).json().usage.input_tokens).toBe(all);
    expect((await withThinking('claude-sonnet-4-6')).json().usage.input_tokens).toBe(all);
    // no edit: nothing is reported as applied
    expect((await withThinking('claude-sonnet-4-5')).json().context_management).toEqual({
      applied_edits: [],
    });
  });
});
