import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countTokens } from '../../src/platform/tokens.js';
import { withAnthropic } from '../helpers/anthropic.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';
import { type Block, stub, withoutIds } from '../helpers/server-tools.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const REGEX = { type: 'tool_search_tool_regex_20251119', name: 'tool_search_tool_regex' };
const BM25 = { type: 'tool_search_tool_bm25', name: 'tool_search_tool_bm25' };
const WEATHER = {
  name: 'get_weather',
  description: 'Current weather for a city',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string', enum: ['Paris'] } },
    required: ['city'],
  },
  defer_loading: true,
};
const TIME = {
  name: 'get_time',
  description: 'Current time in a city, and its weather zone',
  input_schema: { type: 'object', properties: {} },
  defer_loading: true,
};
const QUESTION = 'What is the weather in Paris? Use get_weather.';

const ask = (extra: object = {}, content: unknown = QUESTION) =>
  t.messages({
    model: 'm',
    max_tokens: 1024,
    tools: [REGEX, WEATHER, TIME],
    messages: [{ role: 'user', content }],
    ...extra,
  });

const references = (...names: string[]) => ({
  type: 'tool_search_tool_search_result',
  tool_references: names.map((name) => ({ type: 'tool_reference', tool_name: name })),
});

/** The JSON of a tool's definition as the prompt reads it (without cache_control). */
const definition = (tool: object) => {
  const { cache_control: _, ...rest } = tool as { cache_control?: unknown };
  return JSON.stringify(rest);
};

