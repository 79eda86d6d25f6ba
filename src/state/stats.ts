import type { StatsRequest } from '../harness/pipeline.js';
import {
  bucketOf,
  classOf,
  type Slot,
  type SlotSource,
  STATS_GROUPS,
  STATS_SECONDS,
  STATS_SESSIONS,
  type StatsGroup,
  type StatsStore,
} from '../harness/stats.js';
import { deleteMatching, type StateStore } from './redis.js';

/**
 * KEYS: none (every key is under ARGV[1], the prefix). ARGV: prefix, seconds kept, sessions
 * kept, then the batch as JSON: a flat list of records, each `1, group, session, second, status
 * class, latency bucket, input, cache read, cache creation, output` (a request) or `2, group,
 * session, second, by` (a stream opened or closed), in the order they came.
 *
 * Each series (`all`, `s:<session>`) is one hash of at most groups x seconds-kept fields, a
 * field per group and second of the ring (`chat:17`), holding that second's slot as JSON (the
 * second it is for: an older one in its place is dropped). Its streams open now are a hash
 * (`open:<series>`) of counts per group. Sessions are kept by last activity (a sorted set); past
 * the most kept, the least recent one's hashes are deleted.
 */
const ADD = `
local prefix, ring, keep = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])
local batch = cjson.decode(ARGV[4])
local sessions = prefix .. 'stats:sessions'
local cached = {}
local order = {}
local function slot(series, group, second)
  local key = prefix .. 'stats:' .. series
  local field = group .. ':' .. (second % ring)
  local id = key .. '|' .. field
  local c = cached[id]
  if not c then
    c = { key = key, field = field, series = series }
    local raw = redis.call('HGET', key, field)
    if raw then c.slot = cjson.decode(raw) end
    cached[id] = c
    order[#order + 1] = c
  end
  if not c.slot or c.slot.s ~= second then
    local open = tonumber(redis.call('HGET', prefix .. 'stats:open:' .. series, group) or '0')
    c.slot = { s = second, st = { 0, 0, 0, 0 }, l = {}, t = { 0, 0, 0, 0 }, o = open }
  end
  return c.slot
end
local function touch(session)
  redis.call('ZADD', sessions, redis.call('INCR', prefix .. 'stats:tick'), session)
  while redis.call('ZCARD', sessions) > keep do
    local oldest = redis.call('ZPOPMIN', sessions)[1]
    redis.call('DEL', prefix .. 'stats:s:' .. oldest, prefix .. 'stats:open:s:' .. oldest)
  end
end
local i = 1
while i <= #batch do
  local kind, group, session, second = batch[i], batch[i + 1], batch[i + 2], batch[i + 3]
  touch(session)
  for _, series in ipairs({ 'all', 's:' .. session }) do
    if kind == 1 then
      local s = slot(series, group, second)
      local c = batch[i + 4] + 1
      s.st[c] = s.st[c] + 1
      local bucket, found = batch[i + 5], false
      for k = 1, #s.l, 2 do
        if s.l[k] == bucket then
          s.l[k + 1] = s.l[k + 1] + 1
          found = true
          break
        end
      end
      if not found then
        s.l[#s.l + 1] = bucket
        s.l[#s.l + 1] = 1
      end
      for k = 1, 4 do s.t[k] = s.t[k] + batch[i + 5 + k] end
    else
      local openKey = prefix .. 'stats:open:' .. series
      local now = redis.call('HINCRBY', openKey, group, batch[i + 4])
      if now < 0 then
        now = 0
        redis.call('HSET', openKey, group, 0)
      end
      local s = slot(series, group, second)
      if now > s.o then s.o = now end
    end
  end
  i = i + (kind == 1 and 10 or 5)
end
for _, c in ipairs(order) do
  local session = string.match(c.series, '^s:(.*)$')
  if not session or redis.call('ZSCORE', sessions, session) then
    redis.call('HSET', c.key, c.field, cjson.encode(c.slot))
  end
end
`;

