import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator.js';
import { Faults, MAX_HELD, MAX_HELD_BYTES } from '../../src/harness/faults.js';
import { buildTestApp, handTimerDeps, parseSse, type TestApp } from '../helpers/app.js';

const CHAT = {
  url: '/v1/chat/completions',
  headers: { authorization: 'Bearer k' },
  payload: { model: 'm', messages: [{ role: 'user', content: 'hello' }] },
};
const MESSAGES = {
  url: '/messages-api/v1/messages',
  headers: { 'x-api-key': 'k', 'msgapi-version': '2023-06-01' },
  payload: { model: 'm', max_tokens: 50, messages: [{ role: 'user', content: 'hello' }] },
};
const VIDEO = {
  url: '/videogen/v1/videos/text2video',
  headers: { authorization: 'Bearer k' },
  payload: { model_name: 'vid-v1-6', prompt: 'a cat', duration: '5' },
};

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const send = (
  target: typeof CHAT | typeof MESSAGES | typeof VIDEO,
  extra: { headers?: Record<string, string>; payload?: object } = {},
) =>
  t.inject({
    method: 'POST',
    url: target.url,
    headers: { ...target.headers, ...extra.headers },
    payload: extra.payload ?? target.payload,
  });
const addRule = (rule: object) =>
  t.inject({ method: 'POST', url: '/_emulator/faults', payload: rule });

