import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';

/** A FIXTURES_DIR whose one rule answers "[long]" with `reply`. */
function longReply(reply: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'fixtures-'));
  mkdirSync(join(dir, 'replies'));
  writeFileSync(
    join(dir, 'replies', 'long.json'),
    JSON.stringify({ rules: [{ match: { contains: '[long]' }, reply }] }),
  );
  return dir;
}

let t: TestApp | undefined;
let emulator: Emulator | undefined;
afterEach(async () => {
  await t?.app.close();
  await emulator?.close();
  t = undefined;
  emulator = undefined;
});

const journal = async (url: string) =>
  (
    (await (await fetch(`${url}/_emulator/requests`)).json()) as {
      requests: Array<{ url: string; status: number; aborted: boolean; bytes_sent: number | null }>;
    }
  ).requests;

describe('the stream engine', () => {
  it('streams a paced reply of 128 000 frames (frames are made as they are written)', async () => {
    t = await buildTestApp({ fixturesDir: longReply('w '.repeat(128_000)) });
    const res = await t.chat(
      { model: 'gpt-5.1', stream: true, messages: [{ role: 'user', content: '[long]' }] },
      { headers: { 'x-emulator-stream-delay-ms': '1' } },
    );
    expect(res.statusCode).toBe(200);
    const frames = parseSse(res.body);
    // first frame, role frame, 128 000 content frames (gpt-5.1's output limit: it reasons only
    // when asked to), finish, [DONE]
    expect(frames).toHaveLength(128_004);
    expect(frames.at(-1)).toEqual({ data: '[DONE]' });
    expect(t.deps.sleeps).toHaveLength(128_000);
  });

  it('journals and logs a stream the client left, with the bytes it sent', async () => {
    const logs: string[] = [];
    const logStream = new Writable({
      write(chunk, _encoding, callback) {
        logs.push(String(chunk));
        callback();
      },
    });
    emulator = await startEmulator({
      streamChunkDelayMs: 20,
      logLevel: 'warn',
      deps: { logStream },
    });
    const { url } = emulator;
    const res = await fetch(`${url}/v1/chat/completions`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({
        model: 'm',
        stream: true,
        messages: [{ role: 'user', content: 'hi' }],
      }),
    });
    const reader = res.body?.getReader();
    const first = await reader?.read();
    expect(first?.done).toBe(false);
    await reader?.cancel();
    let entry: Awaited<ReturnType<typeof journal>>[number] | undefined;
    for (let i = 0; i < 100 && !entry; i++) {
      entry = (await journal(url)).find((e) => e.url === '/v1/chat/completions');
      if (!entry) await new Promise((r) => setTimeout(r, 20));
    }
    expect(entry).toMatchObject({ status: 200, aborted: true });
    expect(entry?.bytes_sent).toBeGreaterThan(0);
    const line = logs.map((l) => JSON.parse(l)).find((l) => l.msg === 'stream aborted');
    expect(line).toMatchObject({
      url: '/v1/chat/completions',
      statusCode: 200,
      aborted: true,
      bytesSent: entry?.bytes_sent,
      reason: 'client closed',
    });
  });

  it('drops a client that never reads once a write has stalled STREAM_STALL_TIMEOUT_MS', async () => {
    emulator = await startEmulator({
      streamStallTimeoutMs: 200,
      fixturesDir: longReply('word '.repeat(400_000)),
      logLevel: 'silent',
    });
    const body = JSON.stringify({
      model: 'm',
      stream: true,
      messages: [{ role: 'user', content: '[long]' }],
    });
    const socket = connect(emulator.port, '127.0.0.1');
    socket.write(
      `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
    socket.pause(); // never reads: the server sees its writes stall
    let entry: Awaited<ReturnType<typeof journal>>[number] | undefined;
    for (let i = 0; i < 200 && !entry; i++) {
      entry = (await journal(emulator.url)).find((e) => e.url === '/v1/chat/completions');
      if (!entry) await new Promise((r) => setTimeout(r, 25));
    }
    socket.destroy();
    expect(entry).toMatchObject({ status: 200, aborted: true });
    // It stopped long before the 2 MB reply was out.
    expect(entry?.bytes_sent).toBeLessThan(100 * 1024 * 1024);
  });
});
