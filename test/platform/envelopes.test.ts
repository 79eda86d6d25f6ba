import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Every transport-level failure, in each group's own envelope. Bodies are compared whole; the
 * request id is the counting id of the request.
 */
let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ apiKeys: ['good-key'] });
});
afterAll(() => t.app.close());

interface Group {
  name: string;
  url: string;
  auth: Record<string, string>;
  wrongAuth: Record<string, string>;
  envelope(status: number, message: string, requestId: string): unknown;
}

const chatType = (status: number) =>
  status === 401 || status < 500 ? 'invalid_request_error' : 'server_error';

const GROUPS: Group[] = [
  {
    name: 'chat',
    url: '/v1/chat/completions',
    auth: { authorization: 'Bearer good-key' },
    wrongAuth: { authorization: 'Bearer bad-key' },
    envelope: (status, message) => ({
      error: {
        message,
        type: chatType(status),
        param: null,
        code:
          { 401: 'invalid_api_key', 413: 'request_too_large', 415: 'unsupported_media_type' }[
            status
          ] ?? null,
      },
    }),
  },
  {
    name: 'messages',
    url: '/messages-api/v1/messages',
    auth: { 'x-api-key': 'good-key', 'msgapi-version': '2023-06-01' },
    wrongAuth: { 'x-api-key': 'bad-key', 'msgapi-version': '2023-06-01' },
    envelope: (status, message, requestId) => ({
      type: 'error',
      error: {
        type: {
          400: 'invalid_request_error',
          401: 'authentication_error',
          404: 'not_found_error',
          413: 'request_too_large',
          415: 'invalid_request_error',
        }[status],
        message,
      },
      request_id: requestId,
    }),
  },
  {
    name: 'video',
    url: '/videogen/v1/videos/text2video',
    auth: { authorization: 'Bearer good-key' },
    wrongAuth: { authorization: 'Bearer bad-key' },
    envelope: (status, message, requestId) => ({
      code: { 400: 1200, 401: 1002, 404: 1202, 413: 1200, 415: 1200 }[status],
      message,
      request_id: requestId,
    }),
  },
];

async function send(
  group: Group,
  options: { headers?: Record<string, string>; payload?: string | Buffer; url?: string },
) {
  const res = await t.inject({
    method: 'POST',
    url: options.url ?? group.url,
    headers: options.headers ?? { ...group.auth, 'content-type': 'application/json' },
    ...(options.payload === undefined ? {} : { payload: options.payload }),
  });
  const body = res.json();
  const requestId = (body.request_id ?? res.headers['x-request-id']) as string;
  expect(requestId).toMatch(/^req_\d+$/);
  return { res, body, requestId };
}

