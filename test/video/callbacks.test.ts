import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildTestApp, MEDIA_TOKEN_1, T0, type TestApp } from '../helpers/app.js';
import { submitted } from '../helpers/video.js';

const KEY = { authorization: 'Bearer key-a' };

interface Receiver {
  url: string;
  bodies: unknown[];
  /** The Authorization header of each request, when it had one. */
  auths: string[];
  close(): Promise<void>;
}

/** A callback receiver on loopback answering with `statuses` in turn (then 200). */
async function receiver(statuses: number[] = []): Promise<Receiver> {
  const bodies: unknown[] = [];
  const auths: string[] = [];
  const server: Server = createServer((req, res) => {
    if (req.headers.authorization) auths.push(req.headers.authorization);
    let raw = '';
    req.on('data', (chunk) => {
      raw += chunk;
    });
    req.on('end', () => {
      bodies.push({ contentType: req.headers['content-type'], body: JSON.parse(raw) });
      res.statusCode = statuses.shift() ?? 200;
      res.end('ok');
    });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return {
    url: `http://127.0.0.1:${port}/hooks/video`,
    bodies,
    auths,
    close: () => new Promise((ok) => server.close(() => ok())),
  };
}

let t: TestApp;
let hook: Receiver;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(async () => {
  await t.app.close();
  await hook?.close();
});

const create = (
  callbackUrl: string,
  extra: object = {},
  headers: object = {},
  via: TestApp['inject'] = (options) => t.inject(options),
) =>
  via({
    method: 'POST',
    url: '/videogen/v1/videos/text2video',
    headers: { ...KEY, ...headers },
    payload: {
      model_name: 'vid-v1-6',
      prompt: 'a cat',
      duration: '5',
      callback_url: callbackUrl,
      external_task_id: 'job-7',
      ...extra,
    },
  });
const advance = async (ms: number) => {
  await t.inject({ method: 'POST', url: '/_emulator/clock/advance', payload: { ms } });
  await t.app.emulator.callbacks.idle();
};
const deliveries = async () => (await t.inject({ url: '/_emulator/callbacks' })).json().callbacks;
/** A delivery as `GET /_emulator/callbacks` lists it, made in one attempt at `at`. */
const delivered = (
  id: number,
  taskStatus: string,
  at: number,
  taskId = '1000001',
  session = 'default',
) => ({
  id,
  task_id: taskId,
  session,
  url: hook.url,
  task_status: taskStatus,
  state: 'delivered',
  attempts: 1,
  last_status: 200,
  last_error: null,
  created_at: at,
  updated_at: at,
});

const flat = (status: string, updatedAt: number, videos: unknown[] = []) => ({
  contentType: 'application/json',
  body: {
    task_id: '1000001',
    task_status: status,
    task_status_msg: '',
    task_info: { external_task_id: 'job-7' },
    task_result: { videos },
    created_at: T0,
    updated_at: updatedAt,
  },
});

describe('video callbacks', () => {
  it('POST the flat task record on every status change, as the clock passes it', async () => {
    hook = await receiver();
    await create(hook.url);
    await t.app.emulator.callbacks.idle();
    expect(hook.bodies).toEqual([]);

    await advance(2000);
    expect(hook.bodies).toEqual([flat('processing', T0 + 2000)]);
    await advance(8000);
    expect(hook.bodies).toEqual([
      flat('processing', T0 + 2000),
      flat('succeed', T0 + 10_000, [
        {
          id: 'v1000001',
          url: `http://localhost:80/media/videos/${MEDIA_TOKEN_1}/v1000001.mp4`,
          duration: '5',
        },
      ]),
    ]);
    expect(await deliveries()).toEqual([
      delivered(1, 'processing', T0 + 2000),
      delivered(2, 'succeed', T0 + 10_000),
    ]);
  });

  it('fires both transitions in order when one advance passes them both', async () => {
    hook = await receiver();
    await create(hook.url, { external_task_id: 'job-7' });
    await advance(60_000);
    expect(
      hook.bodies.map((b) => (b as { body: { task_status: string } }).body.task_status),
    ).toEqual(['processing', 'succeed']);
  });

  it('retries a failing receiver with exponential backoff on the emulator clock', async () => {
    hook = await receiver([500, 503]);
    await create(hook.url);
    await advance(2000);
    expect(await deliveries()).toMatchObject([
      { state: 'pending', attempts: 1, last_status: 500, last_error: 'HTTP 500' },
    ]);
    await advance(999);
    expect(hook.bodies).toHaveLength(1);
    await advance(1); // first retry after 1 s
    expect(await deliveries()).toMatchObject([
      { state: 'pending', attempts: 2, last_status: 503, last_error: 'HTTP 503' },
    ]);
    await advance(1999);
    expect(hook.bodies).toHaveLength(2);
    await advance(1); // second retry after 2 s more
    expect(await deliveries()).toMatchObject([
      { state: 'delivered', attempts: 3, last_status: 200, last_error: null },
    ]);
    expect(hook.bodies).toEqual([
      flat('processing', T0 + 2000),
      flat('processing', T0 + 2000),
      flat('processing', T0 + 2000),
    ]);
  });

  it('gives up after 5 attempts at an unreachable address', async () => {
    hook = await receiver();
    const unreachable = hook.url;
    await hook.close();
    await create(unreachable);
    await advance(2000);
    for (const wait of [1000, 2000, 4000, 8000]) await advance(wait);
    const [first] = await deliveries();
    expect(first).toMatchObject({ state: 'failed', attempts: 5, last_status: null });
    expect(first.last_error).toContain('ECONNREFUSED');
  });

  it('notifies a forced status and no later timeline change', async () => {
    hook = await receiver();
    await create(hook.url);
    await t.inject({
      method: 'POST',
      url: '/_emulator/tasks/1000001',
      payload: { status: 'succeed' },
    });
    await t.app.emulator.callbacks.idle();
    await advance(60_000);
    expect(hook.bodies).toEqual([
      flat('succeed', T0, [
        {
          id: 'v1000001',
          url: `http://localhost:80/media/videos/${MEDIA_TOKEN_1}/v1000001.mp4`,
          duration: '5',
        },
      ]),
    ]);
  });

  it('does not call back for an empty callback_url, and reset clears the log', async () => {
    hook = await receiver();
    await create('');
    await advance(60_000);
    expect(hook.bodies).toEqual([]);
    await create(hook.url, { external_task_id: 'job-8' });
    await advance(60_000);
    expect(await deliveries()).toHaveLength(2);
    await t.inject({ method: 'POST', url: '/_emulator/reset' });
    expect(await deliveries()).toEqual([]);
    expect((await t.inject({ url: '/_emulator/callbacks' })).json()).toEqual({
      dropped: 0,
      callbacks: [],
    });
  });
});

describe('credentials in a callback_url', () => {
  it('reach the target, never the callbacks list or the shutdown log', async () => {
    hook = await receiver();
    const url = hook.url.replace('http://', 'http://alice:pw-secret@');
    expect((await create(`${url}?token=tok-secret&x=1`)).statusCode).toBe(200);
    await advance(2000);
    expect(hook.bodies).toHaveLength(1);
    expect(hook.auths).toEqual([`Basic ${Buffer.from('alice:pw-secret').toString('base64')}`]);
    const listed = (await t.inject({ url: '/_emulator/callbacks' })).json().callbacks;
    expect(listed.map((d: { url: string }) => d.url)).toEqual([
      `${hook.url.replace('http://', 'http://alice:[REDACTED]@')}?token=[REDACTED]&x=1`,
    ]);
    expect(JSON.stringify(listed)).not.toMatch(/pw-secret|tok-secret/);
    // nor the journal, which keeps the create request's body
    const journal = (await t.inject({ url: '/_emulator/journal' })).json().requests;
    const detail = await t.inject({ url: `/_emulator/journal/${journal[0].id}` });
    expect(detail.json().body.callback_url).toBe(
      `${hook.url.replace('http://', 'http://alice:[REDACTED]@')}?token=[REDACTED]&x=1`,
    );
    expect(JSON.stringify(journal) + detail.body).not.toMatch(/pw-secret|tok-secret/);
  });
});

describe('credentials in a callback_url written with JSON escapes', () => {
  it('never reach the journal, whatever the escapes hide (the key, the @, the ? or the =), nor when the body is refused unparsed', async () => {
    const journaled = async (raw: string) => {
      const res = await t.inject({
        method: 'POST',
        url: '/videogen/v1/videos/text2video',
        headers: { ...KEY, 'content-type': 'application/json' },
        payload: raw,
      });
      const entry = (await t.inject({ url: '/_emulator/journal' })).json().requests.at(-1);
      const detail = await t.inject({ url: `/_emulator/journal/${entry.id}` });
      return { status: res.statusCode, text: detail.body };
    };
    const body = (url: string, key = 'callback_url') =>
      `{"model_name":"vid-v3","prompt":"p","duration":"5","${key}":"${url}"}`;
    for (const raw of [
      body('http://user:SECRETpw1@example.com/cb?token=SECRETtok1', 'callback\\u005furl'),
      body('http://user:SECRETpw2\\u0040example.com/cb'),
      body('http://example.com/cb?tok\\u0065n=SECRETtok3'),
      body('http://example.com/cb\\u003ftoken=SECRETtok4'),
      body('http://example.com/cb?a=1\\u0026token\\u003dSECRETtok5'),
    ]) {
      const { status, text } = await journaled(raw);
      expect([raw, status]).toEqual([raw, 200]);
      expect(text).not.toMatch(/SECRET/);
      expect(text).toMatch(/\[REDACTED\]/);
    }
    // a body refused before it is parsed: what the text shows is hidden still
    const broken = await journaled(
      '{"model_name":"vid-v3","callback_url":"http://u:SECRETpw6@example.com/cb?token=SECRETtok6",',
    );
    expect(broken.status).toBe(400);
    expect(broken.text).not.toMatch(/SECRET/);
  });
});

describe('GET /_emulator/callbacks with x-emulator-session', () => {
  it("lists only that session's deliveries; without the header, every session's", async () => {
    hook = await receiver();
    expect((await create(hook.url, {}, { 'x-emulator-session': 'a' })).statusCode).toBe(200);
    expect((await create(hook.url, {}, { 'x-emulator-session': 'b' })).statusCode).toBe(200);
    await advance(2000);
    const a = delivered(1, 'processing', T0 + 2000, '1000001', 'a');
    const b = delivered(2, 'processing', T0 + 2000, '1000002', 'b');
    const list = async (session?: string) =>
      (
        await t.inject({
          url: '/_emulator/callbacks',
          headers: session ? { 'x-emulator-session': session } : {},
        })
      ).json();
    expect(await list('a')).toEqual({ dropped: 0, callbacks: [a] });
    expect(await list('b')).toEqual({ dropped: 0, callbacks: [b] });
    expect(await list('c')).toEqual({ dropped: 0, callbacks: [] });
    expect(await list()).toEqual({ dropped: 0, callbacks: [a, b] });
  });
});

describe('callbacks never turn against the emulator', () => {
  // (each to the process that listens: its own address is what its guard knows)
  /** A receiver that redirects every callback to `location` with a 307. */
  async function redirector(location: string) {
    const hits: string[] = [];
    const server = createServer((req, res) => {
      hits.push(req.url ?? '');
      res.writeHead(307, { location }).end();
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    const address = server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    return {
      url: `http://127.0.0.1:${port}/hook`,
      hits,
      close: () => new Promise<void>((ok) => server.close(() => ok())),
    };
  }

  it('refuses a callback_url at the control prefix or at its own address (400 naming the field)', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = new URL(address).port;
    const refused = (url: string) =>
      t.app.inject({
        method: 'POST',
        url: '/videogen/v1/videos/text2video',
        headers: { ...KEY, host: `127.0.0.1:${port}` },
        payload: { model_name: 'vid-v1-6', prompt: 'a cat', duration: '5', callback_url: url },
      });
    for (const [url, why] of [
      [
        'https://hooks.example/_emulator/reset',
        "must not point at the emulator's control surface (/_emulator)",
      ],
      [`http://localhost:${port}/anything`, 'must not point at the emulator itself'],
      [`http://127.0.0.1:${port}/anything`, 'must not point at the emulator itself'],
    ] as const) {
      const res = await refused(url);
      expect({ status: res.statusCode, body: res.json() }, url).toEqual({
        status: 400,
        body: {
          code: 1201,
          message: `Invalid parameter: callback_url ${why}`,
          request_id: expect.any(String),
        },
      });
    }
    const query = await t.app.inject({
      url: '/videogen/v1/videos/text2video/1000001',
      headers: KEY,
    });
    expect(query.statusCode).toBe(404);
  });

  it('refuses every other spelling of its own address and of the control prefix', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = new URL(address).port;
    const self = 'must not point at the emulator itself';
    const control = "must not point at the emulator's control surface (/_emulator)";
    const cases = [
      [`http://[::ffff:7f00:1]:${port}/%5Femulator/reset`, control],
      [`http://[::ffff:127.0.0.1]:${port}/hook`, self],
      [`http://[::ffff:7f00:1]:${port}/hook`, self],
      [`http://[::]:${port}/hook`, self],
      [`http://0.0.0.0:${port}/hook`, self],
      [`http://127.1:${port}/hook`, self],
      [`http://2130706433:${port}/hook`, self],
      [`http://0x7f.1:${port}/hook`, self],
      [`http://localhost.:${port}/hook`, self],
      ['https://hooks.example/%5Femulator/reset', control],
      ['https://hooks.example/%5femulator', control],
      ['https://hooks.example//_emulator/reset', control],
      ['https://hooks.example/./_emulator/reset', control],
      ['https://hooks.example/x/../_emulator/reset', control],
      ['https://hooks.example/_EMULATOR/reset', control],
    ] as const;
    const answers = [];
    for (const [url] of cases) {
      const res = await create(
        url,
        { external_task_id: undefined },
        { host: `127.0.0.1:${port}` },
        (options) => t.app.inject(options),
      );
      answers.push({ url, status: res.statusCode, body: res.json() });
    }
    expect(answers).toEqual(
      cases.map(([url, why]) => ({
        url,
        status: 400,
        body: {
          code: 1201,
          message: `Invalid parameter: callback_url ${why}`,
          request_id: expect.any(String),
        },
      })),
    );
  });

  it('a callback at [::ffff:7f00:1]/%5Femulator/reset cannot wipe state', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = new URL(address).port;
    const kept = await t.app.inject({
      method: 'POST',
      url: '/videogen/v1/videos/text2video',
      headers: KEY,
      payload: { model_name: 'vid-v3', prompt: 'a fox', duration: '5' },
    });
    expect(kept.statusCode).toBe(200);
    const attack = await t.app.inject({
      method: 'POST',
      url: '/videogen/v1/videos/text2video',
      headers: KEY,
      payload: {
        model_name: 'vid-v3',
        prompt: 'a fox',
        duration: '5',
        callback_url: `http://[::ffff:7f00:1]:${port}/%5Femulator/reset`,
      },
    });
    expect(attack.statusCode).toBe(400);
    await advance(3000);
    const query = await t.app.inject({
      url: '/videogen/v1/videos/text2video/1000001',
      headers: KEY,
    });
    expect(query.json().data).toMatchObject({ task_id: '1000001', task_status: 'processing' });
    expect(await deliveries()).toEqual([]);
  });

  it('answers a create with an unusable Host header as usual, never with a 500', async () => {
    const answers = [];
    for (const host of ['a b', '[::1', 'x:99999', 'ex.com:abc', '%', '']) {
      const res = await create(
        'https://hooks.example/hook',
        { external_task_id: undefined },
        { host },
      );
      answers.push({ host, status: res.statusCode, body: res.json() });
    }
    expect(answers).toEqual(
      ['a b', '[::1', 'x:99999', 'ex.com:abc', '%', ''].map((host, i) => ({
        host,
        status: 200,
        body: submitted(String(1_000_001 + i), expect.any(String)),
      })),
    );
  });

  it('answers HTTP/1.0 without a Host, and still refuses its own address then', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const port = Number(new URL(address).port);
    const send = (callbackUrl: string) =>
      new Promise<{ status: number; body: unknown }>((resolve, reject) => {
        const body = JSON.stringify({
          model_name: 'vid-v3',
          prompt: 'a fox',
          duration: '5',
          callback_url: callbackUrl,
        });
        const socket = connect(port, '127.0.0.1');
        let raw = '';
        socket.on('data', (chunk) => {
          raw += chunk;
        });
        socket.on('error', reject);
        socket.on('end', () => {
          const [head = '', payload = ''] = raw.split('\r\n\r\n');
          resolve({ status: Number(head.split(' ')[1]), body: JSON.parse(payload) });
        });
        // (written, not half-closed: the server closes an HTTP/1.0 connection after its answer)
        socket.write(
          `POST /videogen/v1/videos/text2video HTTP/1.0\r\nAuthorization: Bearer key-a\r\n` +
            `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
        );
      });
    expect(await send('https://hooks.example/hook')).toEqual({
      status: 200,
      body: submitted('1000001', expect.any(String)),
    });
    expect(await send(`http://[::ffff:7f00:1]:${port}/hook`)).toEqual({
      status: 400,
      body: {
        code: 1201,
        message: 'Invalid parameter: callback_url must not point at the emulator itself',
        request_id: expect.any(String),
      },
    });
  });

  it('does not follow a 307 to /_emulator/reset: the attempt fails and state survives', async () => {
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const trap = await redirector(`${address}/_emulator/reset`);
    try {
      await create(trap.url);
      await advance(2000);
      for (const wait of [1000, 2000, 4000, 8000]) await advance(wait);
      expect(trap.hits.slice(0, 5)).toEqual(Array(5).fill('/hook'));
      expect((await deliveries())[0]).toEqual({
        id: 1,
        task_id: '1000001',
        session: 'default',
        url: trap.url,
        task_status: 'processing',
        state: 'failed',
        attempts: 5,
        last_status: 307,
        last_error: 'HTTP 307 (redirects are not followed)',
        created_at: T0 + 2000,
        updated_at: T0 + 2000 + 15_000,
      });
      // Nothing was reset: the task is still there.
      const query = await t.app.inject({
        url: '/videogen/v1/videos/text2video/1000001',
        headers: KEY,
      });
      expect(query.json().data.task_id).toBe('1000001');
    } finally {
      await trap.close();
    }
  });

  it('reaches only allowed hosts when CALLBACK_ALLOWED_HOSTS is set', async () => {
    await t.app.close();
    t = await buildTestApp({ callbackAllowedHosts: ['hooks.example'] });
    const res = await create('http://127.0.0.1:9/hook');
    expect(res.json()).toEqual({
      code: 1201,
      message: 'Invalid parameter: callback_url host 127.0.0.1 is not in CALLBACK_ALLOWED_HOSTS',
      request_id: expect.any(String),
    });
    expect((await create('https://hooks.example/hook')).statusCode).toBe(200);
  });
});