describe('fault header: each group fails in its own shape', () => {
  it.each([
    [
      429,
      {
        error: {
          message: expect.stringContaining('Rate limit'),
          type: 'requests',
          param: null,
          code: 'rate_limit_exceeded',
        },
      },
    ],
    [
      500,
      {
        error: {
          message: 'The server had an error while processing your request.',
          type: 'server_error',
          param: null,
          code: null,
        },
      },
    ],
    [
      503,
      {
        error: {
          message: expect.any(String),
          type: 'service_unavailable_error',
          param: null,
          code: 'server_is_overloaded',
        },
      },
    ],
  ])('chat %i', async (status, body) => {
    const res = await send(CHAT, { headers: { 'x-emulator-fault': String(status) } });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toEqual(body);
    if (status !== 500) {
      expect(res.headers['retry-after']).toBe('1');
      expect(res.headers['retry-after-ms']).toBe('1000');
    } else {
      expect(res.headers['retry-after']).toBeUndefined();
    }
  });

  it.each([
    [429, 'rate_limit_error'],
    [500, 'api_error'],
    [529, 'overloaded_error'],
    [504, 'timeout_error'],
    [401, 'authentication_error'],
  ])('messages %i is %s', async (status, type) => {
    const res = await send(MESSAGES, { headers: { 'x-emulator-fault': String(status) } });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toEqual({
      type: 'error',
      error: { type, message: expect.any(String) },
      request_id: res.headers['request-id'],
    });
    expect(res.headers['retry-after']).toBe([429, 529].includes(status) ? '1' : undefined);
  });

  it('messages 529 says "Overloaded" as upstream does', async () => {
    const res = await send(MESSAGES, { headers: { 'x-emulator-fault': '529' } });
    expect(res.json().error).toEqual({ type: 'overloaded_error', message: 'Overloaded' });
  });

  it.each([
    [429, 1302],
    [500, 5000],
    [503, 5001],
    [504, 5002],
  ])('video %i is code %i', async (status, code) => {
    const res = await send(VIDEO, { headers: { 'x-emulator-fault': String(status) } });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toEqual({
      code,
      message: expect.any(String),
      request_id: expect.any(String),
    });
    expect((await t.inject({ url: '/_emulator/tasks' })).json().size).toBe(0);
  });

  it('strike before validation: a faulted request with a bad body still gets the fault', async () => {
    const res = await send(MESSAGES, {
      headers: { 'x-emulator-fault': '529' },
      payload: { model: 'm' },
    });
    expect(res.statusCode).toBe(529);
    await addRule({ path: '/v1/chat/completions', status: 503, times: 1 });
    expect((await send(CHAT, { payload: { nonsense: true } })).statusCode).toBe(503);
  });

  it('refuses a malformed fault header', async () => {
    const res = await send(CHAT, { headers: { 'x-emulator-fault': 'explode' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toBe(
      'x-emulator-fault must be a status 400-599, "disconnect", "stream_error", "hang" or "delay=<ms>" (at most 600000)',
    );
  });
});

describe('fault rules', () => {
  it('fire `times` times on matching requests, then are spent', async () => {
    const rule = await addRule({
      path: '/v1/chat/completions',
      status: 429,
      times: 2,
      retry_after_s: 7,
    });
    expect(rule.json()).toEqual({
      id: 1,
      session: 'default',
      path: '/v1/chat/completions',
      method: null,
      match: { path: '/v1/chat/completions' },
      kind: 'error',
      status: 429,
      times: 2,
      remaining: 2,
      after_events: 0,
      after_bytes: null,
      retry_after_s: 7,
      delay_ms: null,
      probability: null,
      seed: null,
      fired: 0,
    });
    const first = await send(CHAT);
    expect(first.statusCode).toBe(429);
    expect(first.headers['retry-after']).toBe('7');
    expect((await t.inject({ url: '/_emulator/faults' })).json().faults).toMatchObject([
      { id: 1, remaining: 1, fired: 1 },
    ]);
    expect((await send(CHAT)).statusCode).toBe(429);
    expect((await send(CHAT)).statusCode).toBe(200);
    expect((await t.inject({ url: '/_emulator/faults' })).json()).toEqual({ faults: [] });
  });

  it('match by method and by path prefix, and last until deleted without `times`', async () => {
    await addRule({ path: '/videogen/*', method: 'get', status: 503 });
    expect((await send(VIDEO)).statusCode).toBe(200);
    const get = await t.inject({
      url: '/videogen/v1/videos/text2video/1000001',
      headers: VIDEO.headers,
    });
    expect(get.statusCode).toBe(503);
    expect(get.json().code).toBe(5001);
    expect(
      (await t.inject({ url: '/videogen/v1/videos/text2video', headers: VIDEO.headers }))
        .statusCode,
    ).toBe(503);
    await t.inject({ method: 'DELETE', url: '/_emulator/faults' });
    expect(
      (await t.inject({ url: '/videogen/v1/videos/text2video', headers: VIDEO.headers }))
        .statusCode,
    ).toBe(200);
  });

  it('are validated', async () => {
    for (const [rule, message] of [
      [{ path: '/v1/chat/completions' }, 'status is required for kind "error"'],
      [{ path: 'v1', status: 500 }, 'path has an invalid format'],
      [{ path: '/x', status: 200 }, 'status must be greater than or equal to 400'],
      [
        { path: '/x', status: 500, kind: 'explode' },
        'kind must be one of "error", "disconnect", "stream_error", "delay", "hang"',
      ],
      [{ path: '/x', status: 500, times: 0 }, 'times must be greater than or equal to 1'],
      [
        { path: '/x', status: 500, times: 1_000_001 },
        'times must be less than or equal to 1000000',
      ],
      [
        { path: '/x', status: 500, after_events: 1e7 },
        'after_events must be less than or equal to 1000000',
      ],
      [{ path: `/${'x'.repeat(2048)}`, status: 500 }, 'path must have at most 2048 characters'],
      [{ path: '/x', status: 500, method: 'G'.repeat(17) }, 'method has an invalid format'],
    ] as const) {
      const res = await addRule(rule);
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({ error: { type: 'invalid_request_error', message } });
    }
  });

  it('refuse a number too large for a double (times: 1e309) and keep listing', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/_emulator/faults',
      headers: { 'content-type': 'application/json' },
      payload: '{"path":"/v1/chat/completions","status":500,"times":1e309}',
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: {
        type: 'invalid_request_error',
        message: 'times must be a finite number (got a number too large)',
      },
    });
    const list = await t.inject({ url: '/_emulator/faults' });
    expect({ status: list.statusCode, body: list.json() }).toEqual({
      status: 200,
      body: { faults: [] },
    });
  });

  it('show in the journal, which fault and which rule', async () => {
    await addRule({ path: '/v1/chat/completions', status: 500, times: 1 });
    await send(CHAT);
    await send(MESSAGES, { headers: { 'x-emulator-fault': '529' } });
    await send(CHAT);
    const journal = (await t.inject({ url: '/_emulator/requests' })).json().requests;
    expect(
      journal.map((r: { status: number; fault: string | null }) => [r.status, r.fault]),
    ).toEqual([
      [500, 'rule 1: error 500'],
      [529, 'header x-emulator-fault: 529'],
      [200, null],
    ]);
  });

  it('are cleared by reset', async () => {
    await addRule({ path: '/v1/chat/completions', status: 500 });
    await t.inject({ method: 'POST', url: '/_emulator/reset' });
    expect((await send(CHAT)).statusCode).toBe(200);
  });
});