describe.each(GROUPS)('$name group envelope', (group) => {
  const expectError = async (
    options: Parameters<typeof send>[1],
    status: number,
    message: string,
  ) => {
    const { res, body, requestId } = await send(group, options);
    expect(res.statusCode).toBe(status);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(body).toEqual(group.envelope(status, message, requestId));
  };

  it('refuses malformed JSON with 400', async () => {
    await expectError(
      { payload: '{"model": ' },
      400,
      'Request body is not valid JSON: Unexpected end of JSON input',
    );
  });

  it('refuses an empty body with 400', async () => {
    await expectError({ payload: '' }, 400, 'Request body is empty; a JSON object is required.');
  });

  it('refuses a JSON body that is not an object (null, a number, a string, an array) with 400, and journals it', async () => {
    const { message, code } = {
      chat: { message: 'The request body must be a JSON object.', code: undefined },
      messages: { message: 'Request body must be a JSON object.', code: undefined },
      video: { message: 'Invalid parameter: request body must be a JSON object', code: 1201 },
    }[group.name] as { message: string; code?: number };
    for (const payload of ['null', '5', '"text"', '[]']) {
      const { res, body, requestId } = await send(group, { payload });
      expect(res.statusCode, payload).toBe(400);
      const envelope = group.envelope(400, message, requestId) as object;
      expect(body, payload).toEqual(code === undefined ? envelope : { ...envelope, code });
      const entry = (await t.inject({ url: '/_emulator/journal' }))
        .json()
        .requests.find((e: { id: string }) => e.id === requestId);
      expect(entry, payload).toMatchObject({ status: 400, model: null, body: JSON.parse(payload) });
    }
  });

  it('refuses __proto__ keys with 400', async () => {
    await expectError(
      { payload: '{"__proto__": {"polluted": true}}' },
      400,
      'Request body is not valid JSON: Object contains forbidden prototype property',
    );
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses a wrong content type with 415', async () => {
    await expectError(
      { headers: { ...group.auth, 'content-type': 'text/plain' }, payload: 'hello' },
      415,
      'Content-Type must be application/json.',
    );
  });

  it('refuses a body over 32 MB with 413', async () => {
    await expectError(
      { payload: JSON.stringify({ big: 'x'.repeat(32 * 1024 * 1024) }) },
      413,
      'Request body is too large.',
    );
  });

  it('refuses a compressed body with 415 (Content-Encoding)', async () => {
    await expectError(
      {
        headers: { ...group.auth, 'content-type': 'application/json', 'content-encoding': 'gzip' },
        payload: '{}',
      },
      415,
      'Content-Encoding gzip is not supported; send the JSON body uncompressed.',
    );
  });

  it('refuses a charset other than UTF-8 with 415, and takes utf-8 in any spelling', async () => {
    await expectError(
      {
        headers: { ...group.auth, 'content-type': 'application/json; charset=latin1' },
        payload: '{}',
      },
      415,
      'Content-Type charset must be utf-8 (got latin1).',
    );
    for (const type of ['application/json; charset=UTF-8', 'application/json;charset="utf8"']) {
      const { res } = await send(group, {
        headers: { ...group.auth, 'content-type': type },
        payload: '{}',
      });
      expect(res.statusCode, type).toBe(400); // on to validation: the body is read
    }
  });

  it('refuses a body that is not UTF-8 with 400 (no U+FFFD put in its place)', async () => {
    const bad = Buffer.concat([
      Buffer.from('{"model": "'),
      Buffer.from([0xc3, 0x28]),
      Buffer.from('"}'),
    ]);
    await expectError({ payload: bad }, 400, 'Request body is not valid UTF-8.');
    // and UTF-8 in every width is read as it is
    const { res } = await send(group, { payload: Buffer.from('{"x": "é€😀"}') });
    expect(res.statusCode).toBe(400); // on to validation: the body is read
    expect(res.body).not.toContain('UTF-8');
  });

  it('refuses 31 MB of `[` with 400 without parsing it', async () => {
    await expectError(
      { payload: '['.repeat(31 * 1024 * 1024) },
      400,
      'Request body is not valid JSON: nesting is deeper than 256 levels.',
    );
  });

  it('refuses a number too large for a double with 400 naming the field', async () => {
    const { res, body } = await send(group, { payload: '{"max_tokens": 1e309, "n": 2}' });
    expect(res.statusCode).toBe(400);
    expect(JSON.stringify(body)).toContain('max_tokens');
    expect(JSON.stringify(body)).toContain('must be a finite number (got a number too large)');
  });

  it('refuses a missing key with 401', async () => {
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (group.name === 'messages') headers['msgapi-version'] = '2023-06-01';
    const { res, body } = await send(group, { headers, payload: '{}' });
    expect(res.statusCode).toBe(401);
    expect(JSON.stringify(body)).toMatch(/key|Authorization/);
  });

  it('refuses a key not in GATEWAY_API_KEYS with 401', async () => {
    const { res, body, requestId } = await send(group, {
      headers: { ...group.wrongAuth, 'content-type': 'application/json' },
      payload: '{}',
    });
    expect(res.statusCode).toBe(401);
    const message = { chat: 'Incorrect API key provided.', messages: 'invalid x-api-key' }[
      group.name
    ];
    expect(body).toEqual(group.envelope(401, message ?? 'Authorization is invalid', requestId));
    expect(JSON.stringify(body)).not.toContain('bad-key');
  });

  it('answers an unknown route under its prefix with 404', async () => {
    const url = `${group.url.split('/').slice(0, 2).join('/')}/no/such/route`;
    const { res, body, requestId } = await send(group, { url, payload: '{}' });
    expect(res.statusCode).toBe(404);
    const message = {
      chat: `Invalid URL (POST ${url})`,
      messages: 'Not Found',
      video: `Invalid request method or path: POST ${url}`,
    }[group.name] as string;
    expect(body).toEqual(group.envelope(404, message, requestId));
  });
});

