import { createServer } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { realSetTimer, realWait } from '../../src/platform/clock.js';
import { buildTestApp, type TestApp, testDeps } from '../helpers/app.js';
import { startProcess } from '../helpers/process.js';

/** Graceful stop (SIGTERM): what is running finishes, new connections are refused. */

let t: TestApp | undefined;
afterEach(async () => {
  await t?.app.close();
  t = undefined;
});

/** An app whose streams are paced in real time, listening on a free port. */
async function paced(chunkDelayMs: number, replicas = true) {
  const deps = {
    ...testDeps(),
    wait: realWait,
    monotonic: () => performance.now(),
    setTimer: realSetTimer,
  };
  t = await buildTestApp({ streamChunkDelayMs: chunkDelayMs }, deps, replicas);
  return t.app.listen({ port: 0, host: '127.0.0.1' });
}

const streamRequest = (base: string, prompt: string) =>
  fetch(`${base}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
    body: JSON.stringify({
      model: 'gpt-4o',
      stream: true,
      max_tokens: 40,
      messages: [{ role: 'user', content: prompt }],
    }),
  });

describe('drain', () => {
  it('lets a stream in progress finish and refuses new connections meanwhile', async () => {
    const base = await paced(2);
    const res = await streamRequest(base, 'tell me a story');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    const first = await reader.read(); // the stream is under way
    const draining = t?.app.emulator.drain(10_000);
    await expect(fetch(`${base}/_emulator/health`)).rejects.toThrow();
    let text = new TextDecoder().decode(first.value);
    for (let r = await reader.read(); !r.done; r = await reader.read()) {
      text += new TextDecoder().decode(r.value);
    }
    expect(text.trimEnd().endsWith('data: [DONE]')).toBe(true);
    expect(await draining).toEqual({ connectionsCut: 0, left: [], ms: expect.any(Number) });
  });

  it('ends open live journals and journal waits at once: they do not hold it to its deadline', async () => {
    const base = await paced(2);
    const live = await fetch(`${base}/_emulator/journal/stream`);
    const reader = (live.body as ReadableStream<Uint8Array>).getReader();
    await reader.read(); // the live journal's first comment: it is open
    // (whether the wait reaches the journal before the drain begins or after, it ends)
    // (to the process that drains: its waits and live journals are its own)
    const wait = t?.app.inject({ url: '/_emulator/journal/wait?path=/never&timeout_ms=60000' });
    const report = await t?.app.emulator.drain(60_000);
    expect(report).toEqual({ connectionsCut: 0, left: [], ms: expect.any(Number) });
    expect((report?.ms ?? 0) < 30_000).toBe(true);
    expect((await wait)?.statusCode).toBe(408);
    // and a live journal asked for once the stop has begun is refused at once
    const late = await t?.app.inject({ url: '/_emulator/journal/stream' });
    expect([late?.statusCode, late?.json()]).toEqual([
      503,
      { error: { type: 'api_error', message: 'The emulator is shutting down.' } },
    ]);
    for (let r = await reader.read(); !r.done; r = await reader.read());
  });

  it('cuts what is still running at the deadline and says so', async () => {
    const base = await paced(1000);
    const res = await streamRequest(base, 'tell me a story');
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const report = await t?.app.emulator.drain(50);
    expect(report).toEqual({ connectionsCut: 1, left: [], ms: expect.any(Number) });
    await t?.app.close();
    await expect(
      (async () => {
        for (let r = await reader.read(); !r.done; r = await reader.read());
      })(),
    ).rejects.toThrow();
  });

  it('delivers queued callbacks before it returns, and lists the ones it could not', async () => {
    const bodies: string[] = [];
    const hook = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => {
        raw += c;
      });
      req.on('end', () => {
        bodies.push(JSON.parse(raw).task_status);
        res.end();
      });
    });
    await new Promise<void>((ok) => hook.listen(0, '127.0.0.1', ok));
    const address = hook.address();
    const port = typeof address === 'object' && address ? address.port : 0;
    try {
      // In memory, what is queued is the process's own, and a drain waits for it; with shared
      // state it stays in the store for the other replicas (test/state/processes.test.ts).
      await paced(0, false);
      const create = (callback_url: string) =>
        t?.inject({
          method: 'POST',
          url: '/videogen/v1/videos/text2video',
          headers: { authorization: 'Bearer k' },
          payload: { model_name: 'vid-v1-6', prompt: 'a cat', duration: '5', callback_url },
        });
      await create(`http://127.0.0.1:${port}/ok`);
      // A receiver that refuses connections: its notification waits for a retry.
      await create('http://127.0.0.1:9/hook?token=secret');
      t?.deps.clock.advance(2000); // both tasks start processing: two notifications queued
      const report = await t?.app.emulator.drain(5000);
      expect(bodies).toEqual(['processing']);
      expect(report).toEqual({
        connectionsCut: 0,
        left: [
          'callback of task 1000002 (processing) to http://127.0.0.1:9/hook?token=[REDACTED]: 1 attempts',
        ],
        ms: expect.any(Number),
      });
    } finally {
      await new Promise((ok) => hook.close(ok));
    }
  });
});

describe('the process', () => {
  it("writes each request's log line: soon when idle, in batches when busy, all of them by exit", async () => {
    const server = startProcess(process.execPath, ['--import', 'tsx', 'src/server.ts']);
    const url = await server.url();
    const ask = () =>
      fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
        body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] }),
      }).then((res) => res.text());
    const completed = () => server.stdout().split('request completed').length - 1;
    await ask();
    // One line, held at most LOG_FLUSH_MS (100 ms) when nothing else comes.
    await vi.waitFor(() => expect(completed()).toBe(1), { timeout: 5000 });
    await Promise.all(Array.from({ length: 200 }, ask));
    server.child.kill('SIGTERM');
    expect(await server.exited, server.output()).toBe(0);
    expect(completed()).toBe(201);
  }, 30_000);

  it('drains on SIGTERM and exits 0', async () => {
    const server = startProcess(process.execPath, ['--import', 'tsx', 'src/server.ts']);
    await server.url();
    server.child.kill('SIGTERM');
    expect(await server.exited, server.output()).toBe(0);
    const out = server.stdout();
    // pino's stdout writer may hand two lines over swapped: their times tell the order.
    const lines = out
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line) as { time: number; msg: string });
    const started = lines.find((line) => line.msg === 'shutting down: draining');
    const drained = lines.find((line) => line.msg === 'drained');
    expect(started, out).toBeDefined();
    expect(drained, out).toBeDefined();
    expect((drained as { time: number }).time).toBeGreaterThanOrEqual(
      (started as { time: number }).time,
    );
    expect(
      lines
        .slice(-2)
        .map((line) => line.msg)
        .sort(),
      out,
    ).toEqual(['drained', 'shutting down: draining']);
  }, 30_000);
});
