import { afterEach, describe, expect, it } from 'vitest';
import { RESETTABLE } from '../../src/control/health.js';
import { redactUrl } from '../../src/platform/secrets.js';
import { buildTestApp, T0, type TestApp, testDeps } from '../helpers/app.js';

let t: TestApp;
afterEach(() => t.app.close());

const chat = (content = 'hi', key = 'secret-key-1') =>
  t.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { authorization: `Bearer ${key}` },
    payload: { model: 'm', messages: [{ role: 'user', content }] },
  });

describe('/_emulator control surface', () => {
  it('reports health', async () => {
    t = await buildTestApp();
    const res = await t.inject({ url: '/_emulator/health' });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ status: 'ok' });
  });

  it('shows and advances the clock', async () => {
    t = await buildTestApp();
    expect((await t.inject({ url: '/_emulator/clock' })).json()).toEqual({ now: T0, offset_ms: 0 });
    const res = await t.inject({
      method: 'POST',
      url: '/_emulator/clock/advance',
      payload: { ms: 90_000 },
    });
    expect(res.json()).toEqual({ now: T0 + 90_000, offset_ms: 90_000 });
    expect((await t.inject({ url: '/_emulator/clock' })).json()).toEqual({
      now: T0 + 90_000,
      offset_ms: 90_000,
    });
  });

  it('refuses a bad advance body naming the field', async () => {
    t = await buildTestApp();
    for (const [payload, message] of [
      [{ ms: -1 }, 'ms must be greater than or equal to 0'],
      [{ ms: '10' }, 'ms must be an integer'],
      [{}, 'ms is required'],
      [{ ms: 1, extra: true }, 'extra is not a permitted field'],
    ] as const) {
      const res = await t.inject({ method: 'POST', url: '/_emulator/clock/advance', payload });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: { type: 'invalid_request_error', message } });
    }
  });

  it('journals gateway requests with keys redacted, oldest first', async () => {
    t = await buildTestApp();
    await chat('first');
    await t.inject({ method: 'POST', url: '/v1/chat/completions', payload: {} });
    await t.inject({ url: '/_emulator/health' });
    const res = await t.inject({ url: '/_emulator/requests' });
    const { requests } = res.json();
    expect(requests).toHaveLength(2);
    expect(requests[0]).toEqual({
      id: 'req_1',
      group: 'chat',
      session: 'default',
      key_hash: expect.stringMatching(/^[\w-]{12}$/),
      model: 'm',
      source: 'emulator',
      at: T0,
      method: 'POST',
      url: '/v1/chat/completions',
      status: 200,
      duration_ms: expect.any(Number),
      headers: {
        authorization: '[REDACTED]',
        'content-length': expect.any(String),
        'content-type': 'application/json',
        host: 'localhost:80',
        'user-agent': 'lightMyRequest',
      },
      body: { model: 'm', messages: [{ role: 'user', content: 'first' }] },
      body_truncated: false,
      fault: null,
      aborted: false,
      bytes_sent: null,
    });
    expect(requests[1]).toMatchObject({ id: 'req_2', status: 401, body: {} });
    expect(res.body).not.toContain('secret-key-1');
  });

  it('keeps only the newest JOURNAL_LIMIT entries and empties on DELETE', async () => {
    t = await buildTestApp({ journalLimit: 3 });
    for (const content of ['a', 'b', 'c', 'd', 'e']) await chat(content);
    const bodies = (await t.inject({ url: '/_emulator/requests' }))
      .json()
      .requests.map(
        (r: { body: { messages: Array<{ content: string }> } }) => r.body.messages[0]?.content,
      );
    expect(bodies).toEqual(['c', 'd', 'e']);
    const del = await t.inject({ method: 'DELETE', url: '/_emulator/requests' });
    expect(del.json()).toEqual({ status: 'ok' });
    expect((await t.inject({ url: '/_emulator/requests' })).json()).toEqual({ requests: [] });
  });

  it('truncates large bodies in the journal', async () => {
    t = await buildTestApp();
    await chat('y'.repeat(20_000));
    const [entry] = (await t.inject({ url: '/_emulator/requests' })).json().requests;
    expect(entry.body_truncated).toBe(true);
    expect(entry.body).toHaveLength(8192);
  });

  it('does not keep large bodies alive: only an 8 KiB copy of each', async () => {
    // One process in memory, where the journal's copies live on its heap (shared, they live in
    // the store, made by the same Journal.record); three apps' heaps would blur the measure.
    t = await buildTestApp({ logLevel: 'silent' }, testDeps(), false);
    const gc = (globalThis as { gc?: () => void }).gc as () => void;
    const big = JSON.stringify({
      model: 'm',
      messages: [{ role: 'user', content: 'x'.repeat(10_000_000) }],
    });
    gc();
    const before = process.memoryUsage().heapUsed;
    for (let i = 0; i < 8; i++) {
      await t.inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
        payload: big,
      });
    }
    gc();
    const grown = process.memoryUsage().heapUsed - before;
    // Eight 10 MB bodies would be 80 MB (160 MB as UTF-16) if the journal held them.
    expect(grown).toBeLessThan(20_000_000);
    expect((await t.inject({ url: '/_emulator/requests' })).json().requests).toHaveLength(8);
  });

  it('redacts credentials in query strings and in other key headers', async () => {
    t = await buildTestApp();
    await t.inject({
      method: 'POST',
      url: '/v1/chat/completions?api-version=2024-10-21&api-key=azure-secret&key=k2-secret',
      headers: {
        authorization: 'Bearer k',
        'api-key': 'azure-header-secret',
        'x-goog-api-key': 'goog-secret',
      },
      payload: { model: 'm', messages: [{ role: 'user', content: 'x' }] },
    });
    const [entry] = (await t.inject({ url: '/_emulator/requests' })).json().requests;
    expect(entry.url).toBe(
      '/v1/chat/completions?api-version=2024-10-21&api-key=[REDACTED]&key=[REDACTED]',
    );
    expect(entry.headers['api-key']).toBe('[REDACTED]');
    expect(entry.headers['x-goog-api-key']).toBe('[REDACTED]');
    const everything = JSON.stringify(entry) + t.deps.logs.join('');
    for (const secret of ['azure-secret', 'k2-secret', 'azure-header-secret', 'goog-secret']) {
      expect(everything).not.toContain(secret);
    }
  });

  it('redacts every credential the query string can carry, in the journal and the log', async () => {
    t = await buildTestApp({ adminToken: 'adm-secret' });
    const query =
      'x-api-key=s1&Authorization=Bearer%20s2&subscription-key=s3&x-emulator-admin-token=s4' +
      '&X%2DAPI%2DKEY=s5&Ocp-Apim-Subscription-Key=s6&access_token=s7&anthropic-api-key=s8' +
      '&subscriptionkey=t1&AccessToken=t2&clientsecret=t3&sig=t4&credentials=t5&key[]=t6' +
      '&data[apikey]=t7&pwd=t8&jwt=t9&x-api-key-2=u1&private_key_id=u2&passwd=u3&key2=v1' +
      '&token_1=v2&passphrase=v3&token%00=v4&token;=v5&token%E2%80%8B=v6&x-secret-1=v7&q=kept';
    await t.inject({
      method: 'POST',
      url: `/messages-api/v1/messages?${query}`,
      headers: { 'x-api-key': 'k', 'anthropic-version': '2023-06-01' },
      payload: { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'x' }] },
    });
    await t.inject({ url: '/_emulator/clock?x-emulator-admin-token=s9' });
    const [entry] = (
      await t.inject({
        url: '/_emulator/requests',
        headers: { 'x-emulator-admin-token': 'adm-secret' },
      })
    ).json().requests;
    expect(entry.url).toBe(
      '/messages-api/v1/messages?x-api-key=[REDACTED]&Authorization=[REDACTED]' +
        '&subscription-key=[REDACTED]&x-emulator-admin-token=[REDACTED]&X%2DAPI%2DKEY=[REDACTED]' +
        '&Ocp-Apim-Subscription-Key=[REDACTED]&access_token=[REDACTED]' +
        '&anthropic-api-key=[REDACTED]&subscriptionkey=[REDACTED]&AccessToken=[REDACTED]' +
        '&clientsecret=[REDACTED]&sig=[REDACTED]&credentials=[REDACTED]&key[]=[REDACTED]' +
        '&data[apikey]=[REDACTED]&pwd=[REDACTED]&jwt=[REDACTED]&x-api-key-2=[REDACTED]' +
        '&private_key_id=[REDACTED]&passwd=[REDACTED]&key2=[REDACTED]&token_1=[REDACTED]' +
        '&passphrase=[REDACTED]&token%00=[REDACTED]&token;=[REDACTED]' +
        '&token%E2%80%8B=[REDACTED]&x-secret-1=[REDACTED]&q=kept',
    );
    const everything = JSON.stringify(entry) + t.deps.logs.join('');
    const secrets = ['=s1', 's2', '=s3', '=s4', '=s5', '=s6', '=s7', '=s8', '=s9'];
    const more = [
      '=t1',
      '=t2',
      '=t3',
      '=t4',
      '=t5',
      '=t6',
      '=t7',
      '=t8',
      '=t9',
      '=u1',
      '=u2',
      '=u3',
      '=v1',
      '=v2',
      '=v3',
      '=v4',
      '=v5',
      '=v6',
      '=v7',
    ];
    for (const secret of [...secrets, ...more]) {
      expect(everything).not.toContain(secret);
    }
    expect(t.deps.logs.join('')).toContain('/_emulator/clock?x-emulator-admin-token=[REDACTED]');
    // a raw `#` (which inject drops, a raw client may send) hides nothing behind it
    expect(redactUrl('/v1/x?q=1#&api-key=s10&b=2')).toBe('/v1/x?q=1#&api-key=[REDACTED]&b=2');
  });

  it('redacts credential headers by their name, and a URL echoed in a 404', async () => {
    t = await buildTestApp({ logLevel: 'debug' });
    const secrets = {
      'ocp-apim-subscription-key': 'h1',
      'x-auth-token': 'h2',
      api_key: 'h3',
      'x-amz-security-token': 'h4',
      'x-secret-1': 'h5',
      authorization2: 'h6',
      'x-client-cert': 'h7',
    };
    // names that hold such a word but not last are a client's own (kept, so journal filters work)
    const harmless = {
      'x-auth-mode': 'oauth',
      'x-key-id': 'k1',
      'x-token-budget': '100',
      'x-cookie-consent': 'yes',
    };
    await t.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { authorization: 'Bearer k', ...secrets, ...harmless },
      payload: { model: 'm', messages: [{ role: 'user', content: 'x' }] },
    });
    const missing = await t.inject({
      method: 'POST',
      url: '/videogen/v1/nope?api-key=q1&access_token=q2',
      headers: { authorization: 'Bearer k' },
      payload: {},
    });
    expect(missing.json().message).toBe(
      'Invalid request method or path: POST /videogen/v1/nope?api-key=[REDACTED]&access_token=[REDACTED]',
    );
    const requests = (await t.inject({ url: '/_emulator/journal' })).json().requests;
    expect(requests[0].headers).toMatchObject({
      ...Object.fromEntries(Object.keys(secrets).map((name) => [name, '[REDACTED]'])),
      ...harmless,
    });
    const detail = await t.inject({ url: `/_emulator/journal/${requests[1].id}` });
    const everything = JSON.stringify(requests) + detail.body + t.deps.logs.join('');
    for (const secret of ['h1', 'h2', 'h3', 'h4', '=q1', '=q2']) {
      expect(everything).not.toContain(secret);
    }
  });

  it('resets the journal and the clock', async () => {
    t = await buildTestApp();
    await chat();
    await t.inject({ method: 'POST', url: '/_emulator/clock/advance', payload: { ms: 5000 } });
    expect((await t.inject({ method: 'POST', url: '/_emulator/reset' })).json()).toEqual({
      status: 'ok',
    });
    expect((await t.inject({ url: '/_emulator/requests' })).json()).toEqual({ requests: [] });
    expect((await t.inject({ url: '/_emulator/clock' })).json()).toEqual({ now: T0, offset_ms: 0 });
  });

  it('resets only the parts named in ?only=, and refuses an unknown part', async () => {
    t = await buildTestApp();
    await chat();
    await t.inject({
      method: 'POST',
      url: '/_emulator/faults',
      payload: { path: '/nowhere', status: 500 },
    });
    await t.inject({ method: 'POST', url: '/_emulator/clock/advance', payload: { ms: 5000 } });
    const partial = await t.inject({ method: 'POST', url: '/_emulator/reset?only=faults,clock' });
    expect(partial.json()).toEqual({ status: 'ok' });
    expect((await t.inject({ url: '/_emulator/faults' })).json()).toEqual({ faults: [] });
    expect((await t.inject({ url: '/_emulator/clock' })).json()).toEqual({ now: T0, offset_ms: 0 });
    expect((await t.inject({ url: '/_emulator/requests' })).json().requests).toHaveLength(1);
    const bad = await t.inject({ method: 'POST', url: '/_emulator/reset?only=faults,everything' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.message).toContain('only');
    for (const part of RESETTABLE) {
      const res = await t.inject({ method: 'POST', url: `/_emulator/reset?only=${part}` });
      expect(res.statusCode, part).toBe(200);
    }
    expect((await t.inject({ url: '/_emulator/requests' })).json().requests).toEqual([]);
  });

  it('requires the admin token on every route but health, ready and the OpenAPI document when one is set', async () => {
    t = await buildTestApp({ adminToken: 'letmein' });
    expect((await t.inject({ url: '/_emulator/health' })).statusCode).toBe(200);
    expect((await t.inject({ url: '/_emulator/openapi.json' })).statusCode).toBe(200);
    for (const [method, url] of [
      ['POST', '/_emulator/reset'],
      ['GET', '/_emulator/clock'],
      ['POST', '/_emulator/clock/advance'],
      ['GET', '/_emulator/requests'],
      ['DELETE', '/_emulator/requests'],
    ] as const) {
      const denied = await t.inject({ method, url, payload: { ms: 1 } });
      expect(denied.statusCode).toBe(401);
      expect(denied.json()).toEqual({
        error: {
          type: 'authentication_error',
          message: 'x-emulator-admin-token header is missing or wrong.',
        },
      });
      const allowed = await t.inject({
        method,
        url,
        headers: { 'x-emulator-admin-token': 'letmein' },
        payload: { ms: 1 },
      });
      expect(allowed.statusCode).toBe(200);
    }
    const requests = await t.inject({
      url: '/_emulator/requests',
      headers: { 'x-emulator-admin-token': 'letmein' },
    });
    expect(requests.body).not.toContain('letmein');
  });

  it('serves an OpenAPI document generated from the route schemas', async () => {
    t = await buildTestApp();
    const doc = (await t.inject({ url: '/_emulator/openapi.json' })).json();
    expect(doc.openapi).toMatch(/^3\./);
    const chatPost = doc.paths['/v1/chat/completions'].post;
    expect(chatPost.requestBody.content['application/json'].schema.required).toEqual([
      'model',
      'messages',
    ]);
    expect(Object.keys(chatPost.responses)).toEqual([
      ...['200', '400', '401', '413', '415', '429', '500'],
      ...['4XX', '5XX'],
    ]);
    expect(Object.keys(doc.paths)).toContain('/_emulator/clock/advance');
  });

  it('answers unknown control routes in its own shape', async () => {
    t = await buildTestApp();
    const res = await t.inject({ url: '/_emulator/nope' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      error: { type: 'not_found_error', message: 'No emulator route GET /_emulator/nope' },
    });
  });
});

