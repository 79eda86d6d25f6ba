import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Config } from '../../src/config.js';
import { startEmulator } from '../../src/index.js';
import { buildTestApp, handTimerDeps, type TestApp } from '../helpers/app.js';

/**
 * Server timeouts and errors Node raises before Fastify sees a request, over real sockets. The
 * timeouts are wall time inside Node's HTTP server, so these tests set them small and wait for
 * the socket to close (never for a fixed time).
 */

let t: TestApp | undefined;
afterEach(async () => {
  await t?.app.close();
  t = undefined;
});

async function start(overrides: Partial<Config>) {
  t = await buildTestApp(overrides);
  const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
  return Number(new URL(address).port);
}

/** Opens a socket, writes `first`, and collects everything until the server closes it. */
function exchange(port: number, first: string) {
  const socket: Socket = connect(port, '127.0.0.1');
  socket.write(first);
  let received = '';
  socket.on('data', (chunk) => {
    received += chunk.toString('latin1');
  });
  const closed = new Promise<{ received: string; ms: number }>((resolve) => {
    const began = performance.now();
    socket.on('error', () => {});
    socket.on('close', () => resolve({ received, ms: performance.now() - began }));
  });
  return { socket, closed };
}

/** Status line, one header and the JSON body of a raw HTTP response. */
function parse(raw: string) {
  const [head = '', body = ''] = raw.split('\r\n\r\n');
  const [statusLine = '', ...headers] = head.split('\r\n');
  return {
    status: statusLine,
    headers: Object.fromEntries(
      headers.map((h) => [h.slice(0, h.indexOf(':')).toLowerCase(), h.slice(h.indexOf(':') + 2)]),
    ),
    body: body ? JSON.parse(body) : undefined,
  };
}

/** The video group's envelope of a refusal before routing, as a test expects it. */
const videoRefusal = (message: string) => ({
  code: 1200,
  message,
  request_id: expect.stringMatching(/^req_\d+$/),
});

const CHAT_HEAD =
  'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n' +
  'Content-Type: application/json\r\nContent-Length: 100\r\n\r\n';

describe('server timeouts', () => {
  it('drops a connection whose upload stalls (IDLE_TIMEOUT_MS)', async () => {
    const port = await start({ idleTimeoutMs: 150 });
    const { closed } = exchange(port, `${CHAT_HEAD}{"model":"m",`);
    const { received } = await closed;
    expect(received).toBe('');
    expect(t?.app.server.listening).toBe(true);
  });

  it('answers 408 in the group envelope when the request takes too long (REQUEST_TIMEOUT_MS)', async () => {
    const port = await start({ requestTimeoutMs: 200, headersTimeoutMs: 200 });
    const { socket, closed } = exchange(port, `${CHAT_HEAD}{`);
    // Keep trickling bytes: the socket is never idle, the request is just too slow.
    const trickle = setInterval(() => socket.writable && socket.write(' '), 20);
    const { received } = await closed;
    clearInterval(trickle);
    expect(parse(received)).toEqual({
      status: 'HTTP/1.1 408 Request Timeout',
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'content-length': expect.any(String),
        'x-request-id': expect.stringMatching(/^req_\d+$/),
        connection: 'close',
      },
      body: {
        error: {
          message: 'The request was not received in time.',
          type: 'invalid_request_error',
          param: null,
          code: null,
        },
      },
    });
  });

  it('answers 408 when the headers never end (HEADERS_TIMEOUT_MS), in the neutral shape', async () => {
    const port = await start({ headersTimeoutMs: 150 });
    const { closed } = exchange(port, 'GET /messages-api/v1/models HTTP/1.1\r\nHost: x\r\n');
    const { received } = await closed;
    // Node has not told anyone the path yet: the neutral shape, as for a path of no group.
    expect(parse(received)).toEqual({
      status: 'HTTP/1.1 408 Request Timeout',
      headers: {
        'content-type': 'application/json; charset=utf-8',
        'content-length': expect.any(String),
        connection: 'close',
      },
      body: {
        error: { type: 'invalid_request_error', message: 'The request was not received in time.' },
      },
    });
  });

  it('closes an idle keep-alive connection (KEEP_ALIVE_TIMEOUT_MS)', async () => {
    const port = await start({ keepAliveTimeoutMs: 150 });
    const { closed } = exchange(port, 'GET /_emulator/health HTTP/1.1\r\nHost: x\r\n\r\n');
    const { received } = await closed;
    expect(received).toMatch(/^HTTP\/1.1 200 OK\r\n/);
  });
});

