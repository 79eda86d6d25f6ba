import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { JournalLog, StoredEntry } from '../../src/harness/journal.js';
import { MemoryJournalLog } from '../../src/harness/journal.js';
import { MemoryRateLimiter, type RateLimiter } from '../../src/harness/rate-limit.js';
import { Epoch } from '../../src/state/epoch.js';
import { RedisJournalLog } from '../../src/state/journal-log.js';
import { RedisRateLimiter } from '../../src/state/rate-limit.js';
import { connectState, type StateStore } from '../../src/state/redis.js';
import { MemoryRuleBook, RedisRuleBook, type RuleBook } from '../../src/state/rule-book.js';
import { MemorySequences, RedisSequences, type Sequences } from '../../src/state/sequences.js';
import { RedisTasks } from '../../src/state/tasks.js';
import { type Task, TaskStore, type Tasks } from '../../src/video/tasks.js';
import { type RedisServer, startRedis } from '../helpers/redis.js';

/**
 * One contract per store interface, run against the memory store and the Redis one: what a
 * feature asks of its store, answered the same way by both (docs/replicas.md).
 */

let redis: RedisServer;
let store: StateStore;
let prefix = 0;

beforeAll(async () => {
  redis = await startRedis();
}, 20_000);
afterAll(async () => {
  await redis.close();
});

/** A store on a key prefix of its own, connected (closed before the next test). */
async function fresh(): Promise<StateStore> {
  prefix++;
  const connected = await connectState(redis.url, `c${prefix}`, 2000);
  await new Promise<void>((resolve) => connected.onReady(resolve));
  store = connected;
  return connected;
}

const budget = { maxCount: 3, maxBytes: 200 };

const backends = {
  memory: {
    book: async (): Promise<RuleBook<{ n: number }>> => new MemoryRuleBook(budget),
    sequences: async (): Promise<Sequences> => new MemorySequences(10),
    journal: async (limit: number): Promise<JournalLog> => new MemoryJournalLog(limit),
    limiter: async (rpm: number): Promise<RateLimiter> => new MemoryRateLimiter(rpm),
    tasks: async (max: number): Promise<Tasks> => new TaskStore(max),
    close: async () => {},
  },
  redis: {
    book: async (): Promise<RuleBook<{ n: number }>> => {
      const store = await fresh();
      const epoch = new Epoch(store);
      const book = new RedisRuleBook<{ n: number }>(store, 'faults', budget, epoch);
      await epoch.sync();
      return book;
    },
    sequences: async (): Promise<Sequences> => new RedisSequences(await fresh(), 10),
    journal: async (limit: number): Promise<JournalLog> =>
      new RedisJournalLog(await fresh(), limit),
    limiter: async (rpm: number): Promise<RateLimiter> => new RedisRateLimiter(await fresh(), rpm),
    tasks: async (max: number): Promise<Tasks> => new RedisTasks(await fresh(), max),
    close: async () => store?.close(),
  },
};

const entry = (id: string, session = 'default'): StoredEntry => ({
  id,
  group: 'chat',
  session,
  keyHash: 'k',
  model: 'm',
  source: 'emulator',
  at: 1,
  method: 'POST',
  url: '/v1/chat/completions',
  status: 200,
  durationMs: 1,
  headers: { 'content-type': 'application/json' },
  body: '{}',
  bodyBytes: 2,
  response: Buffer.from('{"ok":"é"}'),
  responseBytes: 11,
  fault: undefined,
  aborted: false,
  bytesSent: undefined,
});

const task = (id: string, owner: string, createdAt: number, externalId = ''): Task => ({
  id,
  owner,
  kind: 'text2video',
  externalId,
  duration: '5',
  callbackUrl: undefined,
  baseUrl: 'http://x',
  createdAt,
  queueMs: 10,
  renderMs: 10,
  outcome: 'succeed',
});

describe('the store connection', () => {
  it('sends the scripts of one turn together, each answered with its own result or error', async () => {
    const store = await fresh();
    const pipelines = vi.spyOn(store.redis, 'pipeline');
    const results = await Promise.allSettled([
      store.script('return ARGV[1]', 0, 'a'),
      store.script("return redis.error_reply('no')", 0),
      store.script('return ARGV[1]', 0, 'b'),
    ]);
    expect(results.map((r) => (r.status === 'fulfilled' ? r.value : String(r.reason)))).toEqual([
      'a',
      'ReplyError: ERR no',
      'b',
    ]);
    // One pipeline for the turn's three scripts (each new to the server, so each sent again as
    // EVAL on its NOSCRIPT), and one for the next turn's two.
    expect(pipelines).toHaveBeenCalledTimes(1);
    expect(await Promise.all([store.script('return 1', 0), store.script('return 2', 0)])).toEqual([
      1, 2,
    ]);
    expect(pipelines).toHaveBeenCalledTimes(2);
    await store.close();
  });
});

