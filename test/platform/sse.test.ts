import { request } from 'node:http';
import { connect } from 'node:net';
import Fastify from 'fastify';
import { describe, expect, it } from 'vitest';
import { realSetTimer } from '../../src/platform/clock.js';
import {
  frameTemplate,
  jsonPieces,
  jsonString,
  onePiece,
  type Pieces,
  SINK_CHUNKS_KEPT,
  type SseOptions,
  type SseProducer,
  type SseResult,
  SseSink,
  sendSse,
  YIELD_BYTES,
} from '../../src/platform/sse.js';
import { splitTokens } from '../../src/platform/tokens.js';
import { countingWait } from '../helpers/app.js';

const text = (sink: SseSink) => Buffer.concat(sink.take()).toString();

/** The pieces as the JSON string literals they encode. */
const literals = (pieces: Pieces) =>
  Array.from(pieces.ends, (end, i) =>
    pieces.bytes.toString('utf8', i === 0 ? 0 : pieces.ends[i - 1], end),
  );

describe('the sink', () => {
  it('encodes events, data frames and template frames, counting events', () => {
    const sink = new SseSink();
    sink.event('ping', '{"type":"ping"}');
    sink.data('[x]');
    const template = frameTemplate('delta', (piece) => ({ type: 'delta', text: piece }));
    sink.piece(template, onePiece('a "quoted" é'), 0);
    sink.closing('data: [DONE]\n\n');
    expect(sink.events).toBe(3);
    expect(text(sink)).toBe(
      'event: ping\ndata: {"type":"ping"}\n\ndata: [x]\n\nevent: delta\ndata: {"type":"delta","text":"a \\"quoted\\" é"}\n\ndata: [DONE]\n\n',
    );
    expect(text(sink)).toBe('');
  });

  it('cuts texts into JSON pieces of n tokens, encoded back to back, the same for the same text', () => {
    expect(literals(jsonPieces('Hello, "world" and more', 2))).toEqual([
      '"Hello"',
      '", \\""',
      '"world"',
      '"\\" and"',
      '" more"',
    ]);
    expect(jsonPieces('Hello, "world" and more', 2)).toBe(jsonPieces('Hello, "world" and more', 2));
    expect(literals(jsonPieces('été 🦊 naïve', 1))).toEqual(
      splitTokens('été 🦊 naïve', 1).map((p) => JSON.stringify(p)),
    );
    const long = 'word '.repeat(10_000);
    expect(literals(jsonPieces(long, 4)).join('')).toBe(
      splitTokens(long, 4)
        .map((p) => JSON.stringify(p))
        .join(''),
    );
  });

  it('writes template frames of short, long and multi-byte pieces, across chunks', () => {
    const template = frameTemplate('delta', (piece) => ({ type: 'delta', text: piece }));
    const texts = ['a', 'é🦊', 'x'.repeat(100), 'y'.repeat(20_000)];
    const sink = new SseSink();
    const expected: string[] = [];
    // Enough frames that some land on a chunk's boundary.
    for (let round = 0; round < 200; round++) {
      for (const t of texts) {
        sink.piece(template, onePiece(t), 0);
        expected.push(`event: delta\ndata: ${JSON.stringify({ type: 'delta', text: t })}\n\n`);
      }
    }
    const pieces = jsonPieces('one two three four', 1);
    for (let i = 0; i < pieces.ends.length; i++) {
      sink.piece(template, pieces, i);
      const piece = splitTokens('one two three four', 1)[i] as string;
      expected.push(`event: delta\ndata: ${JSON.stringify({ type: 'delta', text: piece })}\n\n`);
    }
    expect(sink.events).toBe(expected.length);
    expect(text(sink)).toBe(expected.join(''));
  });

  it('writes all pieces as one run of frames, made once per text and template, as the frames one by one', () => {
    const reply = 'The fox "runs" past é🦊 snow\nand into dawn. '.repeat(20);
    const delta = frameTemplate('delta', (piece) => ({ type: 'delta', text: piece }));
    const other = frameTemplate('other', (piece) => ({ index: 1, text: piece }));
    const oneByOne = (template: typeof delta) => {
      const sink = new SseSink();
      const pieces = jsonPieces(reply, 4);
      for (let i = 0; i < pieces.ends.length; i++) sink.piece(template, pieces, i);
      return { events: sink.events, text: text(sink) };
    };
    const whole = (template: typeof delta) => {
      const sink = new SseSink();
      sink.data('first');
      expect(sink.pieces(template, jsonPieces(reply, 4))).toBe(true);
      return { events: sink.events - 1, text: text(sink).slice('data: first\n\n'.length) };
    };
    const expected = oneByOne(delta);
    expect(expected.events).toBe(splitTokens(reply, 4).length);
    expect(whole(delta)).toEqual(expected);
    const made = jsonPieces(reply, 4).frames;
    expect(whole(delta)).toEqual(expected);
    expect(jsonPieces(reply, 4).frames).toBe(made); // the same run, not made again
    // Another template makes its own frames.
    expect(whole(other)).toEqual(oneByOne(other));
    expect(whole(delta)).toEqual(expected);
  });

  it('leaves pieces to be written one by one under a fault limit or past 64 KiB of frames', () => {
    const delta = frameTemplate('delta', (piece) => ({ type: 'delta', text: piece }));
    const limited = new SseSink();
    limited.limit = 3;
    expect(limited.pieces(delta, jsonPieces('one two three four five', 1))).toBe(false);
    expect(limited.events).toBe(0);
    expect(text(limited)).toBe('');
    const long = new SseSink();
    expect(long.pieces(delta, jsonPieces('word '.repeat(6000), 4))).toBe(false);
    expect(text(long)).toBe('');
  });

  it('keeps large and many frames whole across its chunks', () => {
    const sink = new SseSink();
    const big = 'x'.repeat(40_000);
    sink.data(big);
    for (let i = 0; i < 5000; i++) sink.data(`é${i}`);
    const out = text(sink);
    expect(out.startsWith(`data: ${big}\n\ndata: é0\n\n`)).toBe(true);
    expect(out.endsWith('data: é4999\n\n')).toBe(true);
    expect(out.split('\n\n').length - 1).toBe(5001);
  });

  it('gives its chunks back once released, for the next sink to fill', () => {
    const first = new SseSink();
    first.data('a'.repeat(20_000)); // more than a chunk: a chunk is sealed and handed over
    first.data('b'.repeat(3000));
    const handed = first.take().map((part) => part.buffer);
    first.release();
    const second = new SseSink();
    second.data('c'.repeat(20_000));
    second.data('d'.repeat(3000));
    const reused = second.take().map((part) => part.buffer);
    expect(reused.some((buffer) => handed.includes(buffer))).toBe(true);
  });

  it(`keeps at most ${SINK_CHUNKS_KEPT} of its chunks for the pool: the rest are freed once written`, () => {
    const sink = new SseSink();
    let handed = 0;
    for (let i = 0; i < 200; i++) {
      sink.data('z'.repeat(10_000));
      if (sink.due) handed += sink.take().length; // the socket would write and drop these
    }
    expect(handed).toBeGreaterThan(SINK_CHUNKS_KEPT * 4);
    expect((sink as unknown as { chunks: unknown[] }).chunks).toHaveLength(SINK_CHUNKS_KEPT);
  });

  it('holds no chunk while it rests between frames: another sink fills it meanwhile', () => {
    const earlier = new SseSink();
    earlier.data('a'.repeat(3000)); // more than is copied out: the chunk itself is handed over
    const [handed] = earlier.take();
    earlier.release();
    const chunk = handed?.buffer;
    const paced = new SseSink();
    paced.data('first frame'); // fills the chunk `earlier` gave back
    expect(text(paced)).toBe('data: first frame\n\n');
    paced.rest();
    const other = new SseSink();
    other.data('b'.repeat(3000));
    const [part] = other.take();
    expect(part?.buffer).toBe(chunk);
    // The paced sink's next frame goes into a chunk of its own, not the one `other` handed over.
    paced.data('c'.repeat(3000));
    const [next] = paced.take();
    expect(next?.buffer).not.toBe(chunk);
    expect(next?.toString()).toBe(`data: ${'c'.repeat(3000)}\n\n`);
    expect(part?.toString()).toBe(`data: ${'b'.repeat(3000)}\n\n`);
  });

  it('says when pending bytes are due, and drops events past a fault limit with the closing one', () => {
    const sink = new SseSink();
    sink.limit = 2;
    sink.data('a');
    expect(sink.stopped).toBe(false);
    sink.data('b');
    sink.data('c');
    sink.closing('data: [DONE]\n\n');
    expect(sink.stopped).toBe(true);
    expect(text(sink)).toBe('data: a\n\ndata: b\n\n');
    const due = new SseSink();
    while (!due.due) due.data('y'.repeat(1000));
    const pending = Buffer.concat(due.take()).length;
    expect(pending).toBeGreaterThanOrEqual(256 * 1024);
    expect(pending).toBeLessThan(256 * 1024 + 1100);
  });

  it('quotes text as JSON, escaping only when needed', () => {
    for (const t of [
      'plain words',
      'a "quote"',
      'back\\slash',
      'line\nbreak',
      '\u0001',
      '\ud800',
      '😀',
      '',
    ]) {
      expect(JSON.parse(jsonString(t))).toBe(t);
      expect(jsonString(t)).toBe(JSON.stringify(t));
    }
  });
});