describe('stream_error', () => {
  it('ends a messages stream with an error event after `after_events` frames, no message_stop', async () => {
    await addRule({
      path: '/messages-api/v1/messages',
      kind: 'stream_error',
      after_events: 3,
      times: 1,
    });
    // A plain request does not use up a stream rule.
    expect((await send(MESSAGES)).statusCode).toBe(200);
    const res = await send(MESSAGES, { payload: { ...MESSAGES.payload, stream: true } });
    expect(res.statusCode).toBe(200);
    const events = parseSse(res.body);
    expect(events.map((e) => e.event)).toEqual([
      'message_start',
      'content_block_start',
      'ping',
      'error',
    ]);
    expect(events.at(-1)).toEqual({
      event: 'error',
      data: { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } },
    });
    const journal = (await t.inject({ url: '/_emulator/requests' })).json().requests;
    expect(journal.at(-1).fault).toBe('rule 1: stream_error');
  });

  it('ends a chat stream with an error frame and no [DONE]', async () => {
    const res = await send(CHAT, {
      headers: { 'x-emulator-fault': 'stream_error' },
      payload: { ...CHAT.payload, stream: true },
    });
    const frames = parseSse(res.body);
    expect(frames).toEqual([
      {
        data: {
          error: {
            message: 'The server had an error while processing your request.',
            type: 'server_error',
            param: null,
            code: null,
          },
        },
      },
    ]);
  });

  it('counts after_events in single events, whatever the batching', async () => {
    await addRule({ path: '/messages-api/v1/messages', kind: 'stream_error', after_events: 5 });
    const body = { ...MESSAGES.payload, max_tokens: 500, stream: true };
    const plain = parseSse((await send(MESSAGES, { payload: body })).body);
    const paced = parseSse(
      (await send(MESSAGES, { payload: body, headers: { 'x-emulator-stream-delay-ms': '1' } }))
        .body,
    );
    for (const events of [plain, paced]) {
      expect(events).toHaveLength(6);
      expect(events.slice(3, 5).map((e) => e.event)).toEqual([
        'content_block_delta',
        'content_block_delta',
      ]);
      expect(events[5]?.event).toBe('error');
    }
  });

  it('never sends the closing event, however large after_events is', async () => {
    await addRule({
      path: '/messages-api/v1/messages',
      kind: 'stream_error',
      after_events: 1000,
      times: 1,
    });
    const events = parseSse(
      (await send(MESSAGES, { payload: { ...MESSAGES.payload, stream: true } })).body,
    );
    expect(events.map((e) => e.event).slice(-3)).toEqual([
      'content_block_stop',
      'message_delta',
      'error',
    ]);
    await addRule({
      path: '/v1/chat/completions',
      kind: 'stream_error',
      after_events: 1000,
      times: 1,
    });
    const frames = parseSse(
      (await send(CHAT, { payload: { ...CHAT.payload, stream: true } })).body,
    );
    expect(frames.map((f) => f.data)).not.toContain('[DONE]');
    expect(frames.at(-1)?.data).toMatchObject({ error: { type: 'server_error' } });
    expect(frames.at(-2)?.data).toMatchObject({ choices: [{ finish_reason: 'stop' }] });
  });

  it('uses the rule status for the error type', async () => {
    await addRule({
      path: '/messages-api/v1/messages',
      kind: 'stream_error',
      status: 429,
      after_events: 1,
    });
    const res = await send(MESSAGES, { payload: { ...MESSAGES.payload, stream: true } });
    expect(parseSse(res.body)).toEqual([
      expect.objectContaining({ event: 'message_start' }),
      {
        event: 'error',
        data: { type: 'error', error: { type: 'rate_limit_error', message: expect.any(String) } },
      },
    ]);
  });

  it('on a plain request by header, fails it as the stream would have (529 / 500)', async () => {
    const messages = await send(MESSAGES, { headers: { 'x-emulator-fault': 'stream_error' } });
    expect(messages.statusCode).toBe(529);
    const chat = await send(CHAT, { headers: { 'x-emulator-fault': 'stream_error' } });
    expect(chat.statusCode).toBe(500);
  });
});