/** A slot as the store holds it (an empty list comes back from Lua's JSON as `{}`). */
interface StoredSlot {
  s: number;
  st: number[];
  l: number[] | Record<string, never>;
  t: [number, number, number, number];
  o: number;
}

/**
 * The stats of every replica in the shared store (docs/replicas.md). Counting
 * costs a request a few numbers pushed into this turn's batch, sent as one script with the
 * store's next batch of the turn (the journal's entries go in the same one); a step is read
 * with one HMGET of its seconds.
 */
export class RedisStatsStore implements StatsStore {
  private pending: Array<string | number> = [];
  /** The last batch sent, which a read in this process waits for. */
  private sent: Promise<unknown> = Promise.resolve();

  constructor(
    private readonly store: StateStore,
    private readonly onError: (err: unknown) => void = () => {},
  ) {}

  request(r: StatsRequest): void {
    const t = r.tokens;
    this.add(
      1,
      r.group,
      r.session,
      Math.floor(r.at / 1000),
      classOf(r.status, r.aborted),
      bucketOf(r.durationMs),
      t?.input ?? 0,
      t?.cacheRead ?? 0,
      t?.cacheCreation ?? 0,
      t?.output ?? 0,
    );
  }

  stream(group: StatsGroup, session: string, at: number, by: 1 | -1): void {
    this.add(2, group, session, Math.floor(at / 1000), by);
  }

  private add(...record: Array<string | number>): void {
    if (this.pending.length === 0) this.store.beforeSend(() => this.flush());
    for (const value of record) this.pending.push(value);
  }

  /** This process's counts so far in the store: a read after them sees them. */
  private async written(): Promise<void> {
    // (a batch not sent yet goes just before this wait is told, in the same turn)
    if (this.pending.length > 0)
      await new Promise<void>((resolve) => this.store.beforeSend(resolve));
    await this.sent;
  }

  private flush(): void {
    const batch = this.pending;
    this.pending = [];
    // A batch lost (the store is down) loses those counts only; requests never wait for it.
    this.sent = this.store
      .script(ADD, 0, this.store.key(''), STATS_SECONDS, STATS_SESSIONS, JSON.stringify(batch))
      .catch(this.onError);
  }

  async source(
    session: string | undefined,
    from: number,
    to: number,
  ): Promise<SlotSource | undefined> {
    await this.written();
    const series = session === undefined ? 'all' : `s:${session}`;
    const seconds: number[] = [];
    for (let s = Math.max(from, to - STATS_SECONDS + 1); s <= to; s++) seconds.push(s);
    const fields = STATS_GROUPS.flatMap((g) => seconds.map((s) => `${g}:${s % STATS_SECONDS}`));
    const redis = this.store.redis;
    const [values, open] = await Promise.all([
      redis.hmget(this.store.key(`stats:${series}`), ...fields),
      redis.hgetall(this.store.key(`stats:open:${series}`)),
    ]);
    const slots = new Map<string, Slot>();
    values.forEach((raw, i) => {
      if (raw === null) return;
      const stored = JSON.parse(raw) as StoredSlot;
      const group = (fields[i] as string).split(':')[0] as StatsGroup;
      slots.set(`${group}:${stored.s}`, {
        second: stored.s,
        statuses: stored.st,
        latency: Array.isArray(stored.l) ? stored.l : [],
        tokens: stored.t,
        openMax: stored.o,
      });
    });
    return {
      find: (group, second) => slots.get(`${group}:${second}`),
      openNow: (group) => Number(open[group] ?? 0),
    };
  }

  async reset(): Promise<void> {
    await this.written();
    await deleteMatching(this.store, 'stats:*');
  }

  async resetSession(session: string): Promise<void> {
    await this.written();
    const redis = this.store.redis;
    await redis.del(
      this.store.key(`stats:s:${session}`),
      this.store.key(`stats:open:s:${session}`),
    );
    await redis.zrem(this.store.key('stats:sessions'), session);
  }
}
