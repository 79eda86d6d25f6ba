import type { StateStore } from './redis.js';
import type { Maybe } from './rule-book.js';

/**
 * How far each scripted sequence went, per rule and session (docs/stubs.md "Stubs": a `sequence`
 * answers with its steps in turn). `next` counts one answer and says how many came before, in
 * one step of the store, so two replicas never give the same step twice.
 */
export interface Sequences {
  /** Answers the rule gave the session before this one (and counts this one). */
  next(rule: string, session: string): Maybe<number>;
  /** Starts over: the rules whose name starts with `rulePrefix`, of one session, or all. */
  clear(rulePrefix?: string, session?: string): Maybe<void>;
}

/** Per rule, its sessions' counts; past `perRule` sessions the oldest is forgotten. */
export class MemorySequences implements Sequences {
  private readonly counts = new Map<string, Map<string, number>>();

  constructor(private readonly perRule: number) {}

  next(rule: string, session: string): number {
    let sessions = this.counts.get(rule);
    if (!sessions) {
      sessions = new Map();
      this.counts.set(rule, sessions);
    }
    const used = sessions.get(session) ?? 0;
    sessions.delete(session);
    if (sessions.size >= this.perRule) sessions.delete(sessions.keys().next().value as string);
    sessions.set(session, used + 1);
    return used;
  }

  clear(rulePrefix?: string, session?: string): void {
    for (const [rule, sessions] of this.counts) {
      if (rulePrefix !== undefined && !rule.startsWith(rulePrefix)) continue;
      if (session === undefined) this.counts.delete(rule);
      else sessions.delete(session);
    }
  }
}

/**
 * KEYS: counts. ARGV: field, most fields. The count before this answer; past the bound a
 * field at random is forgotten (its sequence starts over).
 */
const NEXT = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 and redis.call('HLEN', KEYS[1]) >= tonumber(ARGV[2]) then
  redis.call('HDEL', KEYS[1], redis.call('HRANDFIELD', KEYS[1]))
end
return redis.call('HINCRBY', KEYS[1], ARGV[1], 1) - 1
`;

/** KEYS: counts. ARGV: rule prefix ('' for all), session ('' for all). */
const CLEAR = `
for _, field in ipairs(redis.call('HKEYS', KEYS[1])) do
  local cut = string.find(field, '\\n', 1, true)
  local rule = string.sub(field, 1, cut - 1)
  local session = string.sub(field, cut + 1)
  if (ARGV[1] == '' or string.sub(rule, 1, #ARGV[1]) == ARGV[1]) and (ARGV[2] == '' or session == ARGV[2]) then
    redis.call('HDEL', KEYS[1], field)
  end
end
return 1
`;

/** The counts in one hash of the store (`rule\nsession` → answers), at most `most` fields. */
export class RedisSequences implements Sequences {
  private readonly key: string;

  constructor(
    private readonly store: StateStore,
    private readonly most: number,
  ) {
    this.key = store.key('sequences');
  }

  async next(rule: string, session: string): Promise<number> {
    return (await this.store.script(NEXT, 1, this.key, `${rule}\n${session}`, this.most)) as number;
  }

  async clear(rulePrefix?: string, session?: string): Promise<void> {
    if (rulePrefix === undefined && session === undefined) {
      await this.store.redis.del(this.key);
      return;
    }
    await this.store.script(CLEAR, 1, this.key, rulePrefix ?? '', session ?? '');
  }
}