describe('logging', () => {
  it('never writes API keys or the admin token to the log', async () => {
    t = await buildTestApp({ adminToken: 'admin-secret', logLevel: 'trace' });
    await chat('hello', 'sk-very-secret');
    await t.inject({
      method: 'POST',
      url: '/messages-api/v1/messages',
      headers: { 'x-api-key': 'sk-other-secret', 'msgapi-version': '2023-06-01' },
      payload: {},
    });
    await t.inject({
      url: '/_emulator/clock',
      headers: { 'x-emulator-admin-token': 'admin-secret' },
    });
    const log = t.deps.logs.join('');
    expect(log).toContain('request completed');
    expect(log).not.toContain('sk-very-secret');
    expect(log).not.toContain('sk-other-secret');
    expect(log).not.toContain('admin-secret');
  });

  it('logs why a request was refused at debug, not above', async () => {
    t = await buildTestApp({ logLevel: 'debug' });
    await t.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { authorization: 'Bearer k' },
      payload: { model: 'm', messages: [] },
    });
    const line = t.deps.logs.find((l) => l.includes('"request refused"')) ?? '';
    // the request id once: a JSON line with a key twice is refused by strict log readers
    expect(line.match(/"reqId"/g)).toEqual(['"reqId"']);
    const refused = JSON.parse(line);
    expect(refused).toMatchObject({
      level: 20,
      reqId: 'req_1',
      statusCode: 400,
      reason: expect.stringContaining('messages'),
    });
    await t.app.close();
    t = await buildTestApp({ logLevel: 'info' });
    await t.inject({ method: 'POST', url: '/v1/chat/completions', payload: {} });
    expect(t.deps.logs.join('')).not.toContain('request refused');
  });

  it('writes readable lines with LOG_FORMAT=pretty (pino-pretty), JSON lines by default', async () => {
    t = await buildTestApp({ logFormat: 'pretty' });
    await t.inject({ url: '/_emulator/health' });
    const pretty = t.deps.logs.join('');
    expect(pretty).toMatch(/WARN.*GATEWAY_API_KEYS is not set/);
    expect(pretty).toMatch(/INFO.*request completed/);
    expect(() => JSON.parse(t?.deps.logs[0] ?? '')).toThrow();
    await t.app.close();
    t = await buildTestApp();
    expect(JSON.parse(t.deps.logs[0] ?? '')).toMatchObject({ level: 40 });
  });

  it('warns at start when any key is accepted', async () => {
    t = await buildTestApp();
    expect(t.deps.logs.join('')).toContain('GATEWAY_API_KEYS is not set');
  });
});