describe('disconnect', () => {
  let emulator: Emulator;
  afterEach(() => emulator?.close());

  it('destroys the connection without a response, and journals it', async () => {
    emulator = await startEmulator({ logLevel: 'silent' });
    const failure = await fetch(`${emulator.url}${CHAT.url}`, {
      method: 'POST',
      headers: {
        ...CHAT.headers,
        'content-type': 'application/json',
        'x-emulator-fault': 'disconnect',
      },
      body: JSON.stringify(CHAT.payload),
    }).catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(TypeError);
    expect(String((failure as { cause?: unknown }).cause)).toMatch(
      /other side closed|socket|terminated/i,
    );
    const journal = (await (await fetch(`${emulator.url}/_emulator/requests`)).json()) as {
      requests: unknown[];
    };
    expect(journal.requests).toMatchObject([
      { status: 0, fault: 'header x-emulator-fault: disconnect', url: '/v1/chat/completions' },
    ]);
    expect((await fetch(`${emulator.url}/_emulator/health`)).status).toBe(200);
  });
});

describe('delay and hang', () => {
  /** An app whose wall-clock timers the test fires by hand. */
  async function withTimers() {
    const { deps, timers } = handTimerDeps();
    await t.app.close();
    t = await buildTestApp({}, deps);
    return timers;
  }

  it('delay: the request waits delay_ms, then is answered as usual; the journal says so', async () => {
    const timers = await withTimers();
    const rule = await addRule({ path: '/v1/chat/completions', delay_ms: 1500, times: 1 });
    expect(rule.json()).toMatchObject({ kind: 'delay', delay_ms: 1500, status: null });
    let answered = false;
    const pending = send(CHAT).then((res) => {
      answered = true;
      return res;
    });
    await vi.waitFor(() => expect(timers.map((x) => x.ms)).toContain(1500));
    expect(answered).toBe(false);
    timers.find((x) => x.ms === 1500)?.fire();
    const res = await pending;
    expect(res.statusCode).toBe(200);
    expect(res.json().object).toBe('chat.completion');
    const [entry] = (await t.inject({ url: '/_emulator/requests' })).json().requests;
    expect(entry).toMatchObject({ status: 200, fault: 'rule 1: delay 1500 ms' });
  });

  it('delay by header: x-emulator-fault: delay=<ms>, bounded', async () => {
    const timers = await withTimers();
    const pending = send(MESSAGES, { headers: { 'x-emulator-fault': 'delay=250' } });
    await vi.waitFor(() => expect(timers.map((x) => x.ms)).toContain(250));
    timers.find((x) => x.ms === 250)?.fire();
    expect((await pending).statusCode).toBe(200);
    const tooLong = await send(CHAT, { headers: { 'x-emulator-fault': 'delay=600001' } });
    expect(tooLong.statusCode).toBe(400);
  });

  it('hang: no answer until the client leaves (journaled, status 0), bounded by a timer', async () => {
    const timers = await withTimers();
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const pending = fetch(`${address}/v1/chat/completions`, {
      method: 'POST',
      headers: { ...CHAT.headers, 'content-type': 'application/json', 'x-emulator-fault': 'hang' },
      body: JSON.stringify(CHAT.payload),
    }).catch((err: unknown) => err);
    await vi.waitFor(() => expect(timers.map((x) => x.ms)).toContain(600_000));
    // The bound passes: the connection is dropped without an answer.
    timers.find((x) => x.ms === 600_000)?.fire();
    expect(await pending).toBeInstanceOf(Error);
    await vi.waitFor(async () => {
      const [entry] = (await t.inject({ url: '/_emulator/requests' })).json().requests;
      expect(entry).toMatchObject({ status: 0, fault: 'header x-emulator-fault: hang' });
    });
  });

  it('delay: a client that leaves during the delay is journaled then (status 0), and no more is done', async () => {
    const timers = await withTimers();
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const gone = new AbortController();
    const pending = fetch(`${address}/v1/chat/completions`, {
      method: 'POST',
      headers: {
        ...CHAT.headers,
        'content-type': 'application/json',
        'x-emulator-fault': 'delay=900',
      },
      body: JSON.stringify(CHAT.payload),
      signal: gone.signal,
    }).catch((err: unknown) => err);
    await vi.waitFor(() => expect(timers.map((x) => x.ms)).toContain(900));
    gone.abort();
    expect(await pending).toBeInstanceOf(Error);
    await vi.waitFor(async () => {
      const { requests } = (await t.inject({ url: '/_emulator/requests' })).json();
      expect(requests).toHaveLength(1);
      expect(requests[0]).toMatchObject({
        status: 0,
        fault: 'header x-emulator-fault: delay=900',
      });
    });
    // Its timer was cancelled: the request does not go on.
    expect(timers.map((x) => x.ms)).not.toContain(900);
  });

  it(`hold at most ${MAX_HELD} delayed or hung requests at once; more get a 429 in the group's envelope`, async () => {
    const timers = await withTimers();
    // One process: the bound is each process's own (it holds the requests).
    const sendHere = (
      target: typeof CHAT | typeof MESSAGES,
      extra: { headers: Record<string, string> },
    ) =>
      t.app.inject({
        method: 'POST',
        url: target.url,
        headers: { ...target.headers, ...extra.headers },
        payload: target.payload,
      });
    const held = Array.from({ length: MAX_HELD }, (_, i) =>
      sendHere(i % 2 ? CHAT : MESSAGES, { headers: { 'x-emulator-fault': 'delay=700' } }),
    );
    await vi.waitFor(() => expect(timers.filter((x) => x.ms === 700)).toHaveLength(MAX_HELD));
    const over = await sendHere(CHAT, { headers: { 'x-emulator-fault': 'delay=700' } });
    expect(over.statusCode).toBe(429);
    expect(over.json().error).toMatchObject({
      message: `At most ${MAX_HELD} delayed or hung requests (${MAX_HELD_BYTES} bytes of delayed bodies, parsed) can be held at once.`,
      type: 'requests',
    });
    for (const timer of timers.splice(0)) timer.fire();
    expect(new Set((await Promise.all(held)).map((res) => res.statusCode))).toEqual(new Set([200]));
    // Their places are given back.
    const again = sendHere(CHAT, { headers: { 'x-emulator-fault': 'delay=700' } });
    await vi.waitFor(() => expect(timers.filter((x) => x.ms === 700)).toHaveLength(1));
    timers.find((x) => x.ms === 700)?.fire();
    expect((await again).statusCode).toBe(200);
  });

  it('count the bytes of the delayed bodies held, up to MAX_HELD_BYTES', () => {
    const faults = new Faults((key) => key);
    const first = faults.hold(MAX_HELD_BYTES - 10);
    expect(first).toBeTypeOf('function');
    expect(faults.hold(11)).toBeUndefined();
    const second = faults.hold(10);
    expect(second).toBeTypeOf('function');
    second?.();
    second?.(); // given back once only
    first?.();
    expect(faults.hold(MAX_HELD_BYTES)).toBeTypeOf('function');
    expect(faults.hold(1)).toBeUndefined();
  });

  it('are validated', async () => {
    expect((await addRule({ path: '/x', kind: 'delay' })).json()).toEqual({
      error: { type: 'invalid_request_error', message: 'delay_ms is required for kind "delay"' },
    });
    expect((await addRule({ path: '/x', status: 500, delay_ms: 5 })).json()).toEqual({
      error: {
        type: 'invalid_request_error',
        message: 'delay_ms is only for kind "delay" (not "error")',
      },
    });
  });
});

