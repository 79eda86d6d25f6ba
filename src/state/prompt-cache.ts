import { DEFAULT_SESSION, keyOfOwner } from '../harness/session.js';
import {
  type CacheEntryView,
  type CacheUsage,
  type ChatPromptPart,
  chatBoundaries,
  chatWrites,
  type PromptBlock,
  PromptCache,
  type PromptCacheOptions,
  type PromptCacheStore,
  type PromptScan,
  planWrites,
  possibleWrites,
} from '../text/prompt-cache.js';
import { deleteMatching, type StateStore } from './redis.js';

/**
 * The lookup and the writes of one request, in one step. KEYS: the index (a sorted set of the
 * entries by last use). ARGV: prefix of entry keys, now, mode (`m`essages or `c`hat), most
 * entries, session, scope, candidate count, then per candidate (longest first) key, position,
 * tokens; then per write key, position, tokens, ttl ms. A live candidate is read (and renewed);
 * messages write the breakpoints after it, chat the boundaries past its tokens (rounded down to
 * 128). Returns {position read or -1, its tokens}. A real-time expiry a minute past the emulator's
 * is a safety net: the emulator clock only runs ahead of real time.
 */
const COMMIT = `
local prefix, now, mode, most = ARGV[1], tonumber(ARGV[2]), ARGV[3], tonumber(ARGV[4])
local session, scope, n = ARGV[5], ARGV[6], tonumber(ARGV[7])
local readAt, readTokens = -1, 0
local i = 8
for c = 1, n do
  local key, at, tokens = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
  i = i + 3
  if readAt == -1 then
    local entry = prefix .. key
    local held = redis.call('HMGET', entry, 'expires', 'ttl')
    if held[1] then
      if tonumber(held[1]) > now then
        local expires = now + tonumber(held[2])
        redis.call('HSET', entry, 'expires', expires)
        redis.call('HINCRBY', entry, 'reads', 1)
        redis.call('PEXPIRE', entry, tonumber(held[2]) + 60000)
        redis.call('ZADD', KEYS[1], now, key)
        readAt, readTokens = at, tokens
      else
        redis.call('DEL', entry)
        redis.call('ZREM', KEYS[1], key)
      end
    end
  end
end
local cached = math.floor(readTokens / 128) * 128
while i <= #ARGV do
  local key, at, tokens, ttl = ARGV[i], tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  i = i + 4
  if (mode == 'm' and at > readAt) or (mode == 'c' and tokens > cached) then
    local entry = prefix .. key
    redis.call('DEL', entry)
    redis.call('HSET', entry, 'expires', now + ttl, 'ttl', ttl, 'session', session, 'scope', scope,
      'tokens', tokens, 'created', now, 'reads', 0)
    redis.call('PEXPIRE', entry, ttl + 60000)
    redis.call('ZADD', KEYS[1], now, key)
  end
end
while redis.call('ZCARD', KEYS[1]) > most do
  local oldest = redis.call('ZPOPMIN', KEYS[1])
  redis.call('DEL', prefix .. oldest[1])
end
return {readAt, readTokens}
`;

/** KEYS: index. ARGV: prefix, session. Forgets one session's entries. */
const CLEAR_SESSION = `
for _, key in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  if redis.call('HGET', ARGV[1] .. key, 'session') == ARGV[2] then
    redis.call('DEL', ARGV[1] .. key)
    redis.call('ZREM', KEYS[1], key)
  end
end
return 1
`;

/**
 * The prompt cache in the store: one hash per prefix key (its expiry on the emulator clock,
 * TTL, owner and model, tokens, reads), and an index of the keys by last use that bounds them
 * (PROMPT_CACHE_MAX_ENTRIES, least recently used first out). A request's lookup and its writes
 * are one Lua step, so two replicas never both count a creation for the same prefix, and a
 * prefix written on one is read on every other. The scanning (tokens, prefix keys) is the
 * memory cache's own.
 */
export class RedisPromptCache implements PromptCacheStore {
  readonly name = 'cache';
  onLookup: ((group: 'messages' | 'chat', hit: boolean) => void) | undefined;
  private readonly scanner: PromptCache;
  private readonly index: string;
  private readonly entryPrefix: string;

