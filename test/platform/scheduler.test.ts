import { describe, expect, it } from 'vitest';
import { createClock } from '../../src/platform/clock.js';
import { Scheduler } from '../../src/platform/scheduler.js';

describe('Scheduler', () => {
  it('runs jobs in time order when the clock passes them', () => {
    const clock = createClock(() => 1000);
    const armed: number[] = [];
    const scheduler = new Scheduler(clock, (_fn, ms) => {
      armed.push(ms);
      return () => {};
    });
    const ran: string[] = [];
    scheduler.at(1500, () => ran.push('b'));
    scheduler.at(1200, () => ran.push('a'));
    scheduler.at(1500, () => ran.push('c'));
    scheduler.at(3000, () => ran.push('d'));
    expect(armed).toEqual([500, 200]);
    clock.advance(499);
    expect(ran).toEqual(['a']);
    clock.advance(1);
    expect(ran).toEqual(['a', 'b', 'c']);
    expect(scheduler.size).toBe(1);
    clock.advance(10_000);
    expect(ran).toEqual(['a', 'b', 'c', 'd']);
  });

  it('wakes up on its wall-clock timer too', () => {
    let now = 0;
    const clock = createClock(() => now);
    let fire: () => void = () => {};
    const scheduler = new Scheduler(clock, (fn) => {
      fire = fn;
      return () => {};
    });
    const ran: number[] = [];
    scheduler.at(100, () => ran.push(100));
    now = 100;
    fire();
    expect(ran).toEqual([100]);
  });

  it('drops every job, disarms its timer and stops listening on close', () => {
    const clock = createClock(() => 0);
    let cancelled = 0;
    const scheduler = new Scheduler(clock, () => () => {
      cancelled++;
    });
    const ran: number[] = [];
    scheduler.at(10, () => ran.push(1));
    scheduler.at(200, () => ran.push(2));
    scheduler.close();
    expect(scheduler.size).toBe(0);
    expect(cancelled).toBeGreaterThan(0);
    clock.advance(1000);
    expect(ran).toEqual([]);
  });
});

describe('Scheduler cancellation', () => {
  it('skips cancelled jobs and sweeps them out once they are half the heap', () => {
    const clock = createClock(() => 0);
    const scheduler = new Scheduler(clock, () => () => {});
    const ran: number[] = [];
    const cancels = Array.from({ length: 1000 }, (_, i) =>
      scheduler.at(100 + i, () => ran.push(i)),
    );
    expect(scheduler.size).toBe(1000);
    for (const cancel of cancels.slice(0, 600)) cancel();
    cancels[0]?.();
    expect(scheduler.size).toBe(400);
    clock.advance(10_000);
    expect(ran).toEqual(Array.from({ length: 400 }, (_, i) => 600 + i));
    expect(scheduler.size).toBe(0);
    cancels[999]?.(); // already ran: nothing to cancel
    expect(scheduler.size).toBe(0);
  });

  it('lets go of what a cancelled job would have run (evicted tasks are not kept alive)', async () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    expect(gc, 'vitest runs with --expose-gc').toBeDefined();
    const scheduler = new Scheduler(
      createClock(() => 0),
      () => () => {},
    );
    const refs = (() => {
      const out: WeakRef<object>[] = [];
      for (let i = 0; i < 10; i++) {
        const task = { id: i, payload: new Array(1000).fill(i) };
        out.push(new WeakRef(task));
        scheduler.at(1000 + i, () => void task.id)();
      }
      return out;
    })();
    await new Promise((r) => setTimeout(r, 0));
    gc?.();
    expect(refs.map((r) => r.deref())).toEqual(Array(10).fill(undefined));
    expect(scheduler.size).toBe(0);
  });
});
