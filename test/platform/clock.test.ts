import { describe, expect, it } from 'vitest';
import { realSleep } from '../../src/platform/clock.js';

describe('realSleep (the timer wheel)', () => {
  it('wakes sleeps in the order they end, never early, sharing timers', async () => {
    const woke: number[] = [];
    const began = performance.now();
    const at: number[] = [];
    await Promise.all(
      [10, 0, 5, 5, 0, 20].map((ms, i) =>
        realSleep(ms).then(() => {
          woke.push(i);
          at[i] = performance.now() - began;
        }),
      ),
    );
    // Buckets are whole milliseconds: sleeps 2 ms or more apart wake in order, equal ones FIFO.
    expect(woke).toEqual([1, 4, 2, 3, 0, 5]);
    [10, 0, 5, 5, 0, 20].forEach((ms, i) => {
      expect(at[i]).toBeGreaterThanOrEqual(ms - 1); // whole milliseconds
    });
  });

  it('gives a sleep with a signal its own timer, which the signal cancels', async () => {
    const controller = new AbortController();
    const sleeping = realSleep(60_000, controller.signal);
    controller.abort();
    await expect(sleeping).rejects.toMatchObject({ name: 'AbortError' });
  });
});
