import { describe, expect, it } from 'vitest';
import { realWait, sleepWith } from '../../src/platform/clock.js';

describe('realWait (the timer wheel)', () => {
  it('wakes waits in the order they end, never early, sharing timers', async () => {
    const woke: number[] = [];
    const began = performance.now();
    const at: number[] = [];
    await Promise.all(
      [10, 0, 5, 5, 0, 20].map(
        (ms, i) =>
          new Promise<void>((resolve) => {
            realWait(ms, () => {
              woke.push(i);
              at[i] = performance.now() - began;
              resolve();
            });
          }),
      ),
    );
    // Buckets are whole milliseconds: waits 2 ms or more apart wake in order, equal ones FIFO.
    expect(woke).toEqual([1, 4, 2, 3, 0, 5]);
    [10, 0, 5, 5, 0, 20].forEach((ms, i) => {
      expect(at[i]).toBeGreaterThanOrEqual(ms - 1); // whole milliseconds
    });
  });

  it('cancels a wait, and wakes the others of its bucket', async () => {
    const woke: string[] = [];
    realWait(5, () => woke.push('cancelled')).cancel();
    realWait(5, () => woke.push('same bucket'));
    await sleepWith(realWait, 15);
    expect(woke).toEqual(['same bucket']);
  });

  it('wakes the rest of a bucket when one callback throws, and arms for the next', async () => {
    const woke: string[] = [];
    const thrown = new Promise<unknown>((resolve) => {
      // The throw is raised again outside the wheel, as an uncaught exception would be.
      const listeners = process.listeners('uncaughtException');
      process.removeAllListeners('uncaughtException');
      process.once('uncaughtException', (err) => {
        for (const l of listeners) process.on('uncaughtException', l);
        resolve(err);
      });
    });
    realWait(2, () => {
      throw new Error('boom');
    });
    realWait(2, () => woke.push('after the throw'));
    realWait(10, () => woke.push('later'));
    expect(await thrown).toMatchObject({ message: 'boom' });
    await sleepWith(realWait, 20);
    expect(woke).toEqual(['after the throw', 'later']);
  });
});