  constructor(
    private readonly store: StateStore,
    private readonly options: PromptCacheOptions,
  ) {
    this.scanner = new PromptCache(options);
    this.index = store.key('cache:index');
    this.entryPrefix = store.key('cache:e:');
  }

  scan(scope: string, blocks: readonly PromptBlock[], session = DEFAULT_SESSION): PromptScan {
    return this.scanner.scan(scope, blocks, session);
  }

  async commit(scan: PromptScan, now: number): Promise<CacheUsage> {
    const candidates = [...scan.keys.keys()]
      .sort((x, y) => y - x)
      .map((at) => ({ at, key: scan.keys.get(at) as string, tokens: scan.prefix[at] as number }));
    const writes = possibleWrites(scan, this.options);
    if (candidates.length === 0 && writes.length === 0) {
      return planWrites(scan, -1, this.options).usage;
    }
    const [readAt] = await this.run(now, 'm', scan.session, scan.scope, candidates, writes);
    if (scan.keys.size > 0) this.onLookup?.('messages', readAt !== -1);
    return planWrites(scan, readAt, this.options).usage;
  }

  async accountChat(
    scope: string,
    messages: ReadonlyArray<ChatPromptPart>,
    now: number,
    session = DEFAULT_SESSION,
  ): Promise<number> {
    const boundaries = chatBoundaries(scope, messages);
    if (boundaries.length === 0) return 0;
    const candidates = boundaries.map((b, at) => ({ ...b, at })).reverse();
    const ttlMs = this.options.ttlS * 1000;
    const writes = chatWrites(boundaries).map((b) => ({ ...b, at: 0, ttlMs }));
    const [, readTokens] = await this.run(now, 'c', session, scope, candidates, writes);
    const cached = Math.floor(readTokens / 128) * 128;
    this.onLookup?.('chat', cached > 0);
    return cached;
  }

  async count(): Promise<number> {
    return this.store.redis.zcard(this.index);
  }

  async list(now: number, limit: number, session?: string): Promise<CacheEntryView[]> {
    const out: CacheEntryView[] = [];
    // Most recently used first, a page at a time, until `limit` live entries are found.
    for (let from = 0; out.length < limit; from += 200) {
      const keys = await this.store.redis.zrevrange(this.index, from, from + 199);
      if (keys.length === 0) break;
      const pipeline = this.store.redis.pipeline();
      for (const key of keys) pipeline.hgetall(`${this.entryPrefix}${key}`);
      const held = (await pipeline.exec()) ?? [];
      keys.forEach((key, i) => {
        const entry = held[i]?.[1] as Record<string, string> | undefined;
        if (!entry?.expires || out.length >= limit) return;
        const expiresAt = Number(entry.expires);
        if (expiresAt <= now || (session !== undefined && entry.session !== session)) return;
        const scope = entry.scope ?? '';
        const newline = scope.indexOf('\n');
        out.push({
          id: key.slice(0, 16),
          session: entry.session ?? DEFAULT_SESSION,
          key_hash: keyOfOwner(scope.slice(0, newline)).slice(0, 12),
          model: scope.slice(newline + 1),
          tokens: Number(entry.tokens),
          reads: Number(entry.reads),
          created_at: Number(entry.created),
          expires_at: expiresAt,
          ttl_ms: Number(entry.ttl),
          time_left_ms: expiresAt - now,
        });
      });
    }
    return out;
  }

  async reset(): Promise<void> {
    await this.store.redis.del(this.index);
    await deleteMatching(this.store, 'cache:e:*');
  }

  async resetSession(session: string): Promise<void> {
    await this.store.script(CLEAR_SESSION, 1, this.index, this.entryPrefix, session);
  }

  private async run(
    now: number,
    mode: 'm' | 'c',
    session: string,
    scope: string,
    candidates: Array<{ key: string; at: number; tokens: number }>,
    writes: Array<{ key: string; at: number; tokens: number; ttlMs: number }>,
  ): Promise<[number, number]> {
    const args: Array<string | number> = [
      this.entryPrefix,
      now,
      mode,
      this.options.maxEntries,
      session,
      scope,
      candidates.length,
    ];
    for (const c of candidates) args.push(c.key, c.at, c.tokens);
    for (const w of writes) args.push(w.key, w.at, w.tokens, w.ttlMs);
    return (await this.store.script(COMMIT, 1, this.index, ...args)) as [number, number];
  }
}
