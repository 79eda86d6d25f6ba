import { describe, expect, it } from 'vitest';
import { statusAt, type Task, TaskStore } from '../../src/video/tasks.js';

const task = (id: string, createdAt = 0, extra: Partial<Task> = {}): Task => ({
  id,
  owner: 'o1',
  kind: 'text2video',
  externalId: '',
  duration: '5',
  callbackUrl: undefined,
  baseUrl: 'http://h',
  createdAt,
  queueMs: 100,
  renderMs: 1000,
  outcome: 'succeed',
  ...extra,
});

describe('statusAt', () => {
  it('derives the status from the timeline', () => {
    const t = task('1');
    expect(statusAt(t, 0)).toEqual({ status: 'submitted', since: 0, message: '' });
    expect(statusAt(t, 99).status).toBe('submitted');
    expect(statusAt(t, 100)).toEqual({ status: 'processing', since: 100, message: '' });
    expect(statusAt(t, 1100)).toEqual({ status: 'succeed', since: 1100, message: '' });
    expect(statusAt({ ...t, outcome: 'failed' }, 5000)).toMatchObject({
      status: 'failed',
      since: 1100,
    });
  });

  it('lets a forced status win from its moment on', () => {
    const t = task('1', 0, { forced: { status: 'processing', message: 'stuck', at: 50 } });
    expect(statusAt(t, 49).status).toBe('submitted');
    expect(statusAt(t, 10_000)).toEqual({ status: 'processing', since: 50, message: 'stuck' });
  });
});

describe('TaskStore', () => {
  it('finds by task id or external id, per owner and kind', () => {
    const store = new TaskStore(10);
    store.add(task('1', 0, { externalId: 'ext' }), 0);
    expect(store.find('o1', 'text2video', '1')?.id).toBe('1');
    expect(store.find('o1', 'text2video', 'ext')?.id).toBe('1');
    expect(store.find('o2', 'text2video', '1')).toBeUndefined();
    expect(store.find('o2', 'text2video', 'ext')).toBeUndefined();
    expect(store.find('o1', 'image2video', '1')).toBeUndefined();
    expect(store.hasExternal('o1', 'ext')).toBe(true);
    expect(store.hasExternal('o2', 'ext')).toBe(false);
  });

  it("falls back to the external id when a task id of that value is someone else's", () => {
    const store = new TaskStore(10);
    store.add(task('1000001'), 0);
    store.add(task('1000002', 0, { owner: 'o2', externalId: '1000001' }), 0);
    expect(store.find('o2', 'text2video', '1000001')?.id).toBe('1000002');
    expect(store.find('o1', 'text2video', '1000001')?.id).toBe('1000001');
  });

  it('evicts the oldest finished task first, else the oldest', () => {
    const store = new TaskStore(2);
    store.add(task('1', 1000), 1000); // unfinished at 1500
    store.add(task('2', 0), 1500); // finished at 1500
    store.add(task('3', 1400), 1500);
    expect([store.get('1')?.id, store.get('2')?.id, store.get('3')?.id]).toEqual([
      '1',
      undefined,
      '3',
    ]);
    store.add(task('4', 1500), 1500);
    expect([store.get('1'), store.get('3')?.id, store.get('4')?.id]).toEqual([undefined, '3', '4']);
    expect(store.list('o1', 'text2video', 1, 10).map((t) => t.id)).toEqual(['4', '3']);
  });
});

describe('TaskStore eviction hook', () => {
  it('tells the owner which tasks it evicted', () => {
    const evicted: string[] = [];
    const store = new TaskStore(2, (t) => evicted.push(t.id));
    for (const id of ['1', '2', '3', '4']) store.add(task(id, 0), 5000);
    expect(evicted).toEqual(['1', '2']);
  });
});
