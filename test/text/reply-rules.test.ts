import { cpSync, mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_FIXTURES_DIR } from '../../src/config.js';
import { countTokens } from '../../src/platform/tokens.js';
import { generateReply } from '../../src/text/default-reply.js';
import { FixtureError, loadFixtures } from '../../src/text/fixtures.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';

/** A FIXTURES_DIR with the given reply files (and no content filter). */
function fixturesDir(files: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'fixtures-'));
  mkdirSync(join(dir, 'replies'));
  for (const [name, data] of Object.entries(files)) {
    writeFileSync(
      join(dir, 'replies', name),
      typeof data === 'string' ? data : JSON.stringify(data),
    );
  }
  return dir;
}

let t: TestApp;
afterEach(() => t?.app.close());

const chat = (content: string, model = 'chat-model', extra: object = {}) =>
  t.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { authorization: 'Bearer k' },
    payload: { model, messages: [{ role: 'user', content }], ...extra },
  });
const message = (content: string, model = 'claude-demo', extra: object = {}) =>
  t.inject({
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers: { 'x-api-key': 'k', 'msgapi-version': '2023-06-01' },
    payload: { model, max_tokens: 200, messages: [{ role: 'user', content }], ...extra },
  });

describe('the shipped example fixtures', () => {
  it('answer their demo prompts in both APIs', async () => {
    t = await buildTestApp();
    const weather = 'It is 21 degrees and sunny in the emulator today.';
    expect((await chat('Tell me the [demo] weather')).json().choices[0].message.content).toBe(
      weather,
    );
    expect((await message('[demo] weather please')).json().content[0].text).toBe(weather);
    expect((await chat('[demo] echo hello\nworld')).json().choices[0].message.content).toBe(
      'You said: hello\nworld',
    );
  });

  it('can set the finish or stop reason, per API and model', async () => {
    t = await buildTestApp();
    const cut = (await chat('[demo] cut')).json().choices[0];
    expect(cut).toMatchObject({ finish_reason: 'length' });
    expect((await message('[demo] cut')).json()).toMatchObject({ stop_reason: 'max_tokens' });
    // the messages rule is limited to two models
    expect((await message('[demo] cut', 'other-model')).json().stop_reason).toBe('end_turn');
  });

  it('leave every other prompt to the default generator', async () => {
    t = await buildTestApp();
    expect((await chat('Hello')).json().choices[0].message.content).toBe(
      generateReply('Hello', 0).text,
    );
  });

  it('are listed by GET /_emulator/fixtures', async () => {
    t = await buildTestApp();
    const res = await t.inject({ url: '/_emulator/fixtures' });
    expect(res.json().rules[0]).toEqual({
      file: 'replies/examples.json',
      index: 0,
      name: 'weather demo',
      match: { contains: '[demo] weather' },
      reply: 'It is 21 degrees and sunny in the emulator today.',
    });
    expect(res.json().blocked_terms).toEqual([
      { term: 'forbidden-demo-term', category: 'violence', severity: 'medium' },
    ]);
  });
});

