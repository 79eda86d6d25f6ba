import { readFileSync } from 'node:fs';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { parseRange } from '../../src/video/media-routes.js';
import { buildTestApp, MEDIA_TOKEN_1, type TestApp } from '../helpers/app.js';

const clip = readFileSync(new URL('../../fixtures/media/sample.mp4', import.meta.url));
const KEY = { authorization: 'Bearer k' };
const URL_PATH = `/media/videos/${MEDIA_TOKEN_1}/v1000001.mp4`;

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp({ videoQueueMs: 0, videoRenderMs: 10 });
  await t.inject({
    method: 'POST',
    url: '/videogen/v1/videos/text2video',
    headers: KEY,
    payload: { model_name: 'vid-v1-6', prompt: 'x', duration: '5' },
  });
});
afterEach(() => t.app.close());

describe('result videos', () => {
  it('are a real MP4 clip', () => {
    expect(clip.toString('latin1', 4, 8)).toBe('ftyp');
    expect(clip.length).toBeGreaterThan(10_000);
  });

  it('exist only once the task succeeded, and need no key', async () => {
    const early = await t.inject({ url: URL_PATH });
    expect([early.statusCode, early.json()]).toEqual([
      404,
      { error: { type: 'not_found_error', message: 'No such video' } },
    ]);
    t.deps.clock.advance(10);
    const res = await t.inject({ url: URL_PATH });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('video/mp4');
    expect(res.headers['accept-ranges']).toBe('bytes');
    expect(res.headers['content-length']).toBe(String(clip.length));
    expect(res.rawPayload.equals(clip)).toBe(true);
    expect((await t.inject({ url: '/media/videos/v999.mp4' })).statusCode).toBe(404);
    expect((await t.inject({ url: '/media/videos/v1000001.mp4' })).statusCode).toBe(404);
    expect((await t.inject({ url: '/media/videos/../../etc/passwd' })).statusCode).toBe(404);
  });

  it('serve byte ranges with 206 and refuse unsatisfiable ones with 416', async () => {
    t.deps.clock.advance(10);
    const part = await t.inject({ url: URL_PATH, headers: { range: 'bytes=100-199' } });
    expect(part.statusCode).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes 100-199/${clip.length}`);
    expect(part.rawPayload.equals(clip.subarray(100, 200))).toBe(true);

    const tail = await t.inject({ url: URL_PATH, headers: { range: 'bytes=-50' } });
    expect(tail.statusCode).toBe(206);
    expect(tail.rawPayload.equals(clip.subarray(clip.length - 50))).toBe(true);

    const bad = await t.inject({ url: URL_PATH, headers: { range: `bytes=${clip.length}-` } });
    expect(bad.statusCode).toBe(416);
    expect(bad.headers['content-range']).toBe(`bytes */${clip.length}`);
    expect(bad.headers['content-type']).toBeUndefined();
    expect(bad.headers['cache-control']).toBeUndefined();
    expect(bad.headers['content-length']).toBe('0');
    expect(bad.rawPayload.length).toBe(0);

    const head = await t.inject({ method: 'HEAD', url: URL_PATH });
    expect(head.statusCode).toBe(200);
    expect(head.headers['content-length']).toBe(String(clip.length));
  });
});

describe('parseRange', () => {
  it.each([
    [undefined, { kind: 'full' }],
    ['bytes=0-0', { kind: 'partial', start: 0, end: 0 }],
    ['bytes=10-', { kind: 'partial', start: 10, end: 99 }],
    ['bytes=90-500', { kind: 'partial', start: 90, end: 99 }],
    ['bytes=-10', { kind: 'partial', start: 90, end: 99 }],
    ['bytes=-500', { kind: 'partial', start: 0, end: 99 }],
    ['bytes=100-', { kind: 'unsatisfiable' }],
    ['bytes=5-2', { kind: 'unsatisfiable' }],
    ['bytes=0-1,5-6', { kind: 'full' }],
    ['items=0-1', { kind: 'full' }],
  ])('reads %j of a 100-byte file', (header, expected) => {
    expect(parseRange(header, 100)).toEqual(expected);
  });

  it('cannot be guessed: another task id or token under a known URL is a 404', async () => {
    await t.inject({
      method: 'POST',
      url: '/videogen/v1/videos/text2video',
      headers: { authorization: 'Bearer other' },
      payload: { model_name: 'vid-v1-6', prompt: 'y', duration: '5' },
    });
    t.deps.clock.advance(10);
    const query = await t.inject({
      url: '/videogen/v1/videos/text2video/1000002',
      headers: { authorization: 'Bearer other' },
    });
    const theirs = new URL(query.json().data.task_result.videos[0].url).pathname;
    expect(theirs).not.toContain(MEDIA_TOKEN_1);
    expect((await t.inject({ url: theirs })).statusCode).toBe(200);
    // My token with their id, or their id with a near-miss of their token, finds nothing.
    const [, , , token = '', file = ''] = theirs.split('/');
    const nearMiss = `${token.slice(0, -1)}${token.endsWith('A') ? 'B' : 'A'}`;
    const guesses = [
      `/media/videos/${MEDIA_TOKEN_1}/v1000002.mp4`,
      `/media/videos/${nearMiss}/${file}`,
    ];
    for (const url of guesses) {
      const res = await t.inject({ url });
      expect([res.statusCode, res.json()], url).toEqual([
        404,
        { error: { type: 'not_found_error', message: 'No such video' } },
      ]);
    }
  });
});

describe('result URLs', () => {
  it('are made of a plain Host only: anything else gives the address the client reached', async () => {
    const urlFor = async (host: string) => {
      const created = await t.inject({
        method: 'POST',
        url: '/videogen/v1/videos/text2video',
        headers: { ...KEY, host },
        payload: { model_name: 'vid-v1-6', prompt: 'x', duration: '5' },
      });
      const id = created.json().data.task_id;
      t.deps.clock.advance(10);
      const query = await t.inject({ url: `/videogen/v1/videos/text2video/${id}`, headers: KEY });
      return new URL(query.json().data.task_result.videos[0].url).host;
    };
    const reached = await urlFor('a b');
    expect(reached).toMatch(/^127\.0\.0\.1(:\d+)?$/);
    expect({
      named: await urlFor('Gateway.Example:8080'),
      ipv6: await urlFor('[::1]:4010'),
      path: await urlFor('evil.example/x?y#'),
      userinfo: await urlFor('u:p@evil.example'),
      empty: await urlFor(':80'),
      long: await urlFor(`${'a'.repeat(63)}.`.repeat(300)),
    }).toEqual({
      named: 'gateway.example:8080',
      ipv6: '[::1]:4010',
      path: reached,
      userinfo: reached,
      empty: reached,
      long: reached,
    });
  });
});