describe('fault rules: the shared match, probability and after_bytes', () => {
  it('match on group, model, key, header and a body JSON path (read once the body is)', async () => {
    await addRule({ match: { group: 'messages', model: 'm' }, status: 529 });
    await addRule({ match: { key: 'bad-key' }, status: 403 });
    await addRule({ match: { header: { 'x-tenant': 'slow' } }, status: 504 });
    await addRule({ match: { body: { '$.messages[0].content': 'boom' } }, status: 502 });
    await addRule({ match: { group: 'chat', prompt_regex: '^explode' }, status: 500 });
    expect((await send(CHAT)).statusCode).toBe(200);
    expect((await send(MESSAGES)).statusCode).toBe(529);
    expect(
      (await send(MESSAGES, { payload: { ...MESSAGES.payload, model: 'other' } })).statusCode,
    ).toBe(200);
    expect((await send(CHAT, { headers: { authorization: 'Bearer bad-key' } })).statusCode).toBe(
      403,
    );
    expect((await send(CHAT, { headers: { 'x-tenant': 'slow' } })).statusCode).toBe(504);
    const boom = { ...CHAT.payload, messages: [{ role: 'user', content: 'boom' }] };
    expect((await send(CHAT, { payload: boom })).statusCode).toBe(502);
    const explode = { ...CHAT.payload, messages: [{ role: 'user', content: 'explode now' }] };
    expect((await send(CHAT, { payload: explode })).statusCode).toBe(500);
    expect(
      (await send(VIDEO, { payload: { ...VIDEO.payload, prompt: 'explode' } })).statusCode,
    ).toBe(200);
    const listed = await t.inject({ url: '/_emulator/faults' });
    expect(listed.body).not.toContain('bad-key');
    expect(listed.json().faults[1].match).toEqual({ key: '[REDACTED]' });
  });

  it('never show the value a credential header must have', async () => {
    const header = { authorization: 'Bearer hdr-secret', 'x-auth-token': 'tok', 'x-tenant': 'a' };
    await addRule({ match: { header }, status: 403 });
    expect(
      (
        await send(CHAT, {
          headers: { authorization: 'Bearer hdr-secret', 'x-auth-token': 'tok', 'x-tenant': 'a' },
        })
      ).statusCode,
    ).toBe(403);
    const listed = await t.inject({ url: '/_emulator/faults' });
    expect(listed.body).not.toContain('hdr-secret');
    expect(listed.json().faults[0].match).toEqual({
      header: { authorization: '[REDACTED]', 'x-auth-token': '[REDACTED]', 'x-tenant': 'a' },
    });
  });

  it('read a body no schema checked without failing: a path no route has stays a 404, a large array no 500', async () => {
    await addRule({ match: { turn: 1 }, status: 418 });
    await addRule({ match: { body: { '$.x[*]': 1 } }, status: 409 });
    for (const [method, url, payload] of [
      ['PUT', '/v1/chat/completions', {}],
      ['POST', '/v1/nope', { messages: 's' }],
      ['POST', '/messages-api/v1/nope', { messages: {} }],
    ] as const) {
      const res = await t.inject({
        method,
        url,
        headers: { authorization: 'Bearer k', 'x-api-key': 'k', 'msgapi-version': '2023-06-01' },
        payload,
      });
      expect(res.statusCode, `${method} ${url}`).toBe(404);
    }
    // a wildcard over 200 000 items (a spread of them overflowed the stack: a 500)
    const large = { ...CHAT.payload, x: new Array(200_000).fill(0) };
    expect((await send(CHAT, { payload: large })).statusCode).toBe(418);
    await t.inject({ method: 'DELETE', url: '/_emulator/faults/1' });
    expect((await send(CHAT, { payload: large })).statusCode).toBe(200);
    large.x[9_999] = 1;
    expect((await send(CHAT, { payload: large })).statusCode).toBe(409);
    // a wildcard looks at the first MAX_SELECTED (10 000) values only
    large.x[9_999] = 0;
    large.x[10_000] = 1;
    expect((await send(CHAT, { payload: large })).statusCode).toBe(200);
  });

  it('probability: a seeded share of matching requests, the same on every run', async () => {
    const run = async () => {
      await t.inject({ method: 'DELETE', url: '/_emulator/faults' });
      await addRule({ path: '/v1/chat/completions', status: 500, probability: 0.3, seed: 42 });
      const statuses: number[] = [];
      for (let i = 0; i < 40; i++) statuses.push((await send(CHAT)).statusCode);
      return statuses;
    };
    const first = await run();
    const failed = first.filter((s) => s === 500).length;
    expect(failed).toBeGreaterThan(4);
    expect(failed).toBeLessThan(20);
    expect(await run()).toEqual(first);
    const rule = (await t.inject({ url: '/_emulator/faults' })).json().faults[0];
    expect(rule).toMatchObject({ probability: 0.3, seed: 42, fired: failed });
  });

  it('are validated: after_bytes, probability, seed, a match given twice, a bad JSON path', async () => {
    for (const [rule, message] of [
      [{ status: 500, probability: 1.5 }, 'probability must be less than or equal to 1'],
      [{ status: 500, seed: 3 }, 'seed needs probability'],
      [
        { kind: 'stream_error', after_bytes: 10 },
        'after_bytes is only for kind "disconnect" (not "stream_error")',
      ],
      [
        { path: '/a', match: { path: '/b' }, status: 500 },
        'path is given twice: as path and as match.path',
      ],
      [
        { match: { body: { 'messages[0]': 1 } }, status: 500 },
        'match.body.messages[0]: must start with $',
      ],
      [
        { match: { body: { '$..x': 1 } }, status: 500 },
        'match.body.$..x: is not a JSON path this emulator reads (at 1)',
      ],
      [
        { match: { prompt_regex: '(?<=x)y' }, status: 500 },
        'match.prompt_regex: /(?<=x)y/ cannot be run in linear time (lookaround and backreferences cannot;',
      ],
    ] as const) {
      const res = await addRule(rule);
      expect(res.statusCode, JSON.stringify(rule)).toBe(400);
      expect(res.json().error.message).toContain(message);
    }
  });
});

