import { hostname } from 'node:os';
import { afterEach, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
afterEach(() => t?.app.close());

const HOST = '127.0.0.1:4010';

/** A fault rule, so that a reset that went through would show. */
async function addFault() {
  const res = await t.inject({
    method: 'POST',
    url: '/_emulator/faults',
    payload: { path: '/v1/chat/completions', status: 500 },
  });
  expect(res.statusCode).toBe(200);
}

const faultCount = async () =>
  (await t.inject({ url: '/_emulator/faults' })).json().faults.length as number;

/**
 * `POST /_emulator/reset` as a page can send it with no preflight (`fetch(url, {method: 'POST',
 * mode: 'no-cors'})`): bodiless.
 */
const reset = (headers: Record<string, string>) =>
  t.inject({ method: 'POST', url: '/_emulator/reset', headers: { host: HOST, ...headers } });

/** A clock move from a page of the emulator's own origin, as reached through `host`. */
const advanceFrom = (host: string, headers: Record<string, string> = {}) =>
  t.inject({
    method: 'POST',
    url: '/_emulator/clock/advance',
    headers: { host, origin: `http://${host}`, ...headers },
    payload: { ms: 1 },
  });

describe('state-changing control calls from another origin', () => {
  it('a cross-origin Origin is a 403 in the control shape, and the state stays', async () => {
    t = await buildTestApp();
    await addFault();
    for (const origin of [
      'https://evil.example',
      'http://127.0.0.1:4011', // same host, another port
      'https://127.0.0.1:4010.evil.example',
      'null', // a sandboxed page or a file
    ]) {
      const res = await reset({ origin });
      expect(res.statusCode, origin).toBe(403);
      expect(res.json(), origin).toEqual({
        error: {
          type: 'permission_error',
          message: `Origin ${origin} is not this emulator's: a page of another origin may not call POST /_emulator routes (set CORS_ORIGINS to let it).`,
        },
      });
    }
    // with a text/plain body, and every state-changing method
    const text = await t.inject({
      method: 'POST',
      url: '/_emulator/reset',
      headers: { host: HOST, origin: 'https://evil.example', 'content-type': 'text/plain' },
      payload: 'x',
    });
    expect(text.statusCode).toBe(403);
    const removal = await t.inject({
      method: 'DELETE',
      url: '/_emulator/faults',
      headers: { host: HOST, origin: 'https://evil.example' },
    });
    expect(removal.statusCode).toBe(403);
    const advance = await t.inject({
      method: 'POST',
      url: '/_emulator/clock/advance',
      headers: { host: HOST, origin: 'https://evil.example', 'content-type': 'text/plain' },
      payload: '{"ms":1000}',
    });
    expect(advance.statusCode).toBe(403);
    expect(await faultCount()).toBe(1);
    expect((await t.inject({ url: '/_emulator/clock' })).json().offset_ms).toBe(0);
  });

  it('Sec-Fetch-Site: cross-site is a 403 even without an Origin', async () => {
    t = await buildTestApp();
    await addFault();
    const res = await reset({ 'sec-fetch-site': 'cross-site' });
    expect(res.statusCode).toBe(403);
    expect(res.json().error).toEqual({
      type: 'permission_error',
      message:
        'A cross-site page may not call POST /_emulator routes (Sec-Fetch-Site: cross-site).',
    });
    expect(await faultCount()).toBe(1);
  });

  it('the same origin (the dashboard) and clients without an Origin go through', async () => {
    t = await buildTestApp();
    await addFault();
    expect((await reset({ origin: `http://${HOST}` })).statusCode).toBe(200);
    expect(await faultCount()).toBe(0);
    await addFault();
    expect(
      (await reset({ origin: `http://${HOST}`, 'sec-fetch-site': 'same-origin' })).json(),
    ).toEqual({ status: 'ok' });
    expect(await faultCount()).toBe(0);
    await addFault();
    expect((await reset({})).statusCode).toBe(200);
    expect(await faultCount()).toBe(0);
    // a default port matches the Host without one
    const plain = await t.inject({
      method: 'POST',
      url: '/_emulator/reset',
      headers: { host: 'localhost', origin: 'http://localhost:80' },
    });
    expect(plain.statusCode).toBe(200);
    // behind a proxy that rewrites Host, the browser's own Sec-Fetch-Site vouches for it
    const proxied = await reset({ origin: 'https://emu.example', 'sec-fetch-site': 'same-origin' });
    expect(proxied.statusCode).toBe(200);
  });

  it('reads from another origin are not refused (CORS keeps their answers from the page)', async () => {
    t = await buildTestApp();
    const res = await t.inject({
      url: '/_emulator/faults',
      headers: { host: HOST, origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' },
    });
    expect(res.statusCode).toBe(200);
  });

  it('an origin CORS_ORIGINS lets in may change state, as CORS lets it', async () => {
    t = await buildTestApp({ corsOrigins: ['https://app.example'] });
    await addFault();
    const other = await reset({ origin: 'https://evil.example', 'sec-fetch-site': 'cross-site' });
    expect(other.statusCode).toBe(403);
    expect(await faultCount()).toBe(1);
    const allowed = await reset({ origin: 'https://app.example', 'sec-fetch-site': 'cross-site' });
    expect(allowed.statusCode).toBe(200);
    expect(allowed.headers['access-control-allow-origin']).toBe('https://app.example');
    expect(await faultCount()).toBe(0);
  });

  it('is refused before the admin token is looked at', async () => {
    t = await buildTestApp({ adminToken: 'admin' });
    const res = await reset({ origin: 'https://evil.example', 'x-emulator-admin-token': 'admin' });
    expect(res.statusCode).toBe(403);
    expect((await reset({ 'x-emulator-admin-token': 'admin' })).statusCode).toBe(200);
  });
});

describe('a page of the emulator own origin, reached through a name it does not know', () => {
  const rebound = 'rebind.attacker.example:4010';

  it('is a 403 without an admin token (DNS rebinding), whether the browser says so by Origin or Sec-Fetch-Site', async () => {
    t = await buildTestApp();
    await addFault();
    for (const headers of [
      { host: rebound, origin: `http://${rebound}` },
      { host: rebound, 'sec-fetch-site': 'same-origin' },
    ]) {
      const res = await t.inject({ method: 'POST', url: '/_emulator/reset', headers });
      expect(res.statusCode).toBe(403);
      expect(res.json()).toEqual({
        error: {
          type: 'permission_error',
          message: `Host ${rebound} is not a name this emulator knows: a page reached through it may not call POST /_emulator routes (a page of another site can point a name of its own here: DNS rebinding). Open it through localhost, an IP address, HOST or PUBLIC_BASE_URL, or set EMULATOR_ADMIN_TOKEN.`,
        },
      });
    }
    expect(await faultCount()).toBe(1);
    // a client that is no browser (no Origin, no Sec-Fetch-Site) may use any name
    const curl = await t.inject({
      method: 'POST',
      url: '/_emulator/faults',
      headers: { host: rebound },
      payload: { path: '/x', status: 500 },
    });
    expect(curl.statusCode).toBe(200);
  });

  it('may not read the data routes either (the page could read the prompts in the journal)', async () => {
    t = await buildTestApp();
    for (const url of ['/_emulator/journal', '/_emulator/tasks', '/_emulator/faults']) {
      const res = await t.inject({
        url,
        headers: { host: rebound, 'sec-fetch-site': 'same-origin' },
      });
      expect([res.statusCode, res.json()], url).toEqual([
        403,
        {
          error: {
            type: 'permission_error',
            message: `Host ${rebound} is not a name this emulator knows: a page reached through it may not call GET /_emulator routes (a page of another site can point a name of its own here: DNS rebinding). Open it through localhost, an IP address, HOST or PUBLIC_BASE_URL, or set EMULATOR_ADMIN_TOKEN.`,
          },
        },
      ]);
      // the same page by a known name, and a client that is no browser, read it
      const local = { host: 'localhost:4010', 'sec-fetch-site': 'same-origin' };
      expect((await t.inject({ url, headers: local })).statusCode, url).toBe(200);
      expect((await t.inject({ url, headers: { host: rebound } })).statusCode, url).toBe(200);
    }
    // the dashboard's files hold no data: they load, and its first data call says what is wrong
    const page = await t.inject({
      url: '/_emulator/ui/app.js',
      headers: { host: rebound, 'sec-fetch-site': 'same-origin' },
    });
    expect(page.statusCode).not.toBe(403);
  });

  it('goes through by HOST and by the machine name, in any case', async () => {
    t = await buildTestApp({ host: 'Emu.LAN' });
    for (const host of [
      'emu.lan:4010',
      `${hostname().toUpperCase()}:4010`,
      '[::ffff:7f00:1]:4010',
    ]) {
      expect((await advanceFrom(host)).statusCode, host).toBe(200);
    }
  });

  it('goes through by localhost, an IP address, PUBLIC_BASE_URL, or with the admin token', async () => {
    t = await buildTestApp({ publicBaseUrl: 'http://emulator.internal:4010' });
    for (const host of [
      'localhost:4010',
      '127.0.0.1:4010',
      '[::1]:4010',
      'emulator.internal:4010',
      'app.localhost:4010',
    ]) {
      expect((await advanceFrom(host)).statusCode, host).toBe(200);
    }
    await t.app.close();
    t = await buildTestApp({ adminToken: 'adm' });
    const res = await advanceFrom(rebound, { 'x-emulator-admin-token': 'adm' });
    expect(res.statusCode).toBe(200);
  });
});