/** A server whose single route streams `produce` through the writer. */
async function serve(produce: SseProducer, options: Partial<SseOptions> = {}) {
  const app = Fastify({ logger: false });
  let settle: (result: Promise<SseResult>) => void = () => {};
  const finished = new Promise<SseResult>((resolve) => {
    settle = resolve;
  });
  app.get('/', async (_req, reply) => {
    reply.header('x-extra', 'yes');
    const outcome = sendSse(reply, produce, {
      wait: (_ms, fn) => ({ cancel: realSetTimer(fn, 0) }),
      monotonic: () => performance.now(),
      setTimer: realSetTimer,
      stallMs: 30_000,
      ...options,
    });
    settle(outcome);
    await outcome;
    return reply;
  });
  await app.listen({ port: 0, host: '127.0.0.1' });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  return { app, port, result: () => finished };
}

describe('sendSse', () => {
  it('writes every frame in order with the SSE headers, and reports the bytes', async () => {
    const { app, port, result } = await serve(function* (sink) {
      sink.data('a');
      yield 1;
      sink.event('x', 'b');
      sink.closing('data: c\n\n');
    });
    const res = await fetch(`http://127.0.0.1:${port}/`);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('x-extra')).toBe('yes');
    const body = await res.text();
    expect(body).toBe('data: a\n\nevent: x\ndata: b\n\ndata: c\n\n');
    expect(await result()).toEqual({ completed: true, bytes: Buffer.byteLength(body) });
    await app.close();
  });

  it(`lets other work run every ${YIELD_BYTES} bytes of a stream that is never paced`, async () => {
    const frame = 'x'.repeat(16 * 1024);
    const frames = 256; // 4 MiB
    let turns = 0;
    let writing = true;
    const { app } = await serve(function* (sink) {
      const other = () => {
        turns++;
        if (writing) setImmediate(other);
      };
      setImmediate(other);
      turns = 0;
      for (let i = 0; i < frames; i++) {
        sink.data(frame);
        yield 0;
      }
      writing = false;
    });
    // (inject's response takes every write at once, as a fast reader on loopback does)
    const body = (await app.inject({ url: '/' })).body;
    expect(body.length).toBe(frames * (frame.length + 8));
    expect(turns).toBeGreaterThanOrEqual(Math.floor((frames * frame.length) / YIELD_BYTES) - 1);
    await app.close();
  });

  it('cuts the stream for a fault: the first events, never the closing one, then the error', async () => {
    const { app, port } = await serve(
      function* (sink) {
        for (let i = 0; i < 10; i++) {
          if (sink.stopped) return;
          sink.data(String(i));
          yield 0;
        }
        sink.closing('data: [DONE]\n\n');
      },
      { fault: { afterEvents: 3, error: 'data: {"error":{}}\n\n' } },
    );
    expect(await (await fetch(`http://127.0.0.1:${port}/`)).text()).toBe(
      'data: 0\n\ndata: 1\n\ndata: 2\n\ndata: {"error":{}}\n\n',
    );
    await app.close();
  });

  it('stops writing and pausing as soon as the client goes away', async () => {
    const sleeps = { count: 0 };
    const { app, port, result } = await serve(
      function* (sink) {
        for (let i = 0; i < 1000; i++) {
          yield 5;
          sink.data(String(i));
        }
      },
      { wait: countingWait(sleeps) },
    );
    await new Promise<void>((resolve) => {
      const req = request({ port, host: '127.0.0.1', path: '/' }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.end();
    });
    expect(await result()).toMatchObject({ completed: false, reason: 'client closed' });
    const atAbort = sleeps.count;
    await new Promise((r) => setTimeout(r, 50));
    expect(sleeps.count).toBe(atAbort);
    expect(sleeps.count).toBeLessThan(1000);
    await app.close();
  });

  it('cancels a long pause at once when the client goes away, so nothing holds the stream', async () => {
    const waits: Array<{ ms: number; cancelled: boolean }> = [];
    const { app, port, result } = await serve(
      function* (sink) {
        sink.data('first');
        yield 60_000;
        sink.data('never');
      },
      {
        wait: (ms) => {
          const wait = { ms, cancelled: false };
          waits.push(wait);
          return {
            cancel: () => {
              wait.cancelled = true;
            },
          };
        },
      },
    );
    await new Promise<void>((resolve) => {
      const req = request({ port, host: '127.0.0.1', path: '/' }, (res) => {
        res.once('data', () => {
          req.destroy();
          resolve();
        });
      });
      req.end();
    });
    expect(await result()).toMatchObject({ completed: false, reason: 'client closed' });
    expect(waits).toEqual([{ ms: expect.closeTo(60_000, 0), cancelled: true }]);
    await app.close();
  });

  it('sends every stream whole while streams before it give their chunks to streams after', async () => {
    let next = 0;
    const { app, port } = await serve(function* (sink) {
      const id = next++;
      for (let i = 0; i < 40; i++) {
        sink.data(`${id}:${i}:${String(id * 1000 + i).repeat(400)}`);
        if (sink.due) yield 0;
      }
    });
    const expected = (id: number) =>
      Array.from(
        { length: 40 },
        (_, i) => `data: ${id}:${i}:${String(id * 1000 + i).repeat(400)}\n\n`,
      ).join('');
    for (let round = 0; round < 3; round++) {
      const bodies = await Promise.all(
        Array.from({ length: 8 }, async () => (await fetch(`http://127.0.0.1:${port}/`)).text()),
      );
      for (const body of bodies) {
        const id = Number(body.slice(6, body.indexOf(':', 6)));
        expect(body).toBe(expected(id));
      }
    }
    await app.close();
  });

  it('ends a stream whose last frames span many chunks with every byte in order', async () => {
    const frames = Array.from({ length: 300 }, (_, i) => `${i}:${'é'.repeat(500 + (i % 7))}`);
    const { app, port, result } = await serve(function* (sink) {
      yield 0; // before any frame: nothing to flush
      for (const frame of frames) sink.data(frame); // ~300 KB, no pause: all left for the end
      sink.closing('data: [DONE]\n\n');
    });
    const body = await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(body).toBe(`${frames.map((f) => `data: ${f}\n\n`).join('')}data: [DONE]\n\n`);
    expect(await result()).toEqual({ completed: true, bytes: Buffer.byteLength(body) });
    await app.close();
  });

  it('sends paced streams whole while each lends its chunk to the others between frames', async () => {
    let next = 0;
    const frame = (id: number, i: number) =>
      `${id}:${i}:${String(id * 1000 + i).repeat(i % 3 === 0 ? 600 : 3)}`;
    const { app, port } = await serve(function* (sink) {
      const id = next++;
      for (let i = 0; i < 30; i++) {
        sink.data(frame(id, i));
        yield 1;
      }
    });
    const bodies = await Promise.all(
      Array.from({ length: 8 }, async () => (await fetch(`http://127.0.0.1:${port}/`)).text()),
    );
    for (const body of bodies) {
      const id = Number(body.slice(6, body.indexOf(':', 6)));
      expect(body).toBe(Array.from({ length: 30 }, (_, i) => `data: ${frame(id, i)}\n\n`).join(''));
    }
    await app.close();
  });

  it('runs pauses on deadlines: time spent making frames is taken off the next pause', async () => {
    const asked: number[] = [];
    let now = 0;
    const { app, port } = await serve(
      function* (sink) {
        for (let i = 0; i < 4; i++) {
          yield 50;
          now += 20; // making this frame took 20 ms
          sink.data(String(i));
        }
      },
      {
        monotonic: () => now,
        wait: (ms, fn) => {
          asked.push(ms);
          now += ms;
          return { cancel: realSetTimer(fn, 0) };
        },
      },
    );
    await (await fetch(`http://127.0.0.1:${port}/`)).text();
    expect(asked).toEqual([50, 30, 30, 30]);
    await app.close();
  });

  it('drops a client that stops reading once a write has waited stallMs to drain', async () => {
    const { app, port, result } = await serve(
      function* (sink) {
        for (;;) {
          sink.data('z'.repeat(16_000));
          if (sink.due) yield 0;
        }
      },
      { stallMs: 200 },
    );
    const socket = connect(port, '127.0.0.1');
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    socket.pause(); // never reads
    const outcome = await result();
    expect(outcome).toMatchObject({ completed: false, reason: 'write stalled' });
    expect(outcome.bytes).toBeGreaterThan(64 * 1024);
    socket.destroy();
    await app.close();
  });

  it('destroys the socket when the stream fails after it started, instead of leaving it open', async () => {
    const { app, port, result } = await serve(function* (sink) {
      sink.data('first');
      yield 0;
      throw new Error('bug in a producer');
    });
    const error = await fetch(`http://127.0.0.1:${port}/`)
      .then((res) => res.text())
      .then(
        () => undefined,
        (err: Error) => err,
      );
    expect(error).toBeInstanceOf(Error);
    expect(await result()).toMatchObject({ completed: false, reason: 'error' });
    await app.close();
  });
});
