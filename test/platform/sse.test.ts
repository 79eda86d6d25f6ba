import { request } from 'node:http';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import type { Sleep } from '../../src/platform/clock.js';
import { jsonString, type SseFrame, sendSse, sseData, sseEvent } from '../../src/platform/sse.js';
import { countingSleep } from '../helpers/app.js';

describe('frames', () => {
  it('are encoded with an event line only when they have an event name', () => {
    expect(sseEvent('ping', '{"type":"ping"}', 5)).toEqual({
      text: 'event: ping\ndata: {"type":"ping"}\n\n',
      delayMs: 5,
    });
    expect(sseData('[DONE]')).toEqual({ text: 'data: [DONE]\n\n', delayMs: 0 });
  });

  it('quote text as JSON, escaping only when needed', () => {
    for (const text of [
      'plain words',
      'a "quote"',
      'back\\slash',
      'line\nbreak',
      '\u0001',
      '\ud800',
      '😀',
      '',
    ]) {
      expect(JSON.parse(jsonString(text))).toBe(text);
      expect(jsonString(text)).toBe(JSON.stringify(text));
    }
  });
});

/** A server whose single route streams `frames` through the writer with `sleep`. */
async function serve(frames: SseFrame[], sleep: Sleep) {
  const app = Fastify();
  let finished: Promise<boolean> = Promise.resolve(false);
  app.get('/', async (_req, reply) => {
    reply.header('x-extra', 'yes');
    finished = sendSse(reply, frames, { sleep });
    await finished;
    return reply;
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { app, port, result: () => finished };
}

describe('sendSse', () => {
  it('writes every frame in order with the SSE headers', async () => {
    const frames = [sseData('a'), sseEvent('x', 'b', 1), sseData('c')];
    const { app, port } = await serve(frames, async () => {});
    const res = await fetch(`http://127.0.0.1:${port}/`);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('x-extra')).toBe('yes');
    expect(await res.text()).toBe('data: a\n\nevent: x\ndata: b\n\ndata: c\n\n');
    await app.close();
  });

  it('stops writing and sleeping as soon as the client goes away', async () => {
    const frames = Array.from({ length: 1000 }, (_, i) => sseData(String(i), 5));
    const sleeps = { count: 0 };
    const { app, port, result } = await serve(frames, countingSleep(sleeps));
    await new Promise<void>((resolve) => {
      const req = request({ port, host: '127.0.0.1', path: '/' }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.end();
    });
    expect(await result()).toBe(false);
    const atAbort = sleeps.count;
    await new Promise((r) => setTimeout(r, 50));
    expect(sleeps.count).toBe(atAbort);
    expect(sleeps.count).toBeLessThan(1000);
    await app.close();
  });
});
