import { afterEach, describe, expect, it } from 'vitest';
import { STREAM_TIMELINE_WRITES, StreamCapture } from '../../src/platform/request.js';
import { splitTokens } from '../../src/platform/tokens.js';
import { generateReply } from '../../src/text/default-reply.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

const AUTH = { authorization: 'Bearer test-key' };

let t: TestApp | undefined;
afterEach(() => t?.app.close());

const chat = (app: TestApp, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { ...AUTH, 'x-emulator-stream-delay-ms': '50', ...headers },
    payload: {
      model: 'chat-model',
      messages: [{ role: 'user', content: 'Hello there' }],
      stream: true,
    },
  });

/** The one journaled request's detail. */
const detail = async (app: TestApp) => {
  const [entry] = (await app.inject({ method: 'GET', url: '/_emulator/journal' })).json().requests;
  return (await app.inject({ method: 'GET', url: `/_emulator/journal/${entry.id}` })).json();
};

describe("a stream's timeline in the journal", () => {
  it('has each write at its pace from the arrival, the first content after the ttft', async () => {
    t = await buildTestApp({ streamTtftMs: 200 }, undefined, false);
    const res = await chat(t);
    expect(res.statusCode).toBe(200);
    const tokens = splitTokens(generateReply('Hello there', 0).text).length;
    // The filter and role frames at once, each token after its pause (200 ms, then 50 ms),
    // the finish frame 50 ms after the last, with [DONE].
    const writes = [{ at_ms: 0, frames: 2 }];
    for (let i = 0; i < tokens; i++) writes.push({ at_ms: 200 + 50 * i, frames: 1 });
    writes.push({ at_ms: 200 + 50 * tokens, frames: 2 });
    expect((await detail(t)).timeline).toEqual({
      writes,
      writes_dropped: 0,
      frames: tokens + 4,
      first_content_ms: 200,
      cut: null,
    });
  });

  it('times the first content of a messages stream after its ttft, not its opening events', async () => {
    t = await buildTestApp({ streamTtftMs: 300, streamChunkDelayMs: 20 }, undefined, false);
    const res = await t.inject({
      method: 'POST',
      url: '/messages-api/v1/messages',
      headers: { 'x-api-key': 'test-key', 'msgapi-version': '2023-06-01' },
      payload: {
        model: 'm',
        max_tokens: 64,
        stream: true,
        messages: [{ role: 'user', content: 'Hello there' }],
      },
    });
    expect(res.statusCode).toBe(200);
    const timeline = (await detail(t)).timeline;
    // message_start, content_block_start and ping at once; the first delta after 300 ms.
    expect(timeline.writes.slice(0, 3)).toEqual([
      { at_ms: 0, frames: 3 },
      { at_ms: 300, frames: 1 },
      { at_ms: 320, frames: 1 },
    ]);
    expect(timeline.first_content_ms).toBe(300);
    expect(timeline.frames).toBe(res.body.split('\n\n').filter((f) => f !== '').length);
    expect(timeline.cut).toBeNull();
  });

  it('shows where a stream_error fault cut it', async () => {
    t = await buildTestApp({}, undefined, false);
    await t.inject({
      method: 'POST',
      url: '/_emulator/faults',
      payload: { kind: 'stream_error', after_events: 4, status: 500 },
    });
    expect((await chat(t)).statusCode).toBe(200);
    expect((await detail(t)).timeline).toEqual({
      // No ttft: the filter, role and first content frames at once; the 4th frame 50 ms later;
      // 50 ms after it, where the 5th would go, the fault's error frame.
      writes: [
        { at_ms: 0, frames: 3 },
        { at_ms: 50, frames: 1 },
        { at_ms: 100, frames: 1 },
      ],
      writes_dropped: 0,
      frames: 5,
      first_content_ms: 0,
      cut: { kind: 'stream_error', at_ms: 100 },
    });
  });

  it('shows where an after_bytes disconnect cut it', async () => {
    t = await buildTestApp({}, undefined, false);
    await t.inject({
      method: 'POST',
      url: '/_emulator/faults',
      payload: { kind: 'disconnect', after_bytes: 600 },
    });
    await chat(t).catch(() => undefined);
    const timeline = (await detail(t)).timeline;
    expect(timeline.cut).toEqual({ kind: 'after_bytes', at_ms: timeline.writes.at(-1).at_ms });
  });

  it(`keeps the first ${STREAM_TIMELINE_WRITES} writes' times, counts the rest`, () => {
    const capture = new StreamCapture(1000);
    for (let i = 1; i <= STREAM_TIMELINE_WRITES + 3; i++) capture.wrote(1000 + i, i);
    const timeline = capture.timeline();
    expect(timeline.writes.length).toBe(2 * STREAM_TIMELINE_WRITES);
    expect(timeline.writes.slice(-2)).toEqual([STREAM_TIMELINE_WRITES, STREAM_TIMELINE_WRITES]);
    expect({ ...timeline, writes: [] }).toEqual({
      writes: [],
      writesDropped: 3,
      frames: STREAM_TIMELINE_WRITES + 3,
      contentFrame: undefined,
      cut: undefined,
    });
  });
});