describe.each(Object.entries(backends))('%s stores', (_, backend) => {
  beforeEach(async () => {
    await backend.close();
  });

  it('rule book: ids in order, the budget, a use spent once, the last use removes the rule', async () => {
    const book = await backend.book();
    const a = await book.add({ n: 1 }, 's1', 2);
    const b = await book.add({ n: 2 }, 's2', undefined);
    expect([a?.id, b?.id]).toEqual([1, 2]);
    expect(await book.add({ n: 3 }, 's1', undefined)).toMatchObject({ id: 3 });
    expect(await book.add({ n: 4 }, 's1', undefined)).toBeUndefined(); // count
    expect(book.rules.map((r) => r.input.n)).toEqual([1, 2, 3]);
    expect(await book.spend(1)).toEqual({ remaining: 1, fired: 1 });
    expect(await book.spend(2)).toEqual({ remaining: undefined, fired: 1 });
    expect(await book.spend(1)).toEqual({ remaining: 0, fired: 2 });
    expect(await book.spend(1)).toBeUndefined();
    expect([await book.draw(2), await book.draw(2)]).toEqual([0, 1]);
    expect(await book.remove(2, 's1')).toBe(false);
    expect(await book.remove(2, 's2')).toBe(true);
    await book.clear('s1');
    expect(book.rules).toEqual([]);
    await book.reset();
    expect((await book.add({ n: 5 }, 's', undefined))?.id).toBe(1);
  });

  it('sequences: counts per rule and session, cleared by prefix and session', async () => {
    const seq = await backend.sequences();
    expect([
      await seq.next('f0', 'a'),
      await seq.next('f0', 'a'),
      await seq.next('f0', 'b'),
    ]).toEqual([0, 1, 0]);
    expect(await seq.next('s1', 'a')).toBe(0);
    await seq.clear('f', 'a');
    expect([
      await seq.next('f0', 'a'),
      await seq.next('f0', 'b'),
      await seq.next('s1', 'a'),
    ]).toEqual([0, 1, 1]);
    await seq.clear();
    expect(await seq.next('s1', 'a')).toBe(0);
  });

  it('journal log: the newest `limit` entries, oldest first, the bytes answered as they were', async () => {
    const log = await backend.journal(3);
    for (const id of ['r1', 'r2', 'r3', 'r4'])
      await log.append(entry(id, id === 'r3' ? 'x' : 'default'));
    const all = [...(await log.entries())];
    expect(all.map((e) => e.id)).toEqual(['r2', 'r3', 'r4']);
    expect(all[0]?.response).toEqual(Buffer.from('{"ok":"é"}'));
    await log.clear('x');
    expect([...(await log.entries())].map((e) => e.id)).toEqual(['r2', 'r4']);
    await log.clear();
    expect([...(await log.entries())]).toEqual([]);
  });

  it('journal log: entries appended at once (more than one batch) are all kept, in their order, within the limit', async () => {
    const log = await backend.journal(250);
    const ids = Array.from({ length: 300 }, (_, i) => `r${i}`);
    await Promise.all(ids.map((id) => log.append(entry(id))));
    expect([...(await log.entries())].map((e) => e.id)).toEqual(ids.slice(50));
  });

  it('rate limiter: a fixed minute from the first request, counted down to a refusal', async () => {
    const limiter = await backend.limiter(2);
    expect(await limiter.hit('k', 1000)).toEqual({
      allowed: true,
      limit: 2,
      remaining: 1,
      resetMs: 60_000,
    });
    expect(await limiter.hit('k', 2000)).toEqual({
      allowed: true,
      limit: 2,
      remaining: 0,
      resetMs: 59_000,
    });
    expect(await limiter.hit('k', 3000)).toEqual({
      allowed: false,
      limit: 2,
      remaining: 0,
      resetMs: 58_000,
    });
    expect((await limiter.hit('other', 3000)).remaining).toBe(1);
    expect(await limiter.hit('k', 61_000)).toEqual({
      allowed: true,
      limit: 2,
      remaining: 1,
      resetMs: 60_000,
    });
  });

  it('tasks: external ids once per owner, found by either id, listed newest first, bounded', async () => {
    const tasks = await backend.tasks(3);
    expect(await tasks.create(task('1', 'o', 0, 'e1'), 0)).toBe(true);
    expect(await tasks.hasExternal('o', 'e1')).toBe(true);
    expect(await tasks.create(task('2', 'o', 1, 'e1'), 1)).toBe(false);
    expect(await tasks.create(task('3', 'p', 2, 'e1'), 2)).toBe(true);
    expect((await tasks.find('o', 'text2video', 'e1'))?.id).toBe('1');
    expect(await tasks.find('p', 'text2video', '1')).toBeUndefined();
    expect((await tasks.list('o', 'text2video', 1, 10)).map((t) => t.id)).toEqual(['1']);
    expect(await tasks.create(task('4', 'o', 3), 3)).toBe(true);
    // Past the bound the oldest finished one goes (all are finished at 100).
    expect(await tasks.create(task('5', 'o', 4), 100)).toBe(true);
    expect((await tasks.newest(10)).tasks.map((t) => t.id)).toEqual(['3', '4', '5']);
    expect(await tasks.hasExternal('o', 'e1')).toBe(false);
    const was = await tasks.force('4', { status: 'failed', message: 'no', at: 50 });
    expect(was?.forced).toBeUndefined();
    expect((await tasks.get('4'))?.forced).toEqual({ status: 'failed', message: 'no', at: 50 });
    expect(Object.fromEntries(await tasks.countByStatus(100))).toEqual({ succeed: 2, failed: 1 });
    await tasks.clear();
    expect((await tasks.newest(10)).size).toBe(0);
  });
});
