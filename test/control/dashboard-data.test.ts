import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { uiRoutes } from '../../src/control/ui.js';
import { JOURNAL_BODY_LIMIT } from '../../src/harness/journal.js';
import { type Emulator, startEmulator } from '../../src/index.js';
import { STREAM_CAPTURE_BYTES } from '../../src/platform/request.js';
import { buildTestApp, T0, type TestApp } from '../helpers/app.js';

let t: TestApp;
afterEach(() => t?.app.close());

const CACHED = {
  model: 'claude-x',
  max_tokens: 20,
  system: [{ type: 'text', text: 'policy '.repeat(1500), cache_control: { type: 'ephemeral' } }],
  messages: [{ role: 'user', content: 'hi' }],
};

describe('what the dashboard reads', () => {
  it('GET /_emulator/journal/{id}: the entry with its JSON answer; 404 for another session', async () => {
    t = await buildTestApp();
    const answer = (
      await t.chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] })
    ).json();
    const entry = (await t.inject({ url: '/_emulator/journal/req_1' })).json();
    expect(entry).toMatchObject({ id: 'req_1', status: 200, response_truncated: false });
    expect(entry.response).toEqual(answer);
    const other = await t.inject({
      url: '/_emulator/journal/req_1',
      headers: { 'x-emulator-session': 'else' },
    });
    expect(other.statusCode).toBe(404);
    expect((await t.inject({ url: '/_emulator/journal/nope' })).statusCode).toBe(404);
    // the list leaves the answers out
    expect((await t.inject({ url: '/_emulator/journal' })).json().requests[0]).not.toHaveProperty(
      'response',
    );
  });

  it('keeps a large JSON answer as its first JOURNAL_BODY_LIMIT bytes, marked truncated', async () => {
    t = await buildTestApp();
    const answer = await t.chat({
      model: 'm',
      n: 16,
      max_tokens: 200,
      messages: [{ role: 'user', content: 'a long one' }],
    });
    expect(answer.rawPayload.length).toBeGreaterThan(JOURNAL_BODY_LIMIT);
    const entry = (await t.inject({ url: '/_emulator/journal/req_1' })).json();
    expect(entry.response_truncated).toBe(true);
    expect(entry.response).toBe(answer.rawPayload.subarray(0, JOURNAL_BODY_LIMIT).toString());
  });

  it('keeps the first 4000 bytes of a stream as sent, events in order', async () => {
    t = await buildTestApp();
    const short = await t.messages({ ...CACHED, stream: true });
    const entry = (await t.inject({ url: '/_emulator/journal/req_1' })).json();
    expect(entry.response).toBe(short.body);
    expect(entry.response_truncated).toBe(false);
    const events = [...entry.response.matchAll(/^event: (\w+)/gm)].map((m) => m[1]);
    expect(events.slice(0, 2)).toEqual(['message_start', 'content_block_start']);
    expect(events.at(-1)).toBe('message_stop');
    // A longer stream: its first 4000 bytes, marked truncated.
    const long = await t.chat({
      model: 'm',
      stream: true,
      n: 8,
      messages: [{ role: 'user', content: 'a long one' }],
    });
    expect(long.rawPayload.length).toBeGreaterThan(STREAM_CAPTURE_BYTES);
    const cut = (
      await t.inject({ url: `/_emulator/journal/${long.headers['x-request-id']}` })
    ).json();
    expect(cut.response).toBe(long.rawPayload.subarray(0, STREAM_CAPTURE_BYTES).toString());
    expect(cut.response_truncated).toBe(true);
  });

  it('GET /_emulator/cache: entries with tokens, reads and time left, never the text', async () => {
    t = await buildTestApp();
    await t.messages(CACHED);
    await t.messages(CACHED, { headers: { 'x-emulator-session': 's' } });
    t.deps.clock.advance(60_000);
    await t.messages(CACHED);
    const res = await t.inject({ url: '/_emulator/cache?session=default' });
    const { now, entries } = res.json();
    expect(now).toBe(T0 + 60_000);
    expect(entries).toEqual([
      {
        id: expect.stringMatching(/^.{16}$/),
        session: 'default',
        key_hash: expect.stringMatching(/^[\w-]{12}$/),
        model: 'claude-x',
        tokens: expect.any(Number),
        reads: 1,
        created_at: T0,
        expires_at: T0 + 60_000 + 300_000,
        ttl_ms: 300_000,
        time_left_ms: 300_000,
      },
    ]);
    expect(res.body).not.toContain('policy');
    expect((await t.inject({ url: '/_emulator/cache' })).json().entries).toHaveLength(2);
  });

  it('GET /_emulator/tasks: progress on the emulator clock', async () => {
    t = await buildTestApp();
    await t.video('text2video', { model_name: 'vid-v1-6', prompt: 'a cat', duration: '5' });
    const progress = async () =>
      (await t.inject({ url: '/_emulator/tasks' })).json().tasks[0].progress;
    expect(await progress()).toBe(0);
    t.deps.clock.advance(5000);
    expect(await progress()).toBe(50);
    t.deps.clock.advance(5000);
    expect(await progress()).toBe(100);
  });

  it('GET /_emulator/tasks?limit=n: the newest n, oldest first, and how many there are', async () => {
    t = await buildTestApp();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await t.video('text2video', {
        model_name: 'vid-v1-6',
        prompt: `cat ${i}`,
        duration: '5',
      });
      ids.push(res.json().data.task_id);
    }
    const list = async (query: string) =>
      (await t.inject({ url: `/_emulator/tasks${query}` })).json();
    const two = await list('?limit=2');
    expect(two.size).toBe(5);
    expect(two.tasks.map((task: { task_id: string }) => task.task_id)).toEqual(ids.slice(3));
    const all = await list('');
    expect(all.size).toBe(5);
    expect(all.tasks.map((task: { task_id: string }) => task.task_id)).toEqual(ids);
    expect((await t.inject({ url: '/_emulator/tasks?limit=0' })).statusCode).toBe(400);
    expect((await t.inject({ url: '/_emulator/tasks?limit=10001' })).statusCode).toBe(400);
  });
});

