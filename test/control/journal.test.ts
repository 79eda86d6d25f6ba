import { afterEach, describe, expect, it, vi } from 'vitest';
import { Journal, MAX_JOURNAL_WAITS, MAX_JOURNAL_WATCHERS } from '../../src/harness/journal.js';
import { buildTestApp, T0, type TestApp, testDeps } from '../helpers/app.js';

let t: TestApp;
afterEach(() => t?.app.close());

/** Wall-clock timers the test fires by hand. */
function manualTimers() {
  const due: Array<{ fn: () => void; ms: number; cancelled: boolean }> = [];
  return {
    due,
    setTimer: (fn: () => void, ms: number) => {
      const timer = { fn, ms, cancelled: false };
      due.push(timer);
      return () => {
        timer.cancelled = true;
      };
    },
    fireAll() {
      for (const timer of due.splice(0)) if (!timer.cancelled) timer.fn();
    },
  };
}

const journal = async (query = '', headers: Record<string, string> = {}) => {
  const res = await t.inject({ url: `/_emulator/journal${query}`, headers });
  expect(res.statusCode).toBe(200);
  return res.json().requests as Array<Record<string, unknown>>;
};

const ask = (content: string, model = 'm', options: Parameters<TestApp['chat']>[1] = {}) =>
  t.chat({ model, messages: [{ role: 'user', content }] }, options);

/** Until `count` waits have armed their timers (with a shared store, a wait starts later). */
const armed = (timers: { due: unknown[] }, count: number) =>
  vi.waitFor(() => expect(timers.due.length).toBeGreaterThanOrEqual(count));

describe('GET /_emulator/journal', () => {
  it('filters by group, method, path, status, model, key, session and since', async () => {
    t = await buildTestApp();
    await ask('a', 'm1', { key: 'key-a' });
    t.deps.clock.advance(1000);
    await ask('b', 'm2', { key: 'key-b', headers: { 'x-emulator-session': 's1' } });
    await t.video('text2video/1');
    await t.chat({}, { key: null });
    const ids = (rows: Array<Record<string, unknown>>) => rows.map((r) => r.id);
    expect(ids(await journal())).toEqual(['req_1', 'req_2', 'req_3', 'req_4']);
    expect(ids(await journal('?group=chat'))).toEqual(['req_1', 'req_2', 'req_4']);
    expect(ids(await journal('?group=video&method=GET'))).toEqual(['req_3']);
    expect(ids(await journal('?path=/videogen/*'))).toEqual(['req_3']);
    expect(ids(await journal('?status=401'))).toEqual(['req_4']);
    expect(ids(await journal('?status=404'))).toEqual(['req_3']);
    expect(ids(await journal('?model=m2'))).toEqual(['req_2']);
    expect(ids(await journal('?key=key-a'))).toEqual(['req_1']);
    expect(ids(await journal('?session=s1'))).toEqual(['req_2']);
    expect(ids(await journal('', { 'x-emulator-session': 's1' }))).toEqual(['req_2']);
    expect(ids(await journal(`?since=${T0 + 1000}`))).toEqual(['req_2', 'req_3', 'req_4']);
    // today's name stays as an alias
    const alias = await t.inject({ url: '/_emulator/requests?model=m1' });
    expect(alias.json().requests.map((r: { id: string }) => r.id)).toEqual(['req_1']);
    // the raw key is never echoed, and a refused request has no key fingerprint
    const all = await t.inject({ url: '/_emulator/journal?key=key-a' });
    expect(all.body).not.toContain('key-a');
    const rows = await journal();
    expect(rows[0]).toMatchObject({ group: 'chat', session: 'default', model: 'm1' });
    expect(rows[0]?.key_hash).toMatch(/^[\w-]{12}$/);
    expect(rows[0]?.key_hash).not.toBe(rows[1]?.key_hash);
    expect(rows[3]).toMatchObject({ status: 401, key_hash: null, model: null });
  });

  it('refuses a bad filter with a 400 naming the field', async () => {
    t = await buildTestApp();
    for (const [query, field] of [
      ['?group=images', 'group'],
      ['?status=abc', 'status'],
      ['?since=-1', 'since'],
      ['?session=a%20b', 'session'],
      ['?path=nope', 'path'],
    ]) {
      const res = await t.inject({ url: `/_emulator/journal${query}` });
      expect(res.statusCode, query).toBe(400);
      expect(res.json().error.message).toContain(field);
    }
    const clash = await t.inject({
      url: '/_emulator/journal?session=a',
      headers: { 'x-emulator-session': 'b' },
    });
    expect(clash.statusCode).toBe(400);
    expect(clash.json().error.message).toBe(
      'session: a differs from the x-emulator-session header',
    );
  });
});

