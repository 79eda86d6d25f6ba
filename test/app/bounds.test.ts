import { describe, expect, it } from 'vitest';
import { Faults, MAX_FAULT_BYTES, MAX_FAULT_RULES } from '../../src/harness/faults.js';
import { MemoryRateLimiter as RateLimiter } from '../../src/harness/rate-limit.js';
import { buildTestApp } from '../helpers/app.js';

/** Every store stays bounded whatever the traffic. */
describe('bounded state', () => {
  it('rate-limit windows: at most 10 000 keys are tracked', () => {
    const limiter = new RateLimiter(5);
    for (let i = 0; i < 25_000; i++) limiter.hit(`key-${i}`, 0);
    expect(
      (limiter as unknown as { windows: Map<string, unknown> }).windows.size,
    ).toBeLessThanOrEqual(10_000);
  });

  it('fault rules: at most MAX_FAULT_RULES', () => {
    const faults = new Faults((key) => key);
    for (let i = 0; i < MAX_FAULT_RULES; i++)
      expect(faults.add({ path: '/x', status: 500 })).toBeDefined();
    expect(faults.add({ path: '/x', status: 500 })).toBeUndefined();
    expect(faults.size).toBe(MAX_FAULT_RULES);
  });

  it('fault rules: at most MAX_FAULT_BYTES of JSON in all, the refusal a 400', async () => {
    const t = await buildTestApp();
    const big = 'x'.repeat(5 * 1024 * 1024);
    const add = () =>
      t.inject({
        method: 'POST',
        url: '/_emulator/faults',
        payload: { path: '/v1/chat/completions', status: 500, match: { header: { 'x-big': big } } },
      });
    for (let i = 0; i < 3; i++) expect((await add()).statusCode).toBe(200);
    const refused = await add();
    expect([refused.statusCode, refused.json()]).toEqual([
      400,
      {
        error: {
          type: 'invalid_request_error',
          message: `At most ${MAX_FAULT_RULES} fault rules, ${MAX_FAULT_BYTES} bytes of JSON in all, can be active.`,
        },
      },
    ]);
    expect(MAX_FAULT_BYTES).toBe(16 * 1024 * 1024);
    await t.app.close();
  });

  it('evicted video tasks leave no scheduled callbacks behind', async () => {
    const t = await buildTestApp({ maxTasks: 2 });
    for (let i = 0; i < 50; i++) {
      await t.inject({
        method: 'POST',
        url: '/videogen/v1/videos/text2video',
        headers: { authorization: 'Bearer k' },
        payload: {
          model_name: 'vid-v1-6',
          prompt: 'x',
          duration: '5',
          callback_url: 'http://127.0.0.1:9/cb',
        },
      });
    }
    const held = (await t.inject({ url: '/_emulator/tasks' })).json();
    expect(held.size).toBe(2);
    // In memory: the two transitions of each task held are scheduled, nothing else.
    if (t.app.emulator.scheduler.size > 0) expect(t.app.emulator.scheduler.size).toBe(4);
    // Anywhere: once everything is due, only the tasks held were told (each retried, given up).
    for (let i = 0; i < 6; i++) {
      await t.inject({ method: 'POST', url: '/_emulator/clock/advance', payload: { ms: 60_000 } });
      await t.app.emulator.callbacks.idle();
    }
    const told = (await t.inject({ url: '/_emulator/callbacks' })).json().callbacks;
    const ids = held.tasks.map((task: { task_id: string }) => task.task_id).sort();
    expect([...new Set(told.map((d: { task_id: string }) => d.task_id))].sort()).toEqual(ids);
    expect(told).toHaveLength(4);
    await t.app.close();
  });
});
