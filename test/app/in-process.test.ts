import { afterEach, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator, VerificationError } from '../../src/index.js';

let emu: Emulator;
afterEach(() => emu?.close());

// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked field by field
type Body = any;
const chat = (content: string, headers: Record<string, string> = {}, model = 'm') =>
  fetch(`${emu.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer k', 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ model, messages: [{ role: 'user', content }] }),
  });

describe('startEmulator: the in-process API', () => {
  it('stub, fault, journal, verify, clock, reset, close', async () => {
    emu = await startEmulator();
    expect(emu.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    const stub = await emu.stub({ reply: 'stubbed', times: 1 });
    expect(stub).toMatchObject({ id: 1, session: 'default', remaining: 1 });
    expect(((await (await chat('hi')).json()) as Body).choices[0].message.content).toBe('stubbed');
    const fault = await emu.fault({ match: { model: 'broken' }, status: 500 });
    expect(fault).toMatchObject({ id: 1, kind: 'error', match: { model: 'broken' } });
    expect((await chat('hi', {}, 'broken')).status).toBe(500);
    expect((await emu.journal({ status: 500 })).map((e) => e.model)).toEqual(['broken']);
    expect(await emu.verify({ group: 'chat' }, { exactly: 2 })).toBe(2);
    const before = emu.clock.now();
    emu.clock.advance(5000);
    expect(emu.clock.now()).toBeGreaterThanOrEqual(before + 5000);
    emu.reset();
    expect(await emu.journal()).toEqual([]);
    await expect(emu.fault({ status: 200 } as never)).rejects.toThrow(
      'emulator refused the call (400): status must be greater than or equal to 400',
    );
  });

  it('verify throws a VerificationError that lists the near misses', async () => {
    emu = await startEmulator();
    await chat('hello', {}, 'gpt-a');
    const failure = await emu
      .verify({ model: 'gpt-b', path: '/v1/chat/completions' }, { exactly: 1 })
      .catch((err: unknown) => err);
    expect(failure).toBeInstanceOf(VerificationError);
    const error = failure as VerificationError;
    expect(error.matched).toBe(0);
    const id = error.nearMisses[0]?.request.id;
    expect(error.message).toBe(
      'Expected exactly 1 matching request(s), found 0. Near misses:\n' +
        `  ${id} POST /v1/chat/completions (200): model expected "gpt-b", got "gpt-a"`,
    );
    expect(error.nearMisses[0]?.differences).toEqual([
      { field: 'model', expected: 'gpt-b', actual: 'gpt-a' },
    ]);
  });

  it('a session handle scopes stubs, journal and reset; waitFor sees a request arrive', async () => {
    emu = await startEmulator({ adminToken: 'admin-secret' });
    const a = emu.session('file-a');
    expect(a.headers).toEqual({ 'x-emulator-session': 'file-a' });
    await a.stub({ reply: 'only for a' });
    const waiting = a.waitFor({ group: 'chat' }, 5000);
    const [answerA, answerB] = await Promise.all([
      chat('q', a.headers).then((r) => r.json() as Promise<Body>),
      chat('q').then((r) => r.json() as Promise<Body>),
    ]);
    expect(answerA.choices[0].message.content).toBe('only for a');
    expect(answerB.choices[0].message.content).not.toBe('only for a');
    expect(await waiting).toMatchObject({ session: 'file-a', group: 'chat' });
    expect((await a.journal()).map((e) => e.session)).toEqual(['file-a']);
    expect((await emu.journal()).length).toBe(2);
    a.reset();
    expect(await a.journal()).toEqual([]);
    expect((await emu.journal()).map((e) => e.session)).toEqual(['default']);
  });
});
