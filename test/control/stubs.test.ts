import { afterEach, describe, expect, it } from 'vitest';
import { MATCH_WORK, REGEX_SCAN_CHARS } from '../../src/harness/match.js';
import { MAX_STUB_BYTES, MAX_STUBS } from '../../src/text/replies.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
afterEach(() => t?.app.close());

const stub = (rule: object, headers: Record<string, string> = {}) =>
  t.inject({ method: 'POST', url: '/_emulator/replies', payload: rule, headers });

const chatText = async (content: string, options: Parameters<TestApp['chat']>[1] = {}) =>
  (await t.chat({ model: 'm', messages: [{ role: 'user', content }] }, options)).json().choices[0]
    .message.content as string;

describe('runtime stubs (/_emulator/replies)', () => {
  it(`compare bodies within one budget per request (${MATCH_WORK}), shared with the fault rules`, async () => {
    t = await buildTestApp();
    const row = Array.from({ length: 1000 }, (_, i) => i);
    const rows = Array.from({ length: 600 }, () => row); // 600 × 1001 compared per rule
    await stub({ match: { body: { '$.rows[*]': row } }, reply: 'matched' });
    const ask = async () =>
      (await t.chat({ model: 'm', rows, messages: [{ role: 'user', content: 'hi' }] })).json()
        .choices[0].message.content as string;
    expect(await ask()).toBe('matched');
    // a fault rule that never strikes compares as much first: the stub's turn is past the budget
    const fault = await t.inject({
      method: 'POST',
      url: '/_emulator/faults',
      payload: { match: { body: { '$.rows[*]': [...row.slice(1), -1] } }, status: 500 },
    });
    expect(fault.statusCode).toBe(200);
    expect(await ask()).not.toBe('matched');
  });

  it(`reads the prompt with regexes ${REGEX_SCAN_CHARS} characters per turn at most, then passes regex rules over`, async () => {
    t = await buildTestApp();
    const prompt = `${'a'.repeat(999_990)} order 7`; // 1 MB: 50 regexes read the budget
    for (let i = 0; i < 50; i++) await stub({ match: { prompt_regex: `zz${i}` }, reply: 'never' });
    await stub({ match: { prompt_regex: 'order (\\d)' }, reply: 'regex $1' });
    await stub({ match: { contains: 'order 7' }, reply: 'contains' });
    const long = (
      await t.chat({ model: 'gpt-4.1', messages: [{ role: 'user', content: prompt }] })
    ).json().choices[0].message.content;
    expect(long).toBe('contains'); // the 51st regex is passed over; a rule without one is not
    expect(await chatText('where is order 7')).toBe('regex 7');
  });

  it('add, list, answer, remove one, remove all', async () => {
    t = await buildTestApp();
    const added = await stub({
      match: { prompt_regex: 'order (\\d+)' },
      reply: 'Order $1 shipped.',
    });
    expect(added.statusCode).toBe(200);
    expect(added.json()).toEqual({
      id: 1,
      session: 'default',
      match: { prompt_regex: 'order (\\d+)' },
      reply: 'Order $1 shipped.',
      remaining: null,
      fired: 0,
    });
    expect(await chatText('where is order 42?')).toBe('Order 42 shipped.');
    const list = await t.inject({ url: '/_emulator/replies' });
    expect(list.json()).toEqual({ replies: [{ ...added.json(), fired: 1 }] });
    await stub({ reply: 'second' });
    const del = await t.inject({ method: 'DELETE', url: '/_emulator/replies/1' });
    expect(del.json()).toEqual({ status: 'ok' });
    expect((await t.inject({ method: 'DELETE', url: '/_emulator/replies/1' })).statusCode).toBe(
      404,
    );
    expect(await chatText('where is order 42?')).toBe('second');
    await t.inject({ method: 'DELETE', url: '/_emulator/replies' });
    expect((await t.inject({ url: '/_emulator/replies' })).json()).toEqual({ replies: [] });
    expect(await chatText('where is order 42?')).not.toBe('second');
  });

  it('win over fixture files (the shipped demo rule)', async () => {
    t = await buildTestApp();
    const demo = 'Tell me the [demo] weather';
    expect(await chatText(demo)).toBe('It is 21 degrees and sunny in the emulator today.');
    await stub({ match: { contains: '[demo] weather' }, reply: 'Stubbed rain.' });
    expect(await chatText(demo)).toBe('Stubbed rain.');
  });

  it('match on group, model, key, header, body JSON path and turn', async () => {
    t = await buildTestApp();
    await stub({ match: { group: 'messages' }, reply: 'messages only' });
    await stub({ match: { model: 'special' }, reply: 'special model' });
    await stub({ match: { key: 'key-b' }, reply: 'key b' });
    await stub({ match: { header: { 'X-Tenant': 'acme' } }, reply: 'acme' });
    await stub({ match: { body: { '$.messages[-1].name': 'bob' } }, reply: 'hi bob' });
    await stub({ match: { turn: 2 }, reply: 'second turn' });
    const plain = 'hello';
    expect(await chatText(plain)).not.toMatch(/messages only|special|key b|acme|bob|second/);
    expect(
      (await t.chat({ model: 'special', messages: [{ role: 'user', content: plain }] })).json()
        .choices[0].message.content,
    ).toBe('special model');
    expect(await chatText(plain, { key: 'key-b' })).toBe('key b');
    expect(await chatText(plain, { headers: { 'x-tenant': 'acme' } })).toBe('acme');
    expect(
      (
        await t.chat({ model: 'm', messages: [{ role: 'user', content: plain, name: 'bob' }] })
      ).json().choices[0].message.content,
    ).toBe('hi bob');
    const twoTurns = [
      { role: 'user', content: 'one' },
      { role: 'assistant', content: 'ok' },
      { role: 'user', content: 'two' },
    ];
    expect(
      (await t.chat({ model: 'm', messages: twoTurns })).json().choices[0].message.content,
    ).toBe('second turn');
    const msg = await t.messages({
      model: 'claude-x',
      max_tokens: 50,
      messages: [{ role: 'user', content: plain }],
    });
    expect(msg.json().content).toEqual([{ type: 'text', text: 'messages only', citations: null }]);
    // The key is never echoed.
    const listed = (await t.inject({ url: '/_emulator/replies' })).body;
    expect(listed).not.toContain('key-b');
    expect(listed).toContain('"key":"[REDACTED]"');
  });

  it('the highest priority wins; equal ones in the order added; `times` spends a stub', async () => {
    t = await buildTestApp();
    await stub({ reply: 'low' });
    await stub({ reply: 'high once', priority: 5, times: 1 });
    await stub({ reply: 'high second', priority: 5 });
    expect(await chatText('q')).toBe('high once');
    expect(await chatText('q')).toBe('high second');
    expect(await chatText('q')).toBe('high second');
    const ids = (await t.inject({ url: '/_emulator/replies' }))
      .json()
      .replies.map((r: { id: number }) => r.id);
    expect(ids).toEqual([3, 1]);
  });

  it('answer with tool calls, JSON and sequences, as fixture rules do', async () => {
    t = await buildTestApp();
    await stub({
      match: { group: 'chat', tool_offered: 'get_weather' },
      sequence: [
        { tool_calls: [{ name: 'get_weather', input: { city: 'Oslo' } }] },
        { reply: 'It is cold in Oslo.' },
      ],
    });
    const tools = [
      {
        type: 'function',
        function: {
          name: 'get_weather',
          parameters: { type: 'object', properties: { city: { type: 'string' } } },
        },
      },
    ];
    const first = (
      await t.chat({ model: 'm', tools, messages: [{ role: 'user', content: 'weather?' }] })
    ).json().choices[0];
    expect(first.finish_reason).toBe('tool_calls');
    expect(first.message.tool_calls[0].function).toEqual({
      name: 'get_weather',
      arguments: '{"city":"Oslo"}',
    });
    const second = (
      await t.chat({ model: 'm', tools, messages: [{ role: 'user', content: 'weather?' }] })
    ).json().choices[0];
    expect(second.message.content).toBe('It is cold in Oslo.');

    await stub({ match: { group: 'messages' }, json: { ok: true, n: 3 } });
    const msg = await t.messages({
      model: 'claude-x',
      max_tokens: 50,
      messages: [{ role: 'user', content: 'json please' }],
    });
    expect(msg.json().content).toEqual([
      { type: 'text', text: '{"ok":true,"n":3}', citations: null },
    ]);
  });

  it('refuse, naming the field: a regex RE2 cannot run, a bad JSON path, a video group, no reply', async () => {
    t = await buildTestApp();
    const cases: Array<[object, string]> = [
      [
        { match: { prompt_regex: '^(\\w)\\1$' }, reply: 'x' },
        'match.prompt_regex: /^(\\w)\\1$/ cannot be run in linear time',
      ],
      [{ match: { prompt_regex: '(' }, reply: 'x' }, 'match.prompt_regex: Invalid regular'],
      [
        { match: { prompt_regex: '(?:[ab]{1000})c' }, reply: 'x' },
        'match.prompt_regex: /(?:[ab]{1000})c/ compiles to about 1003 instructions, more than the 400 the emulator runs',
      ],
      [{ match: { body: { '$.a[': 1 } }, reply: 'x' }, 'match.body.$.a[: is not a JSON path'],
      [{ match: { group: 'video' }, reply: 'x' }, 'match.group: replies are for'],
      [{ match: { contains: 'x' } }, 'reply: is required'],
      [{ reply: 'x', priority: 'high' }, 'priority'],
    ];
    for (const [rule, message] of cases) {
      const res = await stub(rule);
      expect(res.statusCode, JSON.stringify(rule)).toBe(400);
      expect(res.json().error.message).toContain(message);
    }
    expect((await t.inject({ url: '/_emulator/replies' })).json()).toEqual({ replies: [] });
  });

  it(`hold at most ${MAX_STUBS}`, async () => {
    t = await buildTestApp();
    // Fifty at a time (with shared state each change waits out the epoch's lease).
    for (let i = 0; i < MAX_STUBS; i += 50) {
      const added = await Promise.all(
        Array.from({ length: 50 }, (_, j) => stub({ reply: `r${i + j}` })),
      );
      expect(added.map((res) => res.statusCode)).toEqual(Array(50).fill(200));
    }
    const over = await stub({ reply: 'one more' });
    expect(over.statusCode).toBe(400);
    expect(over.json().error.message).toBe(
      `At most ${MAX_STUBS} stubs, ${MAX_STUB_BYTES} bytes of JSON in all, can be held.`,
    );
  });

  it(`hold at most ${MAX_STUB_BYTES} bytes of JSON in all`, async () => {
    t = await buildTestApp();
    const big = 'x'.repeat(4 * 1024 * 1024 - 100); // 4 of these fit, a 5th does not
    for (let i = 0; i < 3; i++) expect((await stub({ reply: big })).statusCode).toBe(200);
    expect((await stub({ reply: big })).statusCode).toBe(200);
    const over = await stub({ reply: big });
    expect(over.statusCode).toBe(400);
    expect((await t.inject({ method: 'DELETE', url: '/_emulator/replies/1' })).statusCode).toBe(
      200,
    );
    expect((await stub({ reply: big })).statusCode, 'room again once one is removed').toBe(200);
  });
});