describe('router-level failures', () => {
  it('answers an over-long path parameter and a malformed URL in the group shape', async () => {
    const long = await t.inject({
      url: `/videogen/v1/videos/text2video/${'9'.repeat(2000)}`,
      headers: { authorization: 'Bearer good-key' },
    });
    expect(long.statusCode).toBe(414);
    expect(long.json()).toEqual({
      code: 1200,
      message: expect.stringContaining('exceeding the max param length'),
      request_id: expect.stringMatching(/^req_/),
    });
    const bad = await t.inject({ method: 'GET', url: '/videogen/v1/videos/text2video/%E0%A4%A' });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().code).toBe(1200);
    const messages = await t.inject({ method: 'GET', url: '/messages-api/v1/messages/%E0%A4%A' });
    expect(messages.statusCode).toBe(400);
    expect(messages.headers['request-id']).toBe(messages.json().request_id);
    const chat = await t.inject({ method: 'GET', url: '/v1/chat/%E0%A4%A' });
    expect(chat.headers['x-request-id']).toMatch(/^req_/);
    expect(chat.json().error.type).toBe('invalid_request_error');
  });

  it('does not quote a malformed URL (its query string may hold a credential)', async () => {
    const message = 'The request path is not a valid URL: a percent-escape in it does not decode.';
    const chat = await t.inject({
      method: 'POST',
      url: '/v1/chat/completions%zz?password=SECRETKEY3',
    });
    expect(chat.statusCode).toBe(400);
    expect(chat.json()).toEqual({
      error: { message, type: 'invalid_request_error', param: null, code: null },
    });
    const video = await t.inject({
      url: '/videogen/v1/videos/text2video/%zz?access_token=SECRETKEY1',
    });
    expect(video.json()).toEqual({
      code: 1200,
      message,
      request_id: video.headers['x-request-id'] ?? expect.stringMatching(/^req_/),
    });
    const control = await t.inject({ url: '/_emulator/health%zz?token=SECRETKEY2' });
    expect(control.json()).toEqual({ error: { type: 'invalid_request_error', message } });
  });
});

describe('messages headers', () => {
  const url = '/messages-api/v1/messages';
  it('needs msgapi-version, and only 2023-06-01', async () => {
    for (const [version, message] of [
      [undefined, 'msgapi-version: header is required'],
      ['2024-01-01', 'msgapi-version: "2024-01-01" is not a valid version'],
    ] as const) {
      const headers: Record<string, string> = { 'x-api-key': 'good-key' };
      if (version) headers['msgapi-version'] = version;
      const res = await t.inject({ method: 'POST', url, headers, payload: {} });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toEqual({
        type: 'error',
        error: { type: 'invalid_request_error', message },
        request_id: res.headers['request-id'],
      });
    }
  });

  it('puts the request id in a request-id header on every response', async () => {
    const res = await t.inject({ method: 'POST', url, headers: {}, payload: {} });
    expect(res.headers['request-id']).toBe(res.json().request_id);
  });
});

describe('outside the groups', () => {
  it('answers unknown top-level routes with a plain 404', async () => {
    const res = await t.inject({ method: 'GET', url: '/nowhere?x=1' });
    expect(res.statusCode).toBe(404);
    expect(res.json()).toEqual({
      error: { type: 'not_found_error', message: 'No route GET /nowhere' },
    });
  });

  it("answers a path no route has with that 404 whatever its body, never in Fastify's shape", async () => {
    for (const [url, headers, payload] of [
      ['/nowhere', { 'content-type': 'application/json' }, '{bad'],
      ['/nowhere', { 'content-type': 'application/json', 'content-encoding': 'gzip' }, '{}'],
      ['/nowhere', { 'content-type': 'application/json; charset=latin1' }, '{}'],
      ['/media/videos/t/v.mp4', { 'content-type': 'application/json' }, '{bad'],
    ] as const) {
      const res = await t.inject({ method: 'POST', url, headers, payload });
      expect(res.statusCode, url).toBe(404);
      expect(res.json()).toEqual({
        error: { type: 'not_found_error', message: `No route POST ${url}` },
      });
    }
  });
});