describe('credentials in URLs a body carries', () => {
  it('are journaled [REDACTED]: a presigned image URL in a chat or messages request', async () => {
    t = await buildTestApp();
    const presigned = 'https://bucket.example/cat.png?X-Amz-Signature=SECRETSIG&X-Amz-Date=1';
    const hidden = 'https://bucket.example/cat.png?X-Amz-Signature=[REDACTED]&X-Amz-Date=1';
    await t.chat({
      model: 'm',
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: presigned } }] }],
    });
    await t.messages({
      model: 'm',
      max_tokens: 10,
      messages: [
        { role: 'user', content: [{ type: 'image', source: { type: 'url', url: presigned } }] },
      ],
    });
    const entries = await journal();
    expect(entries.map((e) => e.status)).toEqual([200, 200]);
    const details = await Promise.all(
      entries.map(async (e) => (await t.inject({ url: `/_emulator/journal/${e.id}` })).body),
    );
    for (const detail of details) {
      expect(detail).not.toMatch(/SECRETSIG/);
      expect(detail).toContain(hidden);
    }
  });
});

describe('credentials a reply echoes', () => {
  const url = 'http://alice:Pw0rdXYZ@db.internal/x?token=TOK123456';
  const hidden = 'http://alice:[REDACTED]@db.internal/x?token=[REDACTED]';
  const detail = async () => {
    const [entry] = await journal();
    const res = await t.inject({ url: `/_emulator/journal/${entry?.id}` });
    expect(res.statusCode).toBe(200);
    return res;
  };

  it('are hidden in a JSON answer kept by the journal (the echo rule, both text APIs)', async () => {
    t = await buildTestApp();
    const chat = await ask(`[demo] echo ${url}`);
    expect(chat.json().choices[0].message.content).toContain(url); // the client gets its echo
    let shown = await detail();
    expect(shown.body).not.toMatch(/Pw0rdXYZ|TOK123456/);
    expect(shown.json().response.choices[0].message.content).toContain(hidden);
    expect(shown.json().response_withheld).toBe(false);
    await t.inject({ method: 'DELETE', url: '/_emulator/journal' });
    await t.messages({
      model: 'm',
      max_tokens: 200,
      messages: [{ role: 'user', content: `[demo] echo ${url}` }],
    });
    shown = await detail();
    expect(shown.body).not.toMatch(/Pw0rdXYZ|TOK123456/);
    expect(shown.json().response.content[0].text).toContain(hidden);
  });

  it('are hidden whole in a JSON answer cut at 8 KiB in the middle of its password', async () => {
    t = await buildTestApp();
    // Where the answer's bytes put the password, then padding that puts the cut in it.
    const probe = (await ask(`[demo] echo ${'z'.repeat(8000)}${url}`)).body;
    const shift = 8192 - (probe.indexOf('alice:Pw0r') + 'alice:Pw0r'.length);
    await t.inject({ method: 'DELETE', url: '/_emulator/journal' });
    const res = await ask(`[demo] echo ${'z'.repeat(8000 + shift)}${url}`);
    expect(res.body.indexOf('alice:Pw0r') + 'alice:Pw0r'.length).toBe(8192);
    const shown = (await detail()).json();
    expect(shown.response_truncated).toBe(true);
    expect(shown.response).not.toMatch(/Pw0r|alice:/);
    expect(shown.response.endsWith('[REDACTED]')).toBe(true);
  });

  it('are hidden in a cut JSON answer though a JSON escape stands in the URL', async () => {
    t = await buildTestApp();
    const res = await t.messages({
      model: 'm',
      max_tokens: 4096,
      messages: [
        {
          role: 'user',
          content: [
            {
              type: 'search_result',
              source: 'https://us\u0001er:hunter2secret@e.example/?api_key=sek\u0001rit1xyz',
              title: 'T'.repeat(9000),
              content: [{ type: 'text', text: 'Fact one.' }],
              citations: { enabled: true },
            },
            { type: 'text', text: 'What does it say?' },
          ],
        },
      ],
    });
    expect(res.statusCode).toBe(200);
    const shown = (await detail()).json();
    expect(shown.response_truncated).toBe(true);
    expect(JSON.stringify(shown)).not.toMatch(/hunter2|rit1xyz/);
  });

  it('are not kept in pieces: a stream answering a body with a URL credential is withheld', async () => {
    t = await buildTestApp();
    const res = await t.chat({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: `[demo] echo ${url}` }],
    });
    expect(res.body).toContain('Pw0r'); // streamed to the client, a token at a time
    const shown = await detail();
    expect(shown.body).not.toMatch(/Pw0r|TOK1/);
    expect(shown.json()).toMatchObject({
      status: 200,
      response: null,
      response_truncated: false,
      response_withheld: true,
    });
    // a body over 8 KiB is searched in its first 8 KiB only: anything of a URL past them, and
    // the stream is not kept either
    await t.inject({ method: 'DELETE', url: '/_emulator/journal' });
    await t.messages({
      model: 'm',
      max_tokens: 200,
      stream: true,
      system: 'y '.repeat(5000),
      messages: [{ role: 'user', content: `[demo] echo ${url}` }],
    });
    const large = (await detail()).json();
    expect(large.body_truncated).toBe(true);
    expect(large).toMatchObject({ response: null, response_withheld: true });
    // a stream whose request held no credential is kept
    await t.inject({ method: 'DELETE', url: '/_emulator/journal' });
    await t.chat({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hello' }] });
    const plain = (await detail()).json();
    expect(plain.response_withheld).toBe(false);
    expect(plain.response).toMatch(/^data: /);
  });
});