describe('control calls that change state', () => {
  const stub = (session: string, reply: string) =>
    t.inject({
      method: 'POST',
      url: '/_emulator/replies',
      headers: { 'x-emulator-session': session },
      payload: { reply },
    });
  const stubs = async () =>
    (await t.inject({ url: '/_emulator/replies' }))
      .json()
      .replies.map((r: { session: string; reply: string }) => `${r.session}:${r.reply}`);

  it('refuse a query parameter they do not take (a mistyped `only` resets nothing)', async () => {
    t = await buildTestApp();
    await stub('a', 'kept');
    const calls: Array<[method: 'POST' | 'DELETE', url: string, payload?: object]> = [
      ['POST', '/_emulator/reset?onyl=faults'],
      ['POST', '/_emulator/reset?sesion=a'],
      ['DELETE', '/_emulator/faults?session=a&x=1'],
      ['POST', '/_emulator/clock/advance?ms=5', { ms: 1 }],
      ['DELETE', '/_emulator/replies/1?force=1'],
    ];
    for (const [method, url, payload] of calls) {
      const res = await t.inject({ method, url, ...(payload ? { payload } : {}) });
      expect(res.statusCode, url).toBe(400);
      expect(res.json().error.type).toBe('invalid_request_error');
      expect(res.json().error.message).toMatch(
        /^(onyl|sesion|x|ms|force) is not a permitted field$/,
      );
    }
    expect(await stubs()).toEqual(['a:kept']);
    expect((await t.inject({ url: '/_emulator/clock' })).json()).toEqual({ now: T0, offset_ms: 0 });
  });

  it('empty one session with `?session=` (stubs, faults, the journal), as the header does', async () => {
    t = await buildTestApp();
    await stub('a', 'one');
    await stub('b', 'two');
    for (const session of ['a', 'b']) {
      await t.inject({
        method: 'POST',
        url: '/_emulator/faults',
        headers: { 'x-emulator-session': session },
        payload: { path: '/v1/chat/completions', status: 503 },
      });
      await chat(`from ${session}`);
    }
    expect(
      (await t.inject({ method: 'DELETE', url: '/_emulator/replies?session=a' })).statusCode,
    ).toBe(200);
    expect(await stubs()).toEqual(['b:two']);
    await t.inject({ method: 'DELETE', url: '/_emulator/faults?session=a' });
    const faults = (await t.inject({ url: '/_emulator/faults' })).json().faults;
    expect(faults.map((f: { session: string }) => f.session)).toEqual(['b']);
    const sessions = async () =>
      (await t.inject({ url: '/_emulator/journal' }))
        .json()
        .requests.map((e: { session: string }) => e.session);
    const before = await sessions();
    await t.inject({ method: 'DELETE', url: '/_emulator/journal?session=nobody' });
    expect(await sessions()).toEqual(before);
    await t.inject({ method: 'DELETE', url: '/_emulator/journal?session=default' });
    expect(await sessions()).toEqual(before.filter((s: string) => s !== 'default'));
    // the query and the header must agree
    const both = await t.inject({
      method: 'DELETE',
      url: '/_emulator/replies?session=a',
      headers: { 'x-emulator-session': 'b' },
    });
    expect(both.statusCode).toBe(400);
    expect(await stubs()).toEqual(['b:two']);
  });

  it('refuse a number past the safe integers in a journal query (`since=1e400`) and an id', async () => {
    t = await buildTestApp();
    expect((await t.inject({ url: '/_emulator/journal?since=1e400' })).statusCode).toBe(400);
    expect((await t.inject({ method: 'DELETE', url: '/_emulator/faults/1e400' })).statusCode).toBe(
      400,
    );
  });
});
