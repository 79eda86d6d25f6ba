import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { JOURNAL_STREAM_MAX_BUFFERED } from '../../src/control/journal.js';
import { MAX_JOURNAL_WATCHERS } from '../../src/harness/journal.js';
import { buildTestApp, type TestApp, testDeps } from '../helpers/app.js';

let t: TestApp;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const socket of sockets.splice(0)) socket.destroy();
  await t?.app.close();
});

/** A prompt of about 8 KB: each journal entry (and each event) is about that large. */
const PROMPT = 'x'.repeat(8000);
/** More events than any kernel socket buffers plus JOURNAL_STREAM_MAX_BUFFERED could hold. */
const MAX_REQUESTS = 5000;

/**
 * Opens `GET /_emulator/journal/stream` on a raw socket and, once its first bytes arrived (the
 * watcher is registered), stops reading from it: the client that never reads.
 */
async function pausedWatcher(port: number): Promise<{ socket: Socket; received: () => number }> {
  const socket = connect(port, '127.0.0.1');
  sockets.push(socket);
  socket.on('error', () => {});
  let received = 0;
  socket.on('data', (chunk: Buffer) => {
    received += chunk.length;
  });
  await once(socket, 'connect');
  socket.write('GET /_emulator/journal/stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
  await once(socket, 'data');
  socket.pause();
  return { socket, received: () => received };
}

/**
 * A watcher that reads everything as it comes; `until(n)` resolves once it has seen n entries
 * (and rejects if its stream ends first).
 */
async function readingWatcher(url: string) {
  const res = await fetch(`${url}/_emulator/journal/stream`);
  const reader = (res.body as ReadableStream<Uint8Array>)
    .pipeThrough(new TextDecoderStream())
    .getReader();
  let entries = 0;
  let ended = false;
  const waiting = new Set<() => void>();
  const pump = (async () => {
    let text = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += value;
      const frames = text.split('\n\n');
      text = frames.pop() ?? '';
      entries += frames.filter((f) => f.startsWith('event: entry')).length;
      for (const wake of waiting) wake();
    }
  })()
    .catch(() => {})
    .finally(() => {
      ended = true;
      for (const wake of waiting) wake();
    });
  const until = async (n: number) => {
    while (entries < n) {
      if (ended) throw new Error(`the stream ended after ${entries} entries`);
      await new Promise<void>((resolve) => {
        const wake = () => {
          waiting.delete(wake);
          resolve();
        };
        waiting.add(wake);
      });
    }
    return entries;
  };
  return {
    until,
    close: async () => {
      await reader.cancel();
      await pump;
    },
  };
}

describe('GET /_emulator/journal/stream, a client that stops reading', () => {
  it(`is dropped once more than JOURNAL_STREAM_MAX_BUFFERED waits for it; a reader is not`, async () => {
    const deps = testDeps();
    t = await buildTestApp({ logLevel: 'warn' }, deps);
    await t.app.listen({ port: 0, host: '127.0.0.1' });
    const address = t.app.server.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    const url = `http://127.0.0.1:${port}`;

    const paused = await pausedWatcher(port);
    const reader = await readingWatcher(url);
    const dropLines = () =>
      deps.logs
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .filter((line) => line.msg === 'live journal dropped: its client stopped reading');

    let sent = 0;
    while (dropLines().length === 0 && sent < MAX_REQUESTS) {
      const res = await t.chat({ model: 'm', messages: [{ role: 'user', content: PROMPT }] });
      expect(res.statusCode).toBe(200);
      sent++;
    }
    // Dropped at the bound: past it by less than one event, after the kernel's buffers filled.
    const [drop, ...more] = dropLines();
    expect(drop, `not dropped after ${sent} requests`).toBeDefined();
    expect(more).toEqual([]);
    expect(drop).toMatchObject({ level: 40, limitBytes: JOURNAL_STREAM_MAX_BUFFERED, dropped: 1 });
    expect(drop?.reqId).toMatch(/^req_\d+$/);
    const buffered = drop?.bufferedBytes as number;
    expect(buffered).toBeGreaterThan(JOURNAL_STREAM_MAX_BUFFERED);
    expect(buffered).toBeLessThan(JOURNAL_STREAM_MAX_BUFFERED + 2 * PROMPT.length);
    expect(sent).toBeGreaterThan(JOURNAL_STREAM_MAX_BUFFERED / PROMPT.length);

    // The reader saw every entry and stays, with no further drop as requests go on.
    expect(await reader.until(sent)).toBe(sent);
    for (let i = 0; i < 20; i++) {
      await t.chat({ model: 'm', messages: [{ role: 'user', content: PROMPT }] });
    }
    expect(await reader.until(sent + 20)).toBe(sent + 20);
    expect(dropLines()).toHaveLength(1);
    await reader.close();

    // The dropped client's connection was closed: reading again, it finds the end, short of
    // what was journaled (the buffered rest was discarded).
    paused.socket.resume();
    await once(paused.socket, 'close');
    expect(paused.received()).toBeLessThan((sent + 20) * PROMPT.length);
  });
});

describe('HEAD /_emulator/journal/stream', () => {
  it("answers a GET's headers at once and holds no live-journal slot", async () => {
    t = await buildTestApp();
    const address = await t.app.listen({ port: 0, host: '127.0.0.1' });
    for (let i = 0; i < MAX_JOURNAL_WATCHERS + 5; i++) {
      const head = await fetch(`${address}/_emulator/journal/stream`, { method: 'HEAD' });
      expect([i, head.status, head.headers.get('content-type')]).toEqual([
        i,
        200,
        'text/event-stream; charset=utf-8',
      ]);
    }
    // every slot is still free: a live journal opens
    const live = await fetch(`${address}/_emulator/journal/stream`);
    expect(live.status).toBe(200);
    await live.body?.cancel();
  });
});