describe('credentials in URLs a large body carries', () => {
  it('are hidden in what the journal keeps of it (its first 8 KiB), the body reported truncated', async () => {
    t = await buildTestApp();
    const url = (i: number) => `https://u:SECRET${i}@h.example/x?X-Amz-Signature=SIG${i}`;
    const content = Array.from({ length: 1000 }, (_, i) => `see ${url(i)}`).join(' ');
    const res = await t.chat({ model: 'm', messages: [{ role: 'user', content }] });
    expect(res.statusCode).toBe(200);
    const [entry] = await journal();
    const detail = await t.inject({ url: `/_emulator/journal/${entry?.id}` });
    const shown = detail.json();
    expect(shown.body_truncated).toBe(true);
    expect(typeof shown.body).toBe('string');
    expect(shown.body.length).toBeLessThanOrEqual(8192);
    expect(shown.body).toContain('see https://u:[REDACTED]@h.example/x?X-Amz-Signature=[REDACTED]');
    expect(detail.body).not.toMatch(/SECRET|SIG\d/);
  });
});

describe('POST /_emulator/journal/verify', () => {
  const verify = (body: object, headers: Record<string, string> = {}) =>
    t.inject({ method: 'POST', url: '/_emulator/journal/verify', payload: body, headers });

  it('answers 200 when the count holds (exactly, at_least, at_most; default at least 1)', async () => {
    t = await buildTestApp();
    await ask('hello', 'gpt-x');
    await ask('again', 'gpt-x');
    const match = { group: 'chat', path: '/v1/chat/completions', model: 'gpt-x' };
    expect((await verify({ match, count: { exactly: 2 } })).json()).toEqual({
      status: 'ok',
      matched: 2,
    });
    expect((await verify({ match })).json()).toEqual({ status: 'ok', matched: 2 });
    expect((await verify({ match, count: { at_least: 1, at_most: 2 } })).statusCode).toBe(200);
    const byBody = await verify({
      match: { body: { '$.messages[0].content': 'again' } },
      count: { exactly: 1 },
    });
    expect(byBody.json()).toEqual({ status: 'ok', matched: 1 });
  });

  it('answers 409 with the near misses: closest first, and which fields differ', async () => {
    t = await buildTestApp();
    await ask('hello', 'gpt-x');
    await ask('hello', 'gpt-y', { headers: { 'x-tenant': 'b' } });
    await t.video('text2video/1');
    const res = await verify({
      match: { group: 'chat', model: 'gpt-z', header: { 'X-Tenant': 'a' } },
      count: { exactly: 1 },
    });
    expect(res.statusCode).toBe(409);
    const body = res.json();
    expect(body.error).toEqual({
      type: 'verification_failed',
      message: 'Expected exactly 1 matching request(s), found 0.',
    });
    expect(body.matched).toBe(0);
    expect(
      body.near_misses.map((miss: { request: { id: string }; differences: unknown }) => [
        miss.request.id,
        miss.differences,
      ]),
    ).toEqual([
      [
        'req_2',
        [
          { field: 'header.x-tenant', expected: 'a', actual: 'b' },
          { field: 'model', expected: 'gpt-z', actual: 'gpt-y' },
        ],
      ],
      [
        'req_1',
        [
          { field: 'header.x-tenant', expected: 'a', actual: null },
          { field: 'model', expected: 'gpt-z', actual: 'gpt-x' },
        ],
      ],
      [
        'req_3',
        [
          { field: 'group', expected: 'chat', actual: 'video' },
          { field: 'header.x-tenant', expected: 'a', actual: null },
          { field: 'model', expected: 'gpt-z', actual: null },
        ],
      ],
    ]);
    const tooMany = await verify({ match: { group: 'chat' }, count: { at_most: 1 } });
    expect(tooMany.statusCode).toBe(409);
    // the value a credential header was expected to have is never echoed
    const secret = await verify({
      match: { group: 'chat', header: { 'x-api-key': 'expected-secret' } },
      count: { exactly: 1 },
    });
    expect(secret.body).not.toContain('expected-secret');
    expect(secret.json().near_misses[0].differences).toEqual([
      { field: 'header.x-api-key', expected: '[REDACTED]', actual: null },
    ]);
    expect(tooMany.json().error.message).toBe('Expected at most 1 matching request(s), found 2.');
  });

  it('sees only its own session when the call carries the header', async () => {
    t = await buildTestApp();
    await ask('mine', 'm', { headers: { 'x-emulator-session': 'a' } });
    await ask('theirs', 'm', { headers: { 'x-emulator-session': 'b' } });
    const res = await verify(
      { match: { group: 'chat' }, count: { exactly: 1 } },
      { 'x-emulator-session': 'a' },
    );
    expect(res.json()).toEqual({ status: 'ok', matched: 1 });
  });
});