describe('answers the emulator holds back on purpose', () => {
  it('outlive IDLE_TIMEOUT_MS and REQUEST_TIMEOUT_MS: a delay fault, a hang (200 KB bodies) and a journal wait keep their own bounds', async () => {
    // Wall-clock timers the test fires by hand; the idle and request timeouts are Node's own.
    const { deps, timers } = handTimerDeps();
    t = await buildTestApp(
      { idleTimeoutMs: 100, requestTimeoutMs: 200, headersTimeoutMs: 200 },
      deps,
    );
    const port = Number(new URL(await t.app.listen({ port: 0, host: '127.0.0.1' })).port);
    // Larger than a socket's buffers: a body left unread would leave the request incomplete.
    const body = `{"model":"m","messages":[{"role":"user","content":"hi ${'x'.repeat(200_000)}"}]}`;
    const chat = (fault: string) =>
      `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer k\r\n` +
      `Content-Type: application/json\r\nx-emulator-fault: ${fault}\r\nConnection: close\r\n` +
      `Content-Length: ${body.length}\r\n\r\n${body}`;
    const delayed = exchange(port, chat('delay=5000'));
    const hung = exchange(port, chat('hang'));
    const waiting = exchange(
      port,
      `GET /_emulator/journal/wait?path=/nothing&timeout_ms=5000 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
    );
    let closes = 0;
    for (const { closed } of [delayed, hung, waiting]) closed.then(() => closes++);
    await vi.waitFor(() =>
      expect(timers.map((x) => x.ms).sort((a, b) => a - b)).toEqual([5000, 5000, 600_000]),
    );
    // Several idle timeouts pass (wall time inside Node's server): none of the three is cut.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(closes).toBe(0);
    for (const timer of [...timers]) timer.fire();
    const [a, b, c] = await Promise.all([delayed.closed, hung.closed, waiting.closed]);
    expect(parse(a.received).status).toBe('HTTP/1.1 200 OK');
    expect(b.received).toBe(''); // the hang's own bound drops it, unanswered
    expect(parse(c.received)).toMatchObject({
      status: 'HTTP/1.1 408 Request Timeout',
      body: { error: { type: 'timeout', message: 'No matching request within 5000 ms.' } },
    });
  });
});

describe('errors before routing', () => {
  it('answers malformed HTTP in the group envelope of its path', async () => {
    const port = await start({});
    const { closed } = exchange(
      port,
      'POST /videogen/v1/videos/text2video HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n',
    );
    const response = parse((await closed).received);
    expect(response.status).toBe('HTTP/1.1 400 Bad Request');
    expect(response.body).toEqual(videoRefusal('The request is not valid HTTP.'));
  });

  it('answers oversized headers with 431, and an unknown path in the neutral shape', async () => {
    const port = await start({});
    const huge = `GET /nowhere HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`;
    const response = parse((await exchange(port, huge).closed).received);
    expect(response.status).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(response.body).toEqual({
      error: { type: 'invalid_request_error', message: 'Request header fields are too large.' },
    });
  });

  it('answers a URL too long for the header limit in the envelope of the group it starts in', async () => {
    const port = await start({});
    const long = `GET /videogen/v1/videos/text2video/${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`;
    const response = parse((await exchange(port, long).closed).received);
    expect(response.status).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect(response.body).toEqual(videoRefusal('Request header fields are too large.'));
  });

  it('does not take the envelope of the previous request on the connection', async () => {
    const port = await start({});
    // In one packet (Node keeps the bytes of both), then in two (the first is complete).
    const { closed } = exchange(
      port,
      'GET /_emulator/health HTTP/1.1\r\nHost: x\r\n\r\n' +
        'POST /videogen/v1/videos/text2video HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n',
    );
    const onePacket = (await closed).received;
    expect(parse(onePacket.slice(onePacket.lastIndexOf('HTTP/1.1 400'))).body).toEqual(
      videoRefusal('The request is not valid HTTP.'),
    );
    const two = exchange(port, 'DELETE /v1/nope HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
    await new Promise((resolve) => two.socket.once('data', resolve));
    two.socket.write(
      'POST /videogen/v1/videos/text2video HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n',
    );
    const raw = (await two.closed).received;
    const second = raw.slice(raw.lastIndexOf('HTTP/1.1 400'));
    expect(parse(second).body).toEqual(videoRefusal('The request is not valid HTTP.'));
  });
});

describe('an Expect header other than 100-continue', () => {
  it("is refused 417 in the envelope of the request's group", async () => {
    const port = await start({});
    const { closed } = exchange(
      port,
      'POST /videogen/v1/videos/text2video HTTP/1.1\r\nHost: x\r\nExpect: something\r\nContent-Length: 2\r\n\r\n{}',
    );
    const response = parse((await closed).received);
    expect(response.status).toBe('HTTP/1.1 417 Expectation Failed');
    expect(response.body).toEqual(
      videoRefusal('The Expect header must be 100-continue, or left out.'),
    );
  });
});

describe('Expect: 100-continue', () => {
  it('sends the 100 only once the key is taken: a refused client never uploads its body, and its connection closes', async () => {
    const port = await start({ apiKeys: ['good-key'] });
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const head = (key: string) =>
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n' +
      `Authorization: Bearer ${key}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nExpect: 100-continue\r\n\r\n`;
    // refused: no 100, the answer, then the connection closed (the body was never sent)
    const refused = (await exchange(port, head('bad-key')).closed).received;
    expect(refused.startsWith('HTTP/1.1 401 Unauthorized\r\n')).toBe(true);
    expect(refused).not.toContain('100 Continue');
    expect(refused.toLowerCase()).toContain('connection: close');
    // taken: the 100, then the body, then the answer
    const taken = exchange(port, head('good-key'));
    const first = await new Promise<string>((resolve) =>
      taken.socket.once('data', (d) => resolve(String(d))),
    );
    expect(first).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    taken.socket.write(body);
    const answer = await new Promise<string>((resolve) =>
      taken.socket.once('data', (d) => resolve(String(d))),
    );
    expect(answer.startsWith('HTTP/1.1 200 OK\r\n')).toBe(true);
    taken.socket.destroy();
  });
});

describe('CONNECT', () => {
  it("is refused 405 in the envelope of the target's group (the neutral one for a host), and closed", async () => {
    const port = await start({});
    const message = 'CONNECT is not supported: the emulator is no proxy.';
    const video = parse(
      (
        await exchange(port, 'CONNECT /videogen/v1/videos/text2video HTTP/1.1\r\nHost: x\r\n\r\n')
          .closed
      ).received,
    );
    expect(video.status).toBe('HTTP/1.1 405 Method Not Allowed');
    expect(video.body).toEqual(videoRefusal(message));
    const chat = parse(
      (await exchange(port, 'CONNECT /v1/chat/completions HTTP/1.1\r\nHost: x\r\n\r\n').closed)
        .received,
    );
    expect(chat.body).toEqual({
      error: { message, type: 'invalid_request_error', param: null, code: null },
    });
    const host = parse(
      (
        await exchange(port, 'CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n')
          .closed
      ).received,
    );
    expect(host.status).toBe('HTTP/1.1 405 Method Not Allowed');
    expect(host.body).toEqual({ error: { type: 'invalid_request_error', message } });
  });
});

describe('an error behind a response under way', () => {
  it('closes the socket without writing into the stream it carries', async () => {
    // a stream paced on the real clock: still under way when the bad request comes
    const emu = await startEmulator({ streamChunkDelayMs: 20 });
    const port = Number(new URL(emu.url).port);
    const body = JSON.stringify({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: 'a paced stream' }],
    });
    const { socket, closed } = exchange(
      port,
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n' +
        `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    await new Promise((resolve) => socket.once('data', resolve));
    socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nBad Header Line\r\n\r\n');
    const { received } = await closed;
    await emu.close();
    expect(received.startsWith('HTTP/1.1 200 OK')).toBe(true);
    expect(received).toContain('data: ');
    expect(received).not.toContain('[DONE]'); // cut: the connection could not go on
    expect(received).not.toContain('HTTP/1.1 400'); // Node's own handler writes nothing either
  });
});

describe('a refused upload', () => {
  it('gets its 413 even while it is still sending: the rest is read, not reset', async () => {
    const port = await start({});
    const size = 33 * 1024 * 1024;
    for (let i = 0; i < 5; i++) {
      const socket: Socket = connect(port, '127.0.0.1');
      let received = '';
      let answered: () => void = () => {};
      const answer = new Promise<void>((resolve) => {
        answered = resolve;
      });
      socket.on('data', (chunk) => {
        received += chunk.toString('latin1');
        if (received.includes('\r\n\r\n') && received.endsWith('}')) answered();
      });
      const closed = new Promise<string | Error>((resolve) => {
        socket.on('error', (err) => resolve(err));
        socket.on('close', () => resolve(received));
      });
      socket.write(
        'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n' +
          `Content-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`,
      );
      const chunk = Buffer.alloc(1024 * 1024, '[');
      for (let sent = 0; sent < size && !socket.destroyed; sent += chunk.length) {
        if (!socket.write(chunk)) await new Promise((r) => socket.once('drain', r));
      }
      // All sent without a reset; the answer is there, and the connection is still open.
      await Promise.race([answer, closed]);
      expect(socket.destroyed).toBe(false);
      socket.end();
      const outcome = await closed;
      expect(outcome).toBeTypeOf('string');
      expect(parse(outcome as string)).toMatchObject({
        status: 'HTTP/1.1 413 Payload Too Large',
        body: {
          error: {
            message: 'Request body is too large.',
            type: 'invalid_request_error',
            param: null,
            code: 'request_too_large',
          },
        },
      });
    }
  }, 60_000);

  /** A chat request without a key (refused before its body is read), with a body of `size`. */
  async function refusedUpload(port: number, size: number, send = size) {
    const socket: Socket = connect(port, '127.0.0.1');
    let received = '';
    socket.on('data', (chunk) => {
      received += chunk.toString('latin1');
    });
    const closed = new Promise<void>((resolve) => {
      socket.on('error', () => {});
      socket.on('close', () => resolve());
    });
    socket.write(
      'POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\n' +
        `Content-Type: application/json\r\nContent-Length: ${size}\r\n\r\n`,
    );
    const chunk = Buffer.alloc(16 * 1024, ' ');
    for (let sent = 0; sent < send && !socket.destroyed; sent += chunk.length) {
      const part = chunk.subarray(0, Math.min(chunk.length, send - sent));
      if (!socket.write(part)) await new Promise((r) => socket.once('drain', r));
    }
    return { socket, closed, received: () => received };
  }

  const UNAUTHORIZED = {
    error: {
      message:
        "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
      type: 'invalid_request_error',
      param: null,
      code: null,
    },
  };

  it('keeps the connection for a body of REFUSED_UPLOAD_MAX_BYTES, drops it one byte past', async () => {
    const max = 256 * 1024;
    const port = await start({ refusedUploadMaxBytes: max, keepAliveTimeoutMs: 60_000 });
    const within = await refusedUpload(port, max);
    await new Promise<void>((resolve) => within.socket.once('data', () => resolve()));
    // Every byte was read: the connection is still there for the next request.
    within.socket.write('GET /_emulator/health HTTP/1.1\r\nHost: x\r\n\r\n');
    await expect
      .poll(() => within.received().includes('{"status":"ok"}'), { timeout: 10_000 })
      .toBe(true);
    // The refusal first, then the health answer on the same connection.
    const [refusal = '', next = ''] = within.received().split(/(?=HTTP\/1\.1 )/);
    expect(parse(refusal)).toMatchObject({
      status: 'HTTP/1.1 401 Unauthorized',
      body: UNAUTHORIZED,
    });
    expect(parse(next)).toMatchObject({ status: 'HTTP/1.1 200 OK', body: { status: 'ok' } });
    within.socket.end();
    await within.closed;

    const past = await refusedUpload(port, max + 1);
    await past.closed;
    expect(parse(past.received())).toMatchObject({
      status: 'HTTP/1.1 401 Unauthorized',
      body: UNAUTHORIZED,
    });
  });

  it('drops the connection REFUSED_UPLOAD_TIMEOUT_MS after the refusal if the body is still coming', async () => {
    const { deps, timers } = handTimerDeps();
    t = await buildTestApp({ refusedUploadTimeoutMs: 4321 }, deps);
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const upload = await refusedUpload(Number(new URL(address).port), 100_000, 1000);
    await expect.poll(() => upload.received().endsWith('}'), { timeout: 10_000 }).toBe(true);
    expect(parse(upload.received())).toMatchObject({
      status: 'HTTP/1.1 401 Unauthorized',
      body: UNAUTHORIZED,
    });
    const linger = timers.filter((timer) => timer.ms === 4321);
    expect(linger).toHaveLength(1);
    expect(upload.socket.destroyed).toBe(false);
    linger[0]?.fire();
    await upload.closed;
  });
});
