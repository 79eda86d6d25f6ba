import { afterEach, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
afterEach(() => t?.app.close());

const S = (session: string) => ({ 'x-emulator-session': session });
const TASK = { model_name: 'vid-v1-6', prompt: 'a cat', duration: '5' };
/** A system prompt past the cache minimum, with a breakpoint. */
const CACHED = {
  model: 'claude-x',
  max_tokens: 20,
  system: [{ type: 'text', text: 'policy '.repeat(1500), cache_control: { type: 'ephemeral' } }],
  messages: [{ role: 'user', content: 'hi' }],
};

const control = (
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  session?: string,
  payload?: object,
) => t.inject({ method, url, headers: session ? S(session) : {}, ...(payload ? { payload } : {}) });

describe('sessions (x-emulator-session)', () => {
  it('scope video tasks: another session with the same key neither finds nor lists them', async () => {
    t = await buildTestApp();
    const created = await t.video('text2video', TASK, { headers: S('a') });
    const id = created.json().data.task_id;
    expect((await t.video(`text2video/${id}`, undefined, { headers: S('a') })).statusCode).toBe(
      200,
    );
    const other = await t.video(`text2video/${id}`, undefined, { headers: S('b') });
    expect(other.statusCode).toBe(404);
    expect((await t.video(`text2video/${id}`)).statusCode).toBe(404);
    expect(
      (await t.video('text2video?pageNum=1&pageSize=30', undefined, { headers: S('b') })).json()
        .data,
    ).toEqual([]);
    // an external id may be reused in another session
    const ext = { ...TASK, external_task_id: 'order-1' };
    expect((await t.video('text2video', ext, { headers: S('a') })).statusCode).toBe(200);
    expect((await t.video('text2video', ext, { headers: S('b') })).statusCode).toBe(200);
    expect((await t.video('text2video', ext, { headers: S('a') })).statusCode).toBe(400);
    // the result URL (like a CDN link) needs no session
    t.deps.clock.advance(60_000);
    const done = await t.video(`text2video/${id}`, undefined, { headers: S('a') });
    const url = new URL(done.json().data.task_result.videos[0].url);
    expect((await t.inject({ url: url.pathname })).statusCode).toBe(200);
  });

  it('scope forcing a task and reading callbacks: another session cannot force it', async () => {
    t = await buildTestApp();
    const created = await t.video(
      'text2video',
      { ...TASK, callback_url: 'http://127.0.0.1:9/hook' },
      { headers: S('a') },
    );
    const id = created.json().data.task_id;
    const force = (session?: string) =>
      control('POST', `/_emulator/tasks/${id}`, session, { status: 'failed' });
    const refused = await force('b');
    expect(refused.statusCode).toBe(404);
    expect(refused.json()).toEqual({
      error: { type: 'not_found_error', message: `No task ${id}` },
    });
    const state = (await control('GET', '/_emulator/tasks?session=a')).json().tasks[0];
    expect(state.task_status).toBe('submitted');
    expect((await force('a')).json().task_status).toBe('failed');
    expect((await force()).statusCode, 'without a session, any task').toBe(200);
    await t.app.emulator.callbacks.idle();
    const deliveries = async (url: string, session?: string) =>
      (await control('GET', url, session)).json().callbacks.length;
    expect(await deliveries('/_emulator/callbacks?session=a')).toBeGreaterThan(0);
    expect(await deliveries('/_emulator/callbacks', 'a')).toBeGreaterThan(0);
    expect(await deliveries('/_emulator/callbacks?session=b')).toBe(0);
  });

  it('scope the prompt cache', async () => {
    t = await buildTestApp();
    const usage = async (session: string) =>
      (await t.messages(CACHED, { headers: S(session) })).json().usage;
    const first = await usage('a');
    expect(first.cache_creation_input_tokens).toBeGreaterThan(0);
    expect((await usage('a')).cache_read_input_tokens).toBe(first.cache_creation_input_tokens);
    const other = await usage('b');
    expect(other.cache_read_input_tokens).toBe(0);
    expect(other.cache_creation_input_tokens).toBe(first.cache_creation_input_tokens);
  });

  it('scope faults and stubs to the session that added them', async () => {
    t = await buildTestApp();
    await control('POST', '/_emulator/faults', 'a', { match: { group: 'chat' }, status: 503 });
    await control('POST', '/_emulator/replies', 'b', { reply: 'stub of b' });
    const ask = (session?: string) =>
      t.chat(
        { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
        session ? { headers: S(session) } : {},
      );
    expect((await ask('a')).statusCode).toBe(503);
    const b = await ask('b');
    expect(b.statusCode).toBe(200);
    expect(b.json().choices[0].message.content).toBe('stub of b');
    const plain = await ask();
    expect(plain.statusCode).toBe(200);
    expect(plain.json().choices[0].message.content).not.toBe('stub of b');
    // a control call with the header sees only its session; without it, every session
    expect((await control('GET', '/_emulator/faults', 'b')).json().faults).toEqual([]);
    expect((await control('GET', '/_emulator/faults')).json().faults).toHaveLength(1);
    expect((await control('GET', '/_emulator/replies', 'a')).json().replies).toEqual([]);
    // ?session= narrows a read as the header does
    expect((await control('GET', '/_emulator/faults?session=b')).json().faults).toEqual([]);
    expect(
      (await control('GET', '/_emulator/faults?session=a'))
        .json()
        .faults.map((f: { session: string }) => f.session),
    ).toEqual(['a']);
    expect((await control('GET', '/_emulator/replies?session=a')).json().replies).toEqual([]);
    expect((await control('GET', '/_emulator/replies?session=b')).json().replies).toHaveLength(1);
    expect((await control('GET', '/_emulator/faults?session=a', 'b')).statusCode).toBe(400);
    expect(
      (await control('DELETE', '/_emulator/replies/1', 'a')).statusCode,
      'another session cannot remove it',
    ).toBe(404);
  });

  it('reset?session= empties one session and leaves the others and the clock', async () => {
    t = await buildTestApp();
    const a = await t.video('text2video', TASK, { headers: S('a') });
    const b = await t.video('text2video', TASK, { headers: S('b') });
    await control('POST', '/_emulator/faults', 'a', { path: '/nowhere', status: 500 });
    await control('POST', '/_emulator/faults', 'b', { path: '/nowhere', status: 500 });
    await control('POST', '/_emulator/replies', 'a', { reply: 'a' });
    await t.messages(CACHED, { headers: S('a') });
    await t.messages(CACHED, { headers: S('b') });
    t.deps.clock.advance(1000);
    const before = (await control('GET', '/_emulator/clock')).json().now;

    const reset = await control('POST', '/_emulator/reset?session=a');
    expect(reset.json()).toEqual({ status: 'ok' });

    const tasks = (await control('GET', '/_emulator/tasks')).json().tasks;
    expect(
      tasks.map((task: { task_id: string; session: string }) => [task.task_id, task.session]),
    ).toEqual([[b.json().data.task_id, 'b']]);
    expect(a.json().data.task_id).not.toBe(b.json().data.task_id);
    expect(
      (await control('GET', '/_emulator/faults'))
        .json()
        .faults.map((f: { session: string }) => f.session),
    ).toEqual(['b']);
    expect((await control('GET', '/_emulator/replies')).json().replies).toEqual([]);
    const journal = (await control('GET', '/_emulator/journal')).json().requests;
    expect(new Set(journal.map((e: { session: string }) => e.session))).toEqual(new Set(['b']));
    // the cache of a is gone, b's is kept
    expect(
      (await t.messages(CACHED, { headers: S('a') })).json().usage.cache_read_input_tokens,
    ).toBe(0);
    expect(
      (await t.messages(CACHED, { headers: S('b') })).json().usage.cache_read_input_tokens,
    ).toBeGreaterThan(0);
    expect((await control('GET', '/_emulator/clock')).json().now).toBe(before);
    // the header works as well as the query
    await control('POST', '/_emulator/reset', 'b');
    expect((await control('GET', '/_emulator/tasks')).json().tasks).toEqual([]);
  });

  it('reset?only= names parts; with a session, only those parts of it', async () => {
    t = await buildTestApp();
    await t.video('text2video', TASK, { headers: S('a') });
    await control('POST', '/_emulator/faults', 'a', { path: '/nowhere', status: 500 });
    await control('POST', '/_emulator/reset?only=faults&session=a');
    expect((await control('GET', '/_emulator/faults')).json().faults).toEqual([]);
    expect((await control('GET', '/_emulator/tasks')).json().tasks).toHaveLength(1);
    const bad = await control('POST', '/_emulator/reset?only=everything');
    expect(bad.statusCode).toBe(400);
    expect(bad.json().error.message).toContain('only');
  });

  it('refuse a malformed session name, in the group envelope', async () => {
    t = await buildTestApp();
    const res = await t.chat(
      { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
      { headers: { 'x-emulator-session': 'has space' } },
    );
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: {
        message: 'x-emulator-session must be 1 to 200 printable ASCII characters without spaces',
        type: 'invalid_request_error',
        param: null,
        code: null,
      },
    });
    const control400 = await control('GET', '/_emulator/faults', 'x'.repeat(201));
    expect(control400.statusCode).toBe(400);
  });

  it('DELETE /_emulator/journal and /faults/{id} with the header touch only that session', async () => {
    t = await buildTestApp();
    const ask = (session: string) =>
      t.chat({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }, { headers: S(session) });
    await ask('a');
    await ask('b');
    expect((await control('DELETE', '/_emulator/journal', 'a')).json()).toEqual({ status: 'ok' });
    const left = (await control('GET', '/_emulator/journal')).json().requests;
    expect(left.map((e: { session: string }) => e.session)).toEqual(['b']);
    await control('POST', '/_emulator/faults', 'a', { path: '/nowhere', status: 500 });
    expect((await control('DELETE', '/_emulator/faults/1', 'b')).statusCode).toBe(404);
    expect((await control('DELETE', '/_emulator/faults/1', 'a')).json()).toEqual({ status: 'ok' });
    expect((await control('GET', '/_emulator/faults')).json().faults).toEqual([]);
  });
});