describe('GET /_emulator/journal/wait', () => {
  it('answers at once with a match already there after `since`', async () => {
    t = await buildTestApp();
    await ask('early');
    const res = await t.inject({ url: `/_emulator/journal/wait?group=chat&since=${T0}` });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: 'req_1', group: 'chat' });
  });

  it('does not answer at once with an entry of another session (query or header)', async () => {
    const timers = manualTimers();
    t = await buildTestApp({}, { ...testDeps(), setTimer: timers.setTimer });
    await t.inject({
      url: '/v1/models',
      headers: { authorization: 'Bearer k', 'x-emulator-session': 'sessA' },
    });
    const byQuery = t.inject({
      url: '/_emulator/journal/wait?session=sessB&path=/v1/models&timeout_ms=1000',
    });
    const byHeader = t.inject({
      url: '/_emulator/journal/wait?path=/v1/models&timeout_ms=1000',
      headers: { 'x-emulator-session': 'sessB' },
    });
    await armed(timers, 2);
    // both are still waiting: sessA's entry is not theirs
    expect(timers.due.filter((d) => d.ms === 1000 && !d.cancelled)).toHaveLength(2);
    timers.fireAll();
    expect((await byQuery).statusCode).toBe(408);
    expect((await byHeader).statusCode).toBe(408);
    // ... while sessA's own wait (query or header) finds it at once
    const own = await t.inject({ url: '/_emulator/journal/wait?session=sessA&path=/v1/models' });
    expect(own.json()).toMatchObject({ id: 'req_1', session: 'sessA', url: '/v1/models' });
    const ownByHeader = await t.inject({
      url: '/_emulator/journal/wait?path=/v1/models',
      headers: { 'x-emulator-session': 'sessA' },
    });
    expect(ownByHeader.json()).toMatchObject({ id: 'req_1', session: 'sessA' });
  });

  it('does not answer at once with an entry from before `since`', async () => {
    const timers = manualTimers();
    t = await buildTestApp({}, { ...testDeps(), setTimer: timers.setTimer });
    await ask('early');
    const waiting = t.inject({
      url: `/_emulator/journal/wait?group=chat&since=${T0 + 1}&timeout_ms=1000`,
    });
    await armed(timers, 1);
    expect(timers.due.filter((d) => d.ms === 1000 && !d.cancelled)).toHaveLength(1);
    // the next one, received after `since`, ends the wait
    t.deps.clock.advance(1);
    await ask('late');
    const res = await waiting;
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: 'req_3', at: T0 + 1 }); // req_2: the wait itself
    const far = t.inject({
      url: '/_emulator/journal/wait?path=/v1/chat/completions&since=99999999999999&timeout_ms=1000',
    });
    await armed(timers, 2);
    timers.fireAll();
    expect((await far).statusCode).toBe(408);
  });

  it('waits for the first match to arrive, then answers 200 with it', async () => {
    const timers = manualTimers();
    t = await buildTestApp({}, { ...testDeps(), setTimer: timers.setTimer });
    await ask('not this one', 'other');
    const waiting = t.inject({ url: '/_emulator/journal/wait?model=wanted&timeout_ms=5000' });
    await armed(timers, 1);
    await ask('this one', 'wanted');
    const res = await waiting;
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ id: 'req_3', model: 'wanted' }); // req_2: the wait itself
    // its timer was cancelled
    expect(timers.due.find((d) => d.ms === 5000)?.cancelled).toBe(true);
  });

  it('answers 408 when timeout_ms passes', async () => {
    const timers = manualTimers();
    t = await buildTestApp({}, { ...testDeps(), setTimer: timers.setTimer });
    const waiting = t.inject({ url: '/_emulator/journal/wait?group=video&timeout_ms=250' });
    await armed(timers, 1);
    expect(timers.due.map((d) => d.ms)).toContain(250);
    timers.fireAll();
    const res = await waiting;
    expect(res.statusCode).toBe(408);
    expect(res.json()).toEqual({
      error: { type: 'timeout', message: 'No matching request within 250 ms.' },
    });
    const tooLong = await t.inject({ url: '/_emulator/journal/wait?timeout_ms=120001' });
    expect(tooLong.statusCode).toBe(400);
    expect(tooLong.json().error.message).toContain('timeout_ms');
  });

  it(`holds at most ${MAX_JOURNAL_WAITS} waits; a caller that leaves frees its place`, async () => {
    const timers = manualTimers();
    const store = new Journal(10, (key) => key);
    const filter = store.compile({ model: 'never' });
    const leave = new AbortController();
    const waits = Array.from({ length: MAX_JOURNAL_WAITS }, () =>
      store.wait(filter, 1000, timers.setTimer, leave.signal),
    );
    expect(waits.every((w) => w instanceof Promise)).toBe(true);
    expect(store.wait(filter, 1000, timers.setTimer, new AbortController().signal)).toBe('busy');
    leave.abort();
    expect(await Promise.all(waits)).toEqual(Array(MAX_JOURNAL_WAITS).fill(undefined));
    expect(store.wait(filter, 1000, timers.setTimer, new AbortController().signal)).toBeInstanceOf(
      Promise,
    );
  });
});

describe('live journal watchers', () => {
  it(`are bounded at ${MAX_JOURNAL_WATCHERS}; one that stops frees its place`, () => {
    const store = new Journal(10, (key) => key);
    const stops = Array.from({ length: MAX_JOURNAL_WATCHERS }, () =>
      store.watch(
        () => {},
        () => {},
      ),
    );
    expect(stops.every((stop) => typeof stop === 'function')).toBe(true);
    expect(
      store.watch(
        () => {},
        () => {},
      ),
    ).toBeUndefined();
    (stops[0] as () => void)();
    expect(
      store.watch(
        () => {},
        () => {},
      ),
    ).toBeTypeOf('function');
  });

  it('are ended when the journal closes (shutdown), and none starts after', () => {
    const store = new Journal(10, (key) => key);
    const ended: number[] = [];
    store.watch(
      () => {},
      () => ended.push(1),
    );
    store.watch(
      () => {},
      () => ended.push(2),
    );
    store.close();
    expect(ended).toEqual([1, 2]);
    expect(
      store.watch(
        () => {},
        () => {},
      ),
    ).toBe('closed');
  });
});
