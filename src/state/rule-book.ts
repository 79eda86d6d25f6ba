import { type Budget, roomFor } from '../harness/budget.js';
import type { Maybe } from '../platform/maybe.js';
import type { Epoch } from './epoch.js';
import type { StateStore } from './redis.js';

export type { Maybe };

/** One rule as stored: what was asked for (`input`), and for whom. */
export interface RuleRecord<I> {
  id: number;
  session: string;
  input: I;
  /** The length of its JSON, counted against the budget. */
  bytes: number;
  /** Uses left (a rule with `times`), undefined for a rule without. */
  times: number | undefined;
}

/** A rule's use so far. */
export interface RuleUse {
  remaining: number | undefined;
  fired: number;
}

/**
 * The fault rules or the stubs (docs/testing-your-client.md, "Stubs"): rules added at run time, each with
 * its uses. Every process matches requests against `rules`, its copy, read again whenever the
 * rules change (`Epoch`); what must be decided once for all processes, a use spent or a
 * seeded draw, is decided by the store in one step (`spend`, `draw`).
 */
export interface RuleBook<I> {
  /** The rules, oldest first (as this process last read them). */
  readonly rules: readonly RuleRecord<I>[];
  /** Adds a rule (times: its `times`); undefined when the budget has no room. */
  add(input: I, session: string, times: number | undefined): Maybe<RuleRecord<I> | undefined>;
  /** The uses of the rules held, by id. */
  uses(): Maybe<Map<number, RuleUse>>;
  /**
   * The rules as the store holds them now (a listing: a rule used up on another replica a
   * moment ago is gone from it, though `rules` may hold it until the next read).
   */
  current(): Maybe<readonly RuleRecord<I>[]>;
  remove(id: number, session?: string): Maybe<boolean>;
  /** Removes the rules of one session, or every rule. */
  clear(session?: string): Maybe<void>;
  /** Removes every rule and starts the ids over. */
  reset(): Maybe<void>;
  /** Spends one use: the use after it, or undefined when the rule is gone or used up. */
  spend(id: number): Maybe<RuleUse | undefined>;
  /** The rule's next seeded draw, counted from 0 (one sequence for all processes). */
  draw(id: number): Maybe<number>;
}

export class MemoryRuleBook<I> implements RuleBook<I> {
  rules: RuleRecord<I>[] = [];
  private readonly used = new Map<
    number,
    { remaining: number | undefined; fired: number; draws: number }
  >();
  private nextId = 1;

  constructor(private readonly budget: Budget) {}

  add(input: I, session: string, times: number | undefined): RuleRecord<I> | undefined {
    const bytes = roomFor(this.rules, input, this.budget);
    if (bytes === undefined) return undefined;
    const record: RuleRecord<I> = { id: this.nextId++, session, input, bytes, times };
    this.rules = [...this.rules, record];
    this.used.set(record.id, { remaining: times, fired: 0, draws: 0 });
    return record;
  }

  uses(): Map<number, RuleUse> {
    return this.used;
  }

  current(): RuleRecord<I>[] {
    return this.rules;
  }

  remove(id: number, session?: string): boolean {
    const before = this.rules.length;
    this.rules = this.rules.filter(
      (r) => r.id !== id || (session !== undefined && r.session !== session),
    );
    if (this.rules.length === before) return false;
    this.used.delete(id);
    return true;
  }

  clear(session?: string): void {
    const kept = session === undefined ? [] : this.rules.filter((r) => r.session !== session);
    for (const rule of this.rules) if (!kept.includes(rule)) this.used.delete(rule.id);
    this.rules = kept;
  }

  reset(): void {
    this.rules = [];
    this.used.clear();
    this.nextId = 1;
  }

  spend(id: number): RuleUse | undefined {
    const use = this.used.get(id);
    if (!use) return undefined;
    use.fired++;
    if (use.remaining !== undefined && --use.remaining <= 0) this.remove(id);
    return { remaining: use.remaining, fired: use.fired };
  }

  draw(id: number): number {
    const use = this.used.get(id);
    if (!use) return 0;
    return use.draws++;
  }
}

/**
 * Adds a rule within the budget: the count and the bytes of every rule held, checked and
 * changed in one step. KEYS: rules, uses, ids, epoch. ARGV: session, input JSON, bytes,
 * times ('' for none), max count, max bytes, book name.
 */
const ADD = `
local count = redis.call('HLEN', KEYS[1])
if count >= tonumber(ARGV[5]) then return nil end
local total = tonumber(ARGV[3])
for _, v in ipairs(redis.call('HVALS', KEYS[1])) do total = total + cjson.decode(v).bytes end
if total > tonumber(ARGV[6]) then return nil end
local id = redis.call('INCR', KEYS[3])
local record = '{"id":' .. id .. ',"session":' .. cjson.encode(ARGV[1]) .. ',"bytes":' .. ARGV[3]
  .. ',"times":' .. (ARGV[4] == '' and 'null' or ARGV[4]) .. ',"input":' .. ARGV[2] .. '}'
redis.call('HSET', KEYS[1], id, record)
redis.call('HSET', KEYS[2], 'f' .. id, 0)
if ARGV[4] ~= '' then redis.call('HSET', KEYS[2], 'r' .. id, ARGV[4]) end
redis.call('HINCRBY', KEYS[4], ARGV[7], 1)
return record
`;

/** KEYS: rules, uses, epoch. ARGV: id, session ('' for any), book name. 1 when removed. */
const REMOVE = `
local record = redis.call('HGET', KEYS[1], ARGV[1])
if not record then return 0 end
if ARGV[2] ~= '' and cjson.decode(record).session ~= ARGV[2] then return 0 end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[2], 'f' .. ARGV[1], 'r' .. ARGV[1], 'd' .. ARGV[1])
redis.call('HINCRBY', KEYS[3], ARGV[3], 1)
return 1
`;