describe('GET /_emulator/journal/stream', () => {
  let emu: Emulator;
  afterEach(() => emu?.close());

  it('sends each entry as it is journaled, only the session asked for', async () => {
    emu = await startEmulator();
    const res = await fetch(`${emu.url}/_emulator/journal/stream?session=a`);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const reader = (res.body as ReadableStream<Uint8Array>)
      .pipeThrough(new TextDecoderStream())
      .getReader();
    const ask = (session: string) =>
      fetch(`${emu.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer k',
          'content-type': 'application/json',
          'x-emulator-session': session,
        },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: session }] }),
      });
    await ask('b');
    await ask('a');
    let text = '';
    while (!text.includes('event: entry')) text += (await reader.read()).value ?? '';
    await reader.cancel();
    const frames = text.split('\n\n').filter((f) => f.startsWith('event: entry'));
    expect(frames).toHaveLength(1);
    const entry = JSON.parse((frames[0] as string).split('data: ')[1] as string);
    expect(entry).toMatchObject({ session: 'a', url: '/v1/chat/completions', status: 200 });
  });
});

describe('the dashboard files', () => {
  it('serve without the admin token; the page then asks for it', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'ui-'));
    writeFileSync(join(dir, 'index.html'), '<html><body><p>x</p></body></html>');
    writeFileSync(join(dir, 'app.js'), 'void 0;');
    const app = Fastify();
    await app.register(uiRoutes(true, dir), { prefix: '/_emulator' });
    const page = await app.inject({ url: '/_emulator/ui' });
    expect(page.statusCode).toBe(200);
    expect(page.headers['content-type']).toBe('text/html; charset=utf-8');
    // no other site may frame it (clickjacking its buttons)
    expect(page.headers['x-frame-options']).toBe('DENY');
    expect(page.headers['content-security-policy']).toBe("frame-ancestors 'none'");
    expect(page.headers['x-content-type-options']).toBe('nosniff');
    expect(page.body).toBe('<html><body data-token="required"><p>x</p></body></html>');
    const script = await app.inject({ url: '/_emulator/ui/app.js' });
    expect(script.headers['content-type']).toBe('text/javascript; charset=utf-8');
    const missing = await app.inject({ url: '/_emulator/ui/app.css' });
    expect(missing.statusCode).toBe(503);
    expect((await app.inject({ url: '/_emulator/ui/secret.txt' })).statusCode).toBe(404);
    await app.close();
  });

  it('are open on an emulator with a token, unlike its data', async () => {
    t = await buildTestApp({ adminToken: 'admin' });
    const page = await t.inject({ url: '/_emulator/ui/favicon.svg' });
    expect(page.statusCode).not.toBe(401);
    expect((await t.inject({ url: '/_emulator/tasks' })).statusCode).toBe(401);
    expect((await t.inject({ url: '/_emulator/journal/stream' })).statusCode).toBe(401);
  });
});