describe('after_bytes', () => {
  let emulator: Emulator;
  afterEach(() => emulator?.close());

  it('cuts a stream once that many bytes were sent; a plain request is not touched', async () => {
    emulator = await startEmulator({ logLevel: 'silent' });
    await emulator.fault({ path: '/v1/chat/completions', after_bytes: 100 });
    const plain = await fetch(`${emulator.url}${CHAT.url}`, {
      method: 'POST',
      headers: { ...CHAT.headers, 'content-type': 'application/json' },
      body: JSON.stringify(CHAT.payload),
    });
    expect(plain.status).toBe(200);
    const res = await fetch(`${emulator.url}${CHAT.url}`, {
      method: 'POST',
      headers: { ...CHAT.headers, 'content-type': 'application/json' },
      body: JSON.stringify({ ...CHAT.payload, stream: true, max_tokens: 200 }),
    });
    expect(res.status).toBe(200);
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let received = 0;
    const failure = await (async () => {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return undefined;
        received += value.length;
      }
    })().catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(Error);
    expect(received).toBe(100);
    const [entry] = await emulator
      .journal({ path: '/v1/chat/completions', status: 200 })
      .then((rows) => rows.filter((r) => r.aborted));
    expect(entry).toMatchObject({
      aborted: true,
      bytes_sent: 100,
      fault: 'rule 1: disconnect after 100 bytes',
    });
  });
});