describe('scripted replies', () => {
  it('take the first matching rule across files in name order', async () => {
    const dir = fixturesDir({
      'b.json': { rules: [{ match: { contains: 'ping' }, reply: 'from b' }] },
      'a.json': {
        rules: [
          { match: { regex: '^PING$', flags: 'i' }, reply: 'from a (regex)' },
          { match: { contains: 'ping' }, model: 'special', reply: 'from a (model)' },
        ],
      },
    });
    t = await buildTestApp({ fixturesDir: dir });
    expect((await chat('ping')).json().choices[0].message.content).toBe('from a (regex)');
    expect((await chat('say ping', 'special')).json().choices[0].message.content).toBe(
      'from a (model)',
    );
    expect((await chat('say ping')).json().choices[0].message.content).toBe('from b');
  });

  it('are cut by max_tokens and stop sequences like any reply, and streamed the same', async () => {
    const long = 'word '.repeat(300).trim();
    const dir = fixturesDir({
      'long.json': { rules: [{ match: { contains: 'long' }, reply: long }] },
    });
    t = await buildTestApp({ fixturesDir: dir });
    const full = await message('long please', 'm', { max_tokens: 1000 });
    expect(full.json()).toMatchObject({ stop_reason: 'end_turn', usage: { output_tokens: 300 } });
    const cut = await message('long please', 'm', { max_tokens: 256 });
    expect(cut.json()).toMatchObject({ stop_reason: 'max_tokens', usage: { output_tokens: 256 } });
    const streamed = parseSse(
      (await message('long please', 'm', { max_tokens: 256, stream: true })).body,
    );
    const text = streamed
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => (e.data as { delta: { text: string } }).delta.text)
      .join('');
    expect(text).toBe(cut.json().content[0].text);
    expect(countTokens(text)).toBe(256);
  });

  it('reload from disk, keeping the active rules when the new files are bad', async () => {
    const dir = fixturesDir({ 'r.json': { rules: [{ match: { contains: 'x' }, reply: 'one' }] } });
    t = await buildTestApp({ fixturesDir: dir });
    expect((await chat('x')).json().choices[0].message.content).toBe('one');
    writeFileSync(
      join(dir, 'replies', 'r.json'),
      JSON.stringify({ rules: [{ match: { contains: 'x' }, reply: 'two' }] }),
    );
    const reloaded = await t.inject({ method: 'POST', url: '/_emulator/fixtures/reload' });
    expect(reloaded.statusCode).toBe(200);
    expect((await chat('x')).json().choices[0].message.content).toBe('two');

    writeFileSync(join(dir, 'replies', 'r.json'), '{"rules": [{"match": {}}]}');
    const bad = await t.inject({ method: 'POST', url: '/_emulator/fixtures/reload' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.message).toContain('r.json');
    expect((await chat('x')).json().choices[0].message.content).toBe('two');
  });

  it('runs a backtracking regex in linear time, and refuses on reload one RE2 cannot run, naming the rule', async () => {
    const dir = fixturesDir({ 'r.json': { rules: [{ match: { contains: 'x' }, reply: 'one' }] } });
    t = await buildTestApp({ fixturesDir: dir });
    const write = (rules: object[]) =>
      writeFileSync(join(dir, 'replies', 'r.json'), JSON.stringify({ rules }));
    // Catastrophic for a backtracking engine: hours on these prompts, not with RE2.
    write([
      { match: { regex: '^(a+)+$' }, reply: 'nested' },
      { match: { regex: '^(b|b)*$' }, reply: 'overlapping' },
      { match: { regex: '^(\\w+)-(\\d+)$' }, reply: '$2 of $1' },
    ]);
    expect((await t.inject({ method: 'POST', url: '/_emulator/fixtures/reload' })).statusCode).toBe(
      200,
    );
    const reply = async (prompt: string) => (await chat(prompt)).json().choices[0].message.content;
    expect(await reply(`${'a'.repeat(40)}!`)).not.toBe('nested');
    expect(await reply(`${'b'.repeat(40)}!`)).not.toBe('overlapping');
    expect(await reply('a'.repeat(40))).toBe('nested');
    expect(await reply('b'.repeat(40))).toBe('overlapping');
    expect(await reply('part-42')).toBe('42 of part');
    write([
      { match: { contains: 'x' }, reply: 'one' },
      { match: { regex: '^(?=.*\\d)\\w+$' }, reply: 'lookahead' },
    ]);
    const bad = await t.inject({ method: 'POST', url: '/_emulator/fixtures/reload' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.message).toBe(
      `${join(dir, 'replies', 'r.json')}: rules.1.match.regex: /^(?=.*\\d)\\w+$/ cannot be run in linear time (lookaround and backreferences cannot; RE2 says: error parsing regexp: invalid or unsupported Perl syntax: \`(?=\`)`,
    );
    expect(await reply('part-42'), 'the rules before stay').toBe('42 of part');
  });
});

describe('fixture validation', () => {
  it.each([
    ['{not json', /bad\.json: .*JSON/],
    [{ rules: [{ match: { contains: 'x' } }] }, /bad\.json: rules\.0\.reply: is required/],
    [
      { rules: [{ match: { regex: '(' }, reply: 'x' }] },
      /bad\.json: rules\.0\.match\.regex: Invalid regular expression/,
    ],
    [
      { rules: [{ match: { contains: 'x' }, reply: 'y', api: 'video' }] },
      /bad\.json: rules\.0\.api/,
    ],
    [{ rules: [{ match: { contains: 'x' }, reply: 'y', extra: 1 }] }, /bad\.json: rules\.0/],
    [{ replies: [] }, /bad\.json: /],
  ])('names the file and the rule for %j', (data, message) => {
    const dir = fixturesDir({ 'bad.json': data });
    expect(() => loadFixtures(dir)).toThrow(FixtureError);
    expect(() => loadFixtures(dir)).toThrow(message);
  });

  it('stops start-up on bad fixtures', async () => {
    const dir = fixturesDir({ 'bad.json': '{' });
    await expect(buildTestApp({ fixturesDir: dir })).rejects.toThrow(FixtureError);
  });

  it('checks the content filter file too', () => {
    const dir = fixturesDir({});
    writeFileSync(
      join(dir, 'content-filter.json'),
      JSON.stringify({ blocked_terms: [{ term: 'x', category: 'rude' }] }),
    );
    expect(() => loadFixtures(dir)).toThrow(/content-filter\.json: blocked_terms\.0\.category/);
  });

  it('accepts the shipped fixtures and a copy of them', () => {
    const copy = mkdtempSync(join(tmpdir(), 'fixtures-copy-'));
    cpSync(DEFAULT_FIXTURES_DIR, copy, { recursive: true });
    expect(loadFixtures(copy).rules.length).toBe(loadFixtures(DEFAULT_FIXTURES_DIR).rules.length);
  });
});

describe('agent rules', () => {
  const WEATHER_SCHEMA = {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
    additionalProperties: false,
  };
  const messagesTools = [{ name: 'get_weather', input_schema: WEATHER_SCHEMA }];
  const chatTools = [
    { type: 'function', function: { name: 'get_weather', parameters: WEATHER_SCHEMA } },
  ];

  it('answer with tool calls, given or made from the schema, in both APIs', async () => {
    t = await buildTestApp({
      fixturesDir: fixturesDir({
        'a.json': {
          rules: [
            {
              match: { contains: 'Oslo' },
              tool_calls: [{ name: 'get_weather', input: { city: 'Oslo' } }],
            },
            { match: { contains: 'anywhere' }, tool_calls: [{ name: 'get_weather' }] },
          ],
        },
      }),
    });
    const message = (
      await t.messages({
        model: 'm',
        max_tokens: 100,
        tools: messagesTools,
        messages: [{ role: 'user', content: 'Oslo?' }],
      })
    ).json();
    expect(message.content).toEqual([
      {
        type: 'tool_use',
        id: 'toolu_1',
        name: 'get_weather',
        input: { city: 'Oslo' },
        caller: { type: 'direct' },
      },
    ]);
    expect(message.stop_reason).toBe('tool_use');
    const chat = (
      await t.chat({ model: 'm', tools: chatTools, messages: [{ role: 'user', content: 'Oslo?' }] })
    ).json();
    expect(chat.choices[0]).toMatchObject({
      finish_reason: 'tool_calls',
      message: {
        content: null,
        tool_calls: [
          { type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
        ],
      },
    });
    const made = (
      await t.chat({
        model: 'm',
        tools: chatTools,
        messages: [{ role: 'user', content: 'anywhere' }],
      })
    ).json();
    expect(
      Object.keys(JSON.parse(made.choices[0].message.tool_calls[0].function.arguments)),
    ).toEqual(['city']);
  });

  it('answer with JSON: a literal, or made from the output schema', async () => {
    t = await buildTestApp({
      fixturesDir: fixturesDir({
        'a.json': {
          rules: [
            { match: { contains: 'literal' }, json: { ok: true, items: [1, 2] } },
            { match: { contains: 'made' }, json: true },
          ],
        },
      }),
    });
    expect((await chat('literal')).json().choices[0].message.content).toBe(
      '{"ok":true,"items":[1,2]}',
    );
    const made = await t.messages({
      model: 'm',
      max_tokens: 200,
      output_config: { format: { type: 'json_schema', schema: WEATHER_SCHEMA } },
      messages: [{ role: 'user', content: 'made' }],
    });
    expect(Object.keys(JSON.parse(made.json().content[0].text))).toEqual(['city']);
  });

  it('think what they are told when thinking is on', async () => {
    t = await buildTestApp({
      fixturesDir: fixturesDir({
        'a.json': {
          rules: [{ match: { contains: 'plan' }, reply: 'Done.', thinking: 'First, plan.' }],
        },
      }),
    });
    const body = (
      await t.messages({
        model: 'm',
        max_tokens: 2000,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'plan it' }],
      })
    ).json();
    expect(body.content.slice(0, 2)).toEqual([
      { type: 'thinking', thinking: 'First, plan.', signature: expect.any(String) },
      { type: 'text', text: 'Done.', citations: null },
    ]);
    // Without thinking on, the same rule answers text only.
    expect((await message('plan it')).json().content).toEqual([
      { type: 'text', text: 'Done.', citations: null },
    ]);
  });

  it('script an agent end to end: a sequence answers each call with its next step, reset starts over', async () => {
    t = await buildTestApp({
      fixturesDir: fixturesDir({
        'agent.json': {
          rules: [
            {
              name: 'weather agent',
              match: { tool_offered: 'get_weather' },
              sequence: [
                { tool_calls: [{ name: 'get_weather', input: { city: 'Rome' } }] },
                { reply: 'It is sunny in Rome.', stop_reason: 'end_turn' },
              ],
            },
          ],
        },
      }),
    });
    const ask = () =>
      t.chat({ model: 'm', tools: chatTools, messages: [{ role: 'user', content: 'go' }] });
    expect((await ask()).json().choices[0].message.tool_calls[0].function.arguments).toBe(
      '{"city":"Rome"}',
    );
    expect((await ask()).json().choices[0].message.content).toBe('It is sunny in Rome.');
    expect((await ask()).json().choices[0].message.content).toBe('It is sunny in Rome.');
    await t.inject({ method: 'POST', url: '/_emulator/reset' });
    expect((await ask()).json().choices[0].message.tool_calls).toHaveLength(1);
    // A request without the tool does not match.
    expect((await chat('go')).json().choices[0].message.content).toBe(generateReply('go', 0).text);
  });

  it('match on the nth user turn and on the tool a result came from', async () => {
    t = await buildTestApp({
      fixturesDir: fixturesDir({
        'a.json': {
          rules: [
            { match: { after_tool: 'get_weather' }, reply: 'Weather noted.' },
            { match: { turn: 2 }, reply: 'Second turn.' },
          ],
        },
      }),
    });
    const second = await t.chat({
      model: 'm',
      messages: [
        { role: 'user', content: 'one' },
        { role: 'assistant', content: 'ok' },
        { role: 'user', content: 'two' },
      ],
    });
    expect(second.json().choices[0].message.content).toBe('Second turn.');
    expect((await chat('one')).json().choices[0].message.content).toBe(
      generateReply('one', 0).text,
    );
    const after = await t.messages({
      model: 'm',
      max_tokens: 100,
      tools: messagesTools,
      messages: [
        { role: 'user', content: 'weather?' },
        {
          role: 'assistant',
          content: [{ type: 'tool_use', id: 'toolu_9', name: 'get_weather', input: { city: 'x' } }],
        },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_9', content: 'sunny' }],
        },
      ],
    });
    expect(after.json().content).toEqual([
      { type: 'text', text: 'Weather noted.', citations: null },
    ]);
  });

  it.each([
    [
      { rules: [{ match: { contains: 'x', regex: 'y' }, reply: 'z' }] },
      /rules\.0\.match: takes one of "contains", "regex" and "prompt_regex"/,
    ],
    [{ rules: [{ match: { flags: 'i' }, reply: 'z' }] }, /rules\.0\.match\.flags: needs "regex"/],
    [
      { rules: [{ sequence: [{ reply: 'a' }, { thinking: 'b' }] }] },
      /rules\.0\.sequence\.1\.reply: is required/,
    ],
    [{ rules: [{ reply: 'a', sequence: [{ reply: 'b' }] }] }, /rules\.0\.sequence: replaces reply/],
    [{ rules: [{ tool_calls: [{ input: {} }] }] }, /rules\.0\.tool_calls\.0\.name: is required/],
    [
      { rules: [{ match: { turn: 0 }, reply: 'a' }] },
      /rules\.0\.match\.turn: must be greater than or equal to 1/,
    ],
  ])('refuse bad agent fields: %j', (data, message) => {
    expect(() => loadFixtures(fixturesDir({ 'bad.json': data }))).toThrow(message);
  });
});
