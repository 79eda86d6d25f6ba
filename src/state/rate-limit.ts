import { type RateDecision, type RateLimiter, WINDOW_MS } from '../harness/rate-limit.js';
import type { Feature } from '../platform/features.js';
import { deleteMatching, type StateStore } from './redis.js';

/**
 * KEYS: the owner's window. ARGV: now (emulator ms), limit, window ms, ttl ms. One fixed window
 * from the owner's first request, decided and counted in one step: {allowed, count, start}.
 */
const HIT = `
local now = tonumber(ARGV[1])
local start = tonumber(redis.call('HGET', KEYS[1], 'start') or '-1')
if start < 0 or now - start >= tonumber(ARGV[3]) or now < start then
  start = now
  redis.call('HSET', KEYS[1], 'start', now, 'count', 0)
end
local count = tonumber(redis.call('HGET', KEYS[1], 'count'))
local allowed = 0
if count < tonumber(ARGV[2]) then
  count = redis.call('HINCRBY', KEYS[1], 'count', 1)
  allowed = 1
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
return {allowed, count, start}
`;

/**
 * RATE_LIMIT_RPM across every replica: one window per key in the store, so
 * `x-ratelimit-remaining-requests` counts down whichever replica answers. The window runs on
 * the emulator clock; a real-time expiry (a window's length past the emulator's, at least)
 * drops windows of keys gone quiet.
 */
export class RedisRateLimiter implements RateLimiter, Feature {
  readonly name = 'limits';

  constructor(
    private readonly store: StateStore,
    private readonly rpm: number,
  ) {}

  async hit(owner: string, now: number): Promise<RateDecision> {
    const [allowed, count, start] = (await this.store.script(
      HIT,
      1,
      this.store.key(`rate:${owner}`),
      now,
      this.rpm,
      WINDOW_MS,
      WINDOW_MS * 2,
    )) as [number, number, number];
    return {
      allowed: allowed === 1,
      limit: this.rpm,
      remaining: this.rpm - count,
      resetMs: start + WINDOW_MS - now,
    };
  }

  async reset(): Promise<void> {
    await deleteMatching(this.store, 'rate:*');
  }
}
