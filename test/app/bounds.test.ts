import { describe, expect, it } from 'vitest';
import { Faults, MAX_FAULT_RULES } from '../../src/platform/faults.js';
import { RateLimiter } from '../../src/platform/rate-limit.js';
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
    expect(t.app.emulator.tasks.size).toBe(2);
    expect(t.app.emulator.scheduler.size).toBe(4);
    await t.app.close();
  });
});
