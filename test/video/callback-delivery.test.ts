import { describe, expect, it } from 'vitest';
import { createClock } from '../../src/platform/clock.js';
import { Scheduler } from '../../src/platform/scheduler.js';
import { Callbacks, DEFAULT_CALLBACK_OPTIONS } from '../../src/video/callbacks.js';

/** A fetch whose answers the test gives one by one. */
function manualFetch() {
  const calls: Array<{ url: string; body: string; answer(status: number): void }> = [];
  const fake: typeof fetch = (input, init) =>
    new Promise((resolve) => {
      calls.push({
        url: String(input),
        body: String(init?.body),
        answer: (status) => resolve(new Response('ok', { status })),
      });
    });
  return { calls, fake };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

function setup(options: Partial<typeof DEFAULT_CALLBACK_OPTIONS> = {}) {
  const clock = createClock(() => 0);
  const scheduler = new Scheduler(clock, () => () => {});
  const { calls, fake } = manualFetch();
  const callbacks = new Callbacks(clock, scheduler, {
    ...DEFAULT_CALLBACK_OPTIONS,
    fetch: fake,
    ...options,
  });
  return { clock, callbacks, calls };
}

describe('Callbacks', () => {
  it('delivers the notifications of one task one after another, in order', async () => {
    const { callbacks, calls } = setup();
    callbacks.enqueue('t1', 'http://h/a', 'processing', '{"n":1}');
    callbacks.enqueue('t1', 'http://h/a', 'succeed', '{"n":2}');
    callbacks.enqueue('t2', 'http://h/b', 'processing', '{"n":3}');
    expect(calls.map((c) => c.body)).toEqual(['{"n":1}', '{"n":3}']);
    calls[0]?.answer(200);
    await tick();
    expect(calls.map((c) => c.body)).toEqual(['{"n":1}', '{"n":3}', '{"n":2}']);
    calls[1]?.answer(200);
    calls[2]?.answer(200);
    await callbacks.idle();
    expect(callbacks.list().map((d) => [d.task_id, d.task_status, d.state])).toEqual([
      ['t1', 'processing', 'delivered'],
      ['t1', 'succeed', 'delivered'],
      ['t2', 'processing', 'delivered'],
    ]);
  });

  it('keeps at most `concurrency` requests in flight', async () => {
    const { callbacks, calls } = setup({ concurrency: 2 });
    for (const id of ['a', 'b', 'c', 'd']) callbacks.enqueue(id, 'http://h/', 'processing', id);
    expect(calls).toHaveLength(2);
    calls[0]?.answer(202);
    await tick();
    expect(calls).toHaveLength(3);
  });

  it('is bounded: forgets finished deliveries first, then refuses new ones', async () => {
    const { callbacks, calls } = setup({ limit: 2 });
    callbacks.enqueue('a', 'http://h/', 'processing', 'a');
    calls[0]?.answer(200);
    await callbacks.idle();
    callbacks.enqueue('b', 'http://h/', 'processing', 'b');
    callbacks.enqueue('c', 'http://h/', 'processing', 'c');
    expect(callbacks.list().map((d) => d.task_id)).toEqual(['b', 'c']);
    callbacks.enqueue('d', 'http://h/', 'processing', 'd');
    expect(callbacks.list().map((d) => d.task_id)).toEqual(['b', 'c']);
    expect(callbacks.dropped).toBe(1);
  });

  it('retries after 1 s, 2 s, 4 s, 8 s of emulator time, then fails', async () => {
    const { clock, callbacks, calls } = setup();
    callbacks.enqueue('a', 'http://h/', 'failed', 'a');
    for (const wait of [1000, 2000, 4000, 8000]) {
      calls.at(-1)?.answer(500);
      await tick();
      const before = calls.length;
      clock.advance(wait - 1);
      expect(calls.length).toBe(before);
      clock.advance(1);
      expect(calls.length).toBe(before + 1);
    }
    calls.at(-1)?.answer(500);
    await callbacks.idle();
    expect(callbacks.list()).toMatchObject([{ state: 'failed', attempts: 5, last_status: 500 }]);
  });
});