describe('tool search (tool_search_tool_regex / _bm25)', () => {
  it('searches for a deferred tool before calling it, in the same reply', async () => {
    const message = (await ask()).json();
    expect(message.content).toEqual([
      { type: 'text', text: 'I will use the get_weather tool for this.', citations: null },
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'tool_search_tool_regex',
        input: { pattern: '^(?:get_weather)$' },
        caller: { type: 'direct' },
      },
      {
        type: 'tool_search_tool_result',
        tool_use_id: 'srvtoolu_1',
        content: references('get_weather'),
      },
      {
        type: 'tool_use',
        id: 'toolu_1',
        name: 'get_weather',
        input: { city: 'Paris' },
        caller: { type: 'direct' },
      },
    ]);
    expect(message.stop_reason).toBe('tool_use');
    // Not metered as a server tool's use; the definition found is read as input.
    expect(message.usage.server_tool_use).toBeNull();
    const counted = (
      await t.messages(
        {
          model: 'm',
          tools: [REGEX, WEATHER, TIME],
          messages: [{ role: 'user', content: QUESTION }],
        },
        { path: '/count_tokens' },
      )
    ).json().input_tokens;
    expect(message.usage.input_tokens).toBe(counted + countTokens(definition(WEATHER)));
    expect(message.usage.output_tokens).toBe(
      countTokens('I will use the get_weather tool for this.') +
        countTokens('tool_search_tool_regex') +
        countTokens(JSON.stringify({ pattern: '^(?:get_weather)$' })) +
        countTokens('get_weather') +
        countTokens(JSON.stringify({ city: 'Paris' })),
    );
  });

  it('leaves deferred tools out of the prompt until found', async () => {
    const count = async (tools: object[]) =>
      (
        await t.messages(
          { model: 'm', tools, messages: [{ role: 'user', content: 'Hi' }] },
          { path: '/count_tokens' },
        )
      ).json().input_tokens;
    const loaded = [WEATHER, TIME].map(({ defer_loading: _, ...tool }) => tool);
    const deferred = await count([REGEX, WEATHER, TIME]);
    expect(await count([REGEX, ...loaded])).toBe(
      deferred +
        countTokens(definition(loaded[0] as object)) +
        countTokens(definition(loaded[1] as object)),
    );
  });

  it('with BM25, searches the words of the name; finds tools by name and description, best first', async () => {
    const content = (await ask({ tools: [BM25, TIME, WEATHER] })).json().content as Block[];
    expect(content[1]).toEqual({
      type: 'server_tool_use',
      id: 'srvtoolu_1',
      name: 'tool_search_tool_bm25',
      input: { query: 'get weather' },
      caller: { type: 'direct' },
    });
    // get_weather: "get" and "weather" in its name (3 each); get_time: "get" in its name (3) and
    // "weather" in its description (1).
    expect(content[2]?.content).toEqual(references('get_weather', 'get_time'));
  });

  it('calls a tool the model sees when nothing is named, and searches for none', async () => {
    const visible = { name: 'lookup', input_schema: { type: 'object', properties: {} } };
    const content = (await ask({ tools: [REGEX, WEATHER, visible] }, 'Hello')).json()
      .content as Block[];
    expect(content.map((b) => b.type)).toEqual(['text', 'tool_use']);
    expect(content[1]).toMatchObject({ name: 'lookup' });
  });

  it('does not search again for a tool the conversation found (by upstream or by a client tool)', async () => {
    const first = (await ask()).json();
    const history = [
      { role: 'user', content: QUESTION },
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: '18 °C' }],
      },
      { role: 'assistant', content: 'It is 18 °C.' },
      { role: 'user', content: 'And use get_weather again.' },
    ];
    const again = (
      await t.messages({
        model: 'm',
        max_tokens: 1024,
        tools: [REGEX, WEATHER, TIME],
        messages: history,
      })
    ).json();
    expect(again.content.map((b: Block) => b.type)).toEqual(['text', 'tool_use']);
    // A client's own search answers with tool_reference blocks in its tool_result.
    const own = { name: 'find_tools', input_schema: { type: 'object', properties: {} } };
    const client = (ref: string) =>
      t.messages({
        model: 'm',
        max_tokens: 1024,
        tools: [own, WEATHER, TIME],
        messages: [
          { role: 'user', content: 'Find a weather tool.' },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_9', name: 'find_tools', input: {} }],
          },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_9',
                content: [{ type: 'tool_reference', tool_name: ref }],
              },
              { type: 'text', text: 'Now use get_weather.' },
            ],
          },
        ],
        tool_choice: { type: 'tool', name: 'get_weather' },
      });
    const found = (await client('get_weather')).json();
    expect(found.content).toEqual([
      {
        type: 'tool_use',
        id: 'toolu_3',
        name: 'get_weather',
        input: { city: 'Paris' },
        caller: { type: 'direct' },
      },
    ]);
    const unknown = await client('get_news');
    expect(unknown.statusCode).toBe(400);
    expect(unknown.json().error.message).toBe(
      "messages.2.content.0.tool_result.content.0: Tool reference 'get_news' not found in available tools",
    );
  });

  it('finds exactly the tools it calls, in as few searches as fit, and never searches twice for one', async () => {
    const similar = ['a_get', 'b_get', 'c_get', 'd_get', 'e_get', 'get'].map((name) => ({
      name,
      description: 'get things',
      input_schema: { type: 'object', properties: {} },
      defer_loading: true,
    }));
    const exact = (await ask({ tools: [REGEX, ...similar] }, 'Use get now')).json();
    const found = exact.content.filter((b: Block) => b.type === 'tool_search_tool_result');
    expect(found.map((b: Block) => b.content)).toEqual([references('get')]);
    // All six named: one search finds them all (limit raised to their count).
    const all = (
      await ask({ tools: [REGEX, ...similar] }, 'Use a_get, b_get, c_get, d_get, e_get and get')
    ).json();
    expect(all.content.filter((b: Block) => b.type === 'server_tool_use')).toEqual([
      {
        type: 'server_tool_use',
        id: 'srvtoolu_2',
        name: 'tool_search_tool_regex',
        input: { pattern: '^(?:a_get|b_get|c_get|d_get|e_get|get)$', limit: 6 },
        caller: { type: 'direct' },
      },
    ]);
    expect(all.content.filter((b: Block) => b.type === 'tool_use')).toHaveLength(6);
    // A scripted search that found the tool: no second search before the call.
    await stub(t, {
      match: { contains: 'look first' },
      tool_calls: [
        { name: 'tool_search_tool_regex', input: { pattern: 'weather' } },
        { name: 'get_weather', input: { city: 'Paris' } },
      ],
    });
    const scripted = (await ask({}, 'Look first')).json();
    expect(scripted.content.map((b: Block) => b.type).slice(-3)).toEqual([
      'server_tool_use',
      'tool_search_tool_result',
      'tool_use',
    ]);
  });

  it('with BM25, a tool whose name has the words outranks descriptions that repeat them', async () => {
    const noisy = ['w1', 'w2', 'w3', 'w4', 'w5'].map((name) => ({
      name,
      description: 'weather '.repeat(7),
      input_schema: { type: 'object', properties: {} },
      defer_loading: true,
    }));
    const content = (await ask({ tools: [BM25, ...noisy, WEATHER] })).json().content as Block[];
    expect(content[2]?.content).toEqual(references('get_weather', 'w1', 'w2', 'w3', 'w4'));
    expect(content[3]).toMatchObject({ type: 'tool_use', name: 'get_weather' });
  });

  it('without a tool search tool, a deferred tool is not called until a client search finds it', async () => {
    const visible = { name: 'find_tools', input_schema: { type: 'object', properties: {} } };
    const content = (await ask({ tools: [visible, WEATHER] })).json().content as Block[];
    expect(content.map((b) => b.type)).toEqual(['text', 'tool_use']);
    expect(content[1]).toMatchObject({ name: 'find_tools' });
  });

  it('searches a catalog of 999 deferred tools with long descriptions, named all at once, in bounded work', async () => {
    // (999 and the search tool: the emulator takes at most 1000 tools)
    const catalog = Array.from({ length: 999 }, (_, i) => ({
      name: `tool_${i}`,
      description: `Tool number ${i}. `.repeat(100),
      input_schema: { type: 'object', properties: {} },
      defer_loading: true,
    }));
    const prompt = `Use ${catalog.map((tool) => tool.name).join(', ')}.`;
    const res = await t.messages({
      model: 'claude-sonnet-4-5',
      max_tokens: 64_000,
      tools: [REGEX, ...catalog],
      messages: [{ role: 'user', content: prompt }],
    });
    expect(res.statusCode).toBe(200);
    const content = res.json().content as Block[];
    // At most 20 searches; the tools they find (and only those) are called.
    const searches = content.filter((b) => b.type === 'server_tool_use');
    expect(searches.length).toBe(20);
    const foundNames = content
      .filter((b) => b.type === 'tool_search_tool_result')
      .flatMap(
        (b) => (b.content as { tool_references: Array<{ tool_name: string }> }).tool_references,
      )
      .map((ref) => ref.tool_name);
    const called = content.filter((b) => b.type === 'tool_use').map((b) => b.name);
    expect(called).toEqual(foundNames);
    expect(called.length).toBeGreaterThan(100);
    // Tools left unfound are not calls cut by the limit.
    expect(res.json().stop_reason).toBe('tool_use');
  });

  it('searches when forced or named, with the words of the user text, and answers what it found', async () => {
    const forced = (
      await ask(
        { tool_choice: { type: 'tool', name: 'tool_search_tool_regex' } },
        'Weather tools please',
      )
    ).json();
    expect(forced.content.slice(0, 2)).toEqual([
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'tool_search_tool_regex',
        input: { pattern: 'weather|tools|please' },
        caller: { type: 'direct' },
      },
      {
        type: 'tool_search_tool_result',
        tool_use_id: 'srvtoolu_1',
        content: references('get_weather', 'get_time'),
      },
    ]);
    expect(forced.content[2].text).toMatch(/^Based on the tools found: /);
    expect(forced.stop_reason).toBe('end_turn');
    // Both kinds offered: each runs as its own kind.
    const both = (
      await ask(
        { tools: [REGEX, BM25, WEATHER, TIME] },
        'Use tool_search_tool_bm25 for the time zone',
      )
    ).json();
    expect(both.content[1]).toMatchObject({
      name: 'tool_search_tool_bm25',
      input: { query: 'use for the time zone' },
    });
    // (get_weather's description has "for")
    expect(both.content[2].content).toEqual(references('get_time', 'get_weather'));
  });

  it('answers a scripted search as it finds, and a malformed one with the error', async () => {
    await stub(t, {
      match: { contains: 'scripted' },
      tool_calls: [
        { name: 'tool_search_tool_regex', input: { pattern: '(?i)CITY' } },
        { name: 'tool_search_tool_regex', input: { pattern: 'weather(' } },
        { name: 'tool_search_tool_regex', input: { pattern: 'a'.repeat(201) } },
        { name: 'tool_search_tool_regex', input: { pattern: 'get', limit: 1 } },
      ],
    });
    const content = (await ask({}, 'A scripted search')).json().content as Block[];
    const results = content.filter((b) => b.type === 'tool_search_tool_result');
    expect(results.map((r) => r.content)).toEqual([
      references('get_weather', 'get_time'),
      {
        type: 'tool_search_tool_result_error',
        error_code: 'invalid_tool_input',
        error_message: expect.stringMatching(/^Invalid regular expression pattern: /),
      },
      {
        type: 'tool_search_tool_result_error',
        error_code: 'invalid_tool_input',
        error_message: 'Pattern exceeds the maximum length of 200 characters',
      },
      references('get_weather'),
    ]);
  });

  it('refuses all tools deferred, a search tool of another name, and a search result naming no tool', async () => {
    const all = await ask({ tools: [{ ...REGEX, defer_loading: true }, WEATHER] });
    expect(all.statusCode).toBe(400);
    expect(all.json().error.message).toBe(
      'At least one tool must have defer_loading=false. All tools cannot be deferred.',
    );
    const named = await ask({ tools: [{ ...REGEX, name: 'search' }, WEATHER] });
    expect(named.json().error.message).toBe(
      "tools.0.tool_search_tool_regex_20251119.name: Input should be 'tool_search_tool_regex'",
    );
    const history = await t.messages({
      model: 'm',
      max_tokens: 1024,
      tools: [REGEX, WEATHER],
      messages: [
        { role: 'user', content: 'Find tools.' },
        {
          role: 'assistant',
          content: [
            {
              type: 'server_tool_use',
              id: 'srvtoolu_a',
              name: 'tool_search_tool_regex',
              input: { pattern: 'x' },
            },
            {
              type: 'tool_search_tool_result',
              tool_use_id: 'srvtoolu_a',
              content: references('nope'),
            },
          ],
        },
        { role: 'user', content: 'Go on.' },
      ],
    });
    expect(history.json().error.message).toBe(
      "messages.1.content.1.content.tool_references.0: Tool reference 'nope' not found in available tools",
    );
  });

  it('streams the search whole in its start, and the SDK assembles the same message', async () => {
    const json = (await ask()).json();
    const events = parseSse((await ask({ stream: true })).body).map((e) => e.data as Block);
    const starts = events.filter((e) => e.type === 'content_block_start');
    expect(starts[2]).toEqual({
      type: 'content_block_start',
      index: 2,
      content_block: { ...json.content[2], tool_use_id: 'srvtoolu_2' },
    });
    await withAnthropic(async (client) => {
      const request = {
        model: 'claude-like',
        max_tokens: 1024,
        tools: [REGEX, WEATHER, TIME] as never,
        messages: [{ role: 'user' as const, content: QUESTION }],
      };
      const created = await client.messages.create(request);
      const { parsed_output: _, ...streamed } = await client.messages
        .stream(request)
        .finalMessage();
      expect(withoutIds(streamed)).toEqual(withoutIds(created));
      expect(created.content.map((b) => b.type)).toEqual([
        'text',
        'server_tool_use',
        'tool_search_tool_result',
        'tool_use',
      ]);
    });
  });
});