/** KEYS: rules, uses, epoch. ARGV: session, book name. */
const CLEAR_SESSION = `
local all = redis.call('HGETALL', KEYS[1])
for i = 1, #all, 2 do
  if cjson.decode(all[i + 1]).session == ARGV[1] then
    redis.call('HDEL', KEYS[1], all[i])
    redis.call('HDEL', KEYS[2], 'f' .. all[i], 'r' .. all[i], 'd' .. all[i])
  end
end
redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
return 1
`;

/**
 * One use of a rule: fired counted, a use of its `times` taken, the rule gone with its last.
 * KEYS: rules, uses, epoch. ARGV: id, book name. Returns {remaining or -1, fired}, or nil.
 */
const SPEND = `
if redis.call('HEXISTS', KEYS[1], ARGV[1]) == 0 then return nil end
local fired = redis.call('HINCRBY', KEYS[2], 'f' .. ARGV[1], 1)
local remaining = -1
if redis.call('HEXISTS', KEYS[2], 'r' .. ARGV[1]) == 1 then
  remaining = redis.call('HINCRBY', KEYS[2], 'r' .. ARGV[1], -1)
  if remaining <= 0 then
    redis.call('HDEL', KEYS[1], ARGV[1])
    redis.call('HDEL', KEYS[2], 'f' .. ARGV[1], 'r' .. ARGV[1], 'd' .. ARGV[1])
    redis.call('HINCRBY', KEYS[3], ARGV[2], 1)
  end
end
return {remaining, fired}
`;

/** The rules of a book in the store; `rules` read again when the epoch says they changed. */
export class RedisRuleBook<I> implements RuleBook<I> {
  rules: RuleRecord<I>[] = [];
  private readonly keys: { rules: string; uses: string; ids: string; epoch: string };

  constructor(
    private readonly store: StateStore,
    private readonly name: 'faults' | 'stubs',
    private readonly budget: Budget,
    private readonly epoch: Epoch,
  ) {
    this.keys = {
      rules: store.key(`${name}`),
      uses: store.key(`${name}:uses`),
      ids: store.key(`${name}:ids`),
      epoch: epoch.key,
    };
    epoch.watch(name, () => this.load());
  }

  /** Reads every rule again (the epoch says they changed). */
  async load(): Promise<void> {
    const all = await this.store.redis.hvals(this.keys.rules);
    this.rules = all
      .map((json) => JSON.parse(json) as RuleRecord<I>)
      .map((r) => ({ ...r, times: r.times ?? undefined }))
      .sort((a, b) => a.id - b.id);
  }

  async add(input: I, session: string, times: number | undefined) {
    const { rules, uses, ids, epoch } = this.keys;
    const json = JSON.stringify(input);
    const stored = (await this.store.script(
      ADD,
      4,
      rules,
      uses,
      ids,
      epoch,
      session,
      json,
      Buffer.byteLength(json),
      times === undefined ? '' : times,
      this.budget.maxCount,
      this.budget.maxBytes,
      this.name,
    )) as string | null;
    if (stored === null) return undefined;
    await Promise.all([this.load(), this.epoch.settle()]);
    const record = JSON.parse(stored) as RuleRecord<I>;
    return { ...record, times: record.times ?? undefined };
  }

  async current(): Promise<RuleRecord<I>[]> {
    await this.load();
    return this.rules;
  }

  async uses(): Promise<Map<number, RuleUse>> {
    const all = await this.store.redis.hgetall(this.keys.uses);
    const out = new Map<number, RuleUse>();
    for (const [field, value] of Object.entries(all)) {
      const id = Number(field.slice(1));
      const use = out.get(id) ?? { remaining: undefined, fired: 0 };
      if (field[0] === 'f') use.fired = Number(value);
      else if (field[0] === 'r') use.remaining = Number(value);
      out.set(id, use);
    }
    return out;
  }

  async remove(id: number, session?: string): Promise<boolean> {
    const { rules, uses, epoch } = this.keys;
    const removed = await this.store.script(
      REMOVE,
      3,
      rules,
      uses,
      epoch,
      id,
      session ?? '',
      this.name,
    );
    await Promise.all([this.load(), this.epoch.settle()]);
    return removed === 1;
  }

  async clear(session?: string): Promise<void> {
    const { rules, uses, epoch } = this.keys;
    if (session === undefined) {
      await this.store.redis.multi().del(rules, uses).hincrby(epoch, this.name, 1).exec();
    } else {
      await this.store.script(CLEAR_SESSION, 3, rules, uses, epoch, session, this.name);
    }
    await Promise.all([this.load(), this.epoch.settle()]);
  }

  async reset(): Promise<void> {
    const { rules, uses, ids, epoch } = this.keys;
    await this.store.redis.multi().del(rules, uses, ids).hincrby(epoch, this.name, 1).exec();
    this.rules = [];
    await this.epoch.settle();
  }

  async spend(id: number): Promise<RuleUse | undefined> {
    const { rules, uses, epoch } = this.keys;
    const use = (await this.store.script(SPEND, 3, rules, uses, epoch, id, this.name)) as
      | [number, number]
      | null;
    if (use === null) return undefined;
    return { remaining: use[0] === -1 ? undefined : use[0], fired: use[1] };
  }

  async draw(id: number): Promise<number> {
    return (await this.store.redis.hincrby(this.keys.uses, `d${id}`, 1)) - 1;
  }
}
