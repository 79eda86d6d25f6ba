import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  MemoryStatsStore,
  STATS_SECONDS,
  STATS_SESSIONS,
  Stats,
  type StatsRequest,
  type StatsStore,
} from '../../src/harness/stats.js';
import { connectState, type StateStore } from '../../src/state/redis.js';
import { RedisStatsStore } from '../../src/state/stats.js';
import { type RedisServer, startRedis } from '../helpers/redis.js';

const T0 = 1_800_000_000_000; // a whole second of emulator time (ms)
const ok = (at: number, extra: Partial<StatsRequest> = {}): StatsRequest => ({
  group: 'chat',
  session: 'default',
  at,
  status: 200,
  aborted: false,
  durationMs: 10,
  ...extra,
});
const empty = {
  requests: { '2xx': 0, '4xx': 0, '5xx': 0, aborted: 0 },
  rate: 0,
  latency_ms: { p50: null, p95: null, p99: null },
  tokens: { input: 0, cache_read: 0, cache_creation: 0, output: 0 },
  open_streams: 0,
};

let redis: RedisServer;
const stores: StateStore[] = [];
let prefix = 0;
beforeAll(async () => {
  redis = await startRedis();
}, 20_000);
afterAll(() => redis.close());
afterEach(async () => {
  for (const store of stores.splice(0)) await store.close();
});

/** The stats over a store of each kind: one contract (the Redis one on a prefix of its own). */
const backends: Record<string, () => Promise<StatsStore>> = {
  memory: async () => new MemoryStatsStore(),
  redis: async () => {
    prefix++;
    const store = await connectState(redis.url, `stats${prefix}`, 2000);
    await new Promise<void>((resolve) => store.onReady(resolve));
    stores.push(store);
    return new RedisStatsStore(store, (err) => {
      throw err;
    });
  },
};

describe.each(Object.keys(backends))('Stats in %s', (backend) => {
  const newStats = async () => new Stats(await (backends[backend] as () => Promise<StatsStore>)());
  it('sums each step by status class, rate, tokens and latency percentiles, per group', async () => {
    const stats = await newStats();
    stats.request(ok(T0, { durationMs: 1 }));
    stats.request(ok(T0 + 1500, { status: 404, durationMs: 100 }));
    stats.request(ok(T0 + 2000, { status: 503, durationMs: 100 }));
    stats.request(ok(T0 + 4999, { aborted: true, durationMs: 1000 }));
    stats.request(
      ok(T0 + 100, {
        group: 'messages',
        tokens: { input: 10, cacheRead: 90, cacheCreation: 5, output: 20 },
      }),
    );
    const [step] = await stats.steps(T0 + 4999, 5, 5);
    expect(step).toEqual({
      at: T0,
      groups: {
        chat: {
          requests: { '2xx': 1, '4xx': 1, '5xx': 1, aborted: 1 },
          rate: 0.8,
          latency_ms: { p50: 93.9, p95: 1060, p99: 1060 },
          tokens: { input: 0, cache_read: 0, cache_creation: 0, output: 0 },
          open_streams: 0,
        },
        messages: {
          ...empty,
          requests: { '2xx': 1, '4xx': 0, '5xx': 0, aborted: 0 },
          rate: 0.2,
          latency_ms: { p50: 9.87, p95: 9.87, p99: 9.87 },
          tokens: { input: 10, cache_read: 90, cache_creation: 5, output: 20 },
        },
        video: empty,
      },
    });
  });

  it('reads a percentile within its bucket (about 10 %) of the true value', async () => {
    const stats = await newStats();
    for (let ms = 1; ms <= 1000; ms++) stats.request(ok(T0, { durationMs: ms }));
    const { p50, p95, p99 } = (await stats.steps(T0, 1, 1))[0]?.groups.chat.latency_ms ?? {};
    expect(Math.abs((p50 as number) / 500 - 1)).toBeLessThan(0.1);
    expect(Math.abs((p95 as number) / 950 - 1)).toBeLessThan(0.1);
    expect(Math.abs((p99 as number) / 990 - 1)).toBeLessThan(0.1);
  });

  it('lays the window on the clock: steps end with the one holding now (unfinished), oldest first', async () => {
    const stats = await newStats();
    stats.request(ok(T0 + 3000));
    stats.request(ok(T0 + 12_000));
    const steps = await stats.steps(T0 + 13_000, 15, 5);
    expect(steps.map((s) => [s.at - T0, s.groups.chat.requests['2xx']])).toEqual([
      [0, 1],
      [5000, 0],
      [10_000, 1],
    ]);
    // A clock advance moves the window: what was in it is now before it.
    expect(
      (await stats.steps(T0 + 3_600_000, 60, 60)).map((s) => s.groups.chat.requests['2xx']),
    ).toEqual([0]);
  });

  it('keeps each session apart, and all of them together', async () => {
    const stats = await newStats();
    stats.request(ok(T0, { session: 'a' }));
    stats.request(ok(T0, { session: 'b' }));
    stats.request(ok(T0, { session: 'b', status: 500 }));
    const count = async (session?: string) =>
      (await stats.steps(T0, 1, 1, session))[0]?.groups.chat.requests;
    expect(await count()).toEqual({ '2xx': 2, '4xx': 0, '5xx': 1, aborted: 0 });
    expect(await count('a')).toEqual({ '2xx': 1, '4xx': 0, '5xx': 0, aborted: 0 });
    expect(await count('b')).toEqual({ '2xx': 1, '4xx': 0, '5xx': 1, aborted: 0 });
    expect(await count('nobody')).toEqual(empty.requests);
    await stats.resetSession('b');
    expect(await count('b')).toEqual(empty.requests);
    expect((await count())?.['2xx']).toBe(2);
    await stats.reset();
    expect(await count()).toEqual(empty.requests);
  });

  it('counts streams open at once: the most within a step, and those still open now', async () => {
    const stats = await newStats();
    stats.stream('messages', 's', T0, 1);
    stats.stream('messages', 's', T0 + 100, 1);
    stats.stream('messages', 's', T0 + 200, -1);
    const open = async (now: number, session?: string) =>
      (await stats.steps(now, 1, 1, session)).map((s) => s.groups.messages.open_streams);
    expect(await open(T0)).toEqual([2]);
    // One stream is still open seconds later, with nothing else happening.
    expect(await open(T0 + 5000)).toEqual([1]);
    expect(await open(T0 + 5000, 's')).toEqual([1]);
    stats.stream('messages', 's', T0 + 6000, -1);
    expect(await open(T0 + 7000)).toEqual([0]);
  });

  it('is bounded: one hour of seconds, and the most recently active sessions', async () => {
    const stats = await newStats();
    for (let s = 0; s < STATS_SECONDS + 10; s++) stats.request(ok(T0 + s * 1000));
    const steps = await stats.steps(T0 + (STATS_SECONDS + 9) * 1000, STATS_SECONDS, 1);
    expect(steps).toHaveLength(STATS_SECONDS);
    expect(steps.every((s) => s.groups.chat.requests['2xx'] === 1)).toBe(true);
    for (let i = 0; i <= STATS_SESSIONS; i++) stats.request(ok(T0, { session: `s${i}` }));
    expect((await stats.steps(T0, 1, 1, 's0'))[0]?.groups.chat.requests['2xx']).toBe(0);
    expect(
      (await stats.steps(T0, 1, 1, `s${STATS_SESSIONS}`))[0]?.groups.chat.requests['2xx'],
    ).toBe(1);
  });
});
