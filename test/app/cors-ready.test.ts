import { afterEach, describe, expect, it } from 'vitest';
import { prettyLogs } from '../../src/app.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp | undefined;
afterEach(async () => {
  await t?.app.close();
  t = undefined;
});

describe('GET /_emulator/ready', () => {
  it('is 503 until the server listens, then 200; it needs no admin token', async () => {
    t = await buildTestApp({ adminToken: 'adm' });
    const before = await t.inject({ url: '/_emulator/ready' });
    expect({ status: before.statusCode, body: before.json() }).toEqual({
      status: 503,
      body: { status: 'starting' },
    });
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    const after = await fetch(`${address}/_emulator/ready`);
    expect({ status: after.status, body: await after.json() }).toEqual({
      status: 200,
      body: { status: 'ready' },
    });
  });
});

describe('CORS (CORS_ORIGINS)', () => {
  const preflight = (origin: string) =>
    t?.inject({
      method: 'OPTIONS',
      url: '/v1/chat/completions',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization,content-type,x-stainless-os',
      },
    });

  it('answers a preflight from an allowed origin before any key check', async () => {
    t = await buildTestApp({ corsOrigins: ['https://app.example'] });
    const res = await preflight('https://app.example');
    expect(res?.statusCode).toBe(204);
    expect(res?.headers).toMatchObject({
      'access-control-allow-origin': 'https://app.example',
      'access-control-allow-methods': 'GET, HEAD, POST, DELETE, OPTIONS',
      'access-control-allow-headers': 'authorization,content-type,x-stainless-os',
      'access-control-max-age': '600',
    });
    const call = await t.chat(
      { model: 'gpt-4o', messages: [{ role: 'user', content: 'hi' }] },
      { headers: { origin: 'https://app.example' } },
    );
    expect(call.statusCode).toBe(200);
    expect(call.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(call.headers['access-control-expose-headers']).toContain('x-request-id');
  });

  it('gives another origin no CORS headers, and is off by default', async () => {
    t = await buildTestApp({ corsOrigins: ['https://app.example'] });
    const other = await preflight('https://evil.example');
    expect(other?.headers['access-control-allow-origin']).toBeUndefined();
    await t.app.close();
    t = await buildTestApp();
    const off = await preflight('https://app.example');
    expect(off?.headers['access-control-allow-origin']).toBeUndefined();
    expect(off?.statusCode).toBe(401); // no CORS: the chat group answers, and asks for a key
  });

  it('with *, answers any origin with that origin (so credentials headers still work)', async () => {
    t = await buildTestApp({ corsOrigins: ['*'] });
    for (const origin of ['https://one.example', 'http://localhost:5173']) {
      const res = await preflight(origin);
      expect(res?.statusCode).toBe(204);
      expect(res?.headers['access-control-allow-origin']).toBe(origin);
    }
  });
});

describe('LOG_FORMAT', () => {
  it('auto: pretty on a terminal, JSON to a pipe or a given stream; json and pretty as asked', () => {
    expect(prettyLogs('auto', false, true)).toBe(true);
    expect(prettyLogs('auto', false, false)).toBe(false);
    expect(prettyLogs('auto', true, true)).toBe(false);
    expect(prettyLogs('json', false, true)).toBe(false);
    expect(prettyLogs('pretty', false, false)).toBe(true);
    expect(prettyLogs('pretty', true, false)).toBe(true);
  });

  it('pretty: readable lines through pino-pretty, no JSON', async () => {
    t = await buildTestApp({ logFormat: 'pretty' });
    await t.chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    const text = t.deps.logs.join('');
    expect(text).toContain('request completed');
    expect(text).not.toMatch(/^\{"level"/m);
  });
});
