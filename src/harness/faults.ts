/**
 * Injected faults: rules set through `/_emulator/faults`, or one request's
 * `x-emulator-fault` header. A fault makes the request fail the way the real gateway fails.
 */

import type { Feature } from '../platform/features.js';
import { after } from '../platform/maybe.js';
import {
  MemoryRuleBook,
  type RuleBook,
  type RuleRecord,
  type RuleUse,
} from '../state/rule-book.js';
import {
  type CompiledMatch,
  compileMatch,
  type MatchTarget,
  meets,
  type RequestMatch,
  shownMatch,
  storableMatch,
} from './match.js';
import { DEFAULT_SESSION } from './session.js';

export type FaultKind = 'error' | 'disconnect' | 'stream_error' | 'delay' | 'hang';

/** The longest a `delay` fault waits, and how long a `hang` holds a request before dropping it. */
export const MAX_DELAY_MS = 600_000;
export const HANG_MS = 600_000;
/** Delayed or hung requests held at once, at most (more are refused 429, as journal waits are). */
export const MAX_HELD = 1000;
/**
 * The bodies of the delayed requests held at once, at most, as they weigh parsed (a delay keeps
 * its body; see heldWeight).
 */
export const MAX_HELD_BYTES = 256 * 1024 * 1024;

export interface FaultRuleInput {
  /** Shorthand for `match.path`. */
  path?: string;
  /** Shorthand for `match.method`. */
  method?: string;
  match?: RequestMatch;
  status?: number;
  times?: number;
  kind?: FaultKind;
  after_events?: number;
  after_bytes?: number;
  retry_after_s?: number;
  delay_ms?: number;
  probability?: number;
  seed?: number;
}

export interface FaultRuleView {
  id: number;
  session: string;
  path: string | null;
  method: string | null;
  match: RequestMatch;
  kind: FaultKind;
  status: number | null;
  times: number | null;
  remaining: number | null;
  after_events: number;
  after_bytes: number | null;
  retry_after_s: number | null;
  delay_ms: number | null;
  probability: number | null;
  seed: number | null;
  fired: number;
}

/** A rule as stored: what was asked for. */
type StoredFault = RuleRecord<FaultRuleInput>;

/** A stored rule made ready to match (once per process, per rule). */
interface FaultRule {
  record: StoredFault;
  match: CompiledMatch;
  kind: FaultKind;
}
declare module 'fastify' {
  interface FastifyRequest {
    /** A `stream_error` fault asked for by header, waiting to see whether the request streams. */
    pendingFault: Fault | undefined;
  }
}

/** The fault one request gets. */
export interface Fault {
  kind: FaultKind;
  /** Unset: the group's default (500, or 529 for a messages stream). */
  status: number | undefined;
  afterEvents: number;
  /** A stream cut (the connection dropped) once this many bytes of it were sent. */
  afterBytes?: number;
  retryAfterS: number | undefined;
  /** A `delay` fault's wait before the request goes on as usual. */
  delayMs?: number;
  /** What the journal shows. */
  label: string;
}

/**
 * Draw `n` (from 0) of mulberry32 seeded with `seed`: a small seeded generator, so a fault with
 * a probability strikes the same way each run. Its state only ever adds a constant, so any draw
 * is found from its number, and processes sharing a rule share one sequence of draws.
 */
export function drawOf(seed: number, n: number): number {
  let t = ((seed >>> 0) + Math.imul(n + 1, 0x6d2b79f5)) >>> 0;
  t = Math.imul(t ^ (t >>> 15), t | 1);
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
}

/** A rule that acts on a stream: it waits until the request is known to stream. */
const forStreams = (rule: FaultRule) =>
  rule.kind === 'stream_error' || rule.record.input.after_bytes !== undefined;

export const FAULT_HEADER = 'x-emulator-fault';
export const MAX_FAULT_RULES = 1000;
/** The JSON of all the active rules, at most (a rule's match may hold a 32 MB body value). */
export const MAX_FAULT_BYTES = 16 * 1024 * 1024;

/**
 * Reads `x-emulator-fault: <status> | disconnect | stream_error | hang | delay=<ms>`; undefined
 * when malformed.
 */
export function parseFaultHeader(value: string): Fault | undefined {
  const label = `header ${FAULT_HEADER}: ${value}`;
  const base = { afterEvents: 0, retryAfterS: undefined, label };
  if (value === 'disconnect' || value === 'stream_error' || value === 'hang') {
    return { kind: value, status: undefined, ...base };
  }
  const delay = /^delay=(\d{1,6})$/.exec(value);
  if (delay && Number(delay[1]) <= MAX_DELAY_MS) {
    return { kind: 'delay', status: undefined, ...base, delayMs: Number(delay[1]) };
  }
  if (/^[45]\d\d$/.test(value)) return { kind: 'error', status: Number(value), ...base };
  return undefined;
}

export class Faults implements Feature {
  readonly name = 'faults';
  /** Each stored rule compiled, by the record it was made from. */
  private compiled = new WeakMap<StoredFault, FaultRule>();

  /** The delayed and hung requests held now, and their bodies' bytes. */
  private held = { count: 0, bytes: 0 };

  constructor(
    private readonly hashKey: (key: string) => string,
    private readonly book: RuleBook<FaultRuleInput> = new MemoryRuleBook({
      maxCount: MAX_FAULT_RULES,
      maxBytes: MAX_FAULT_BYTES,
    }),
  ) {}

  /**
   * Takes a place for a request a fault holds back (and its body's bytes): undefined when
   * MAX_HELD are held or their bodies would pass MAX_HELD_BYTES, else what gives it back (once,
   * however often it is called).
   */
  hold(bytes: number): (() => void) | undefined {
    if (this.held.count >= MAX_HELD || this.held.bytes + bytes > MAX_HELD_BYTES) return undefined;
    this.held.count++;
    this.held.bytes += bytes;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.held.count--;
      this.held.bytes -= bytes;
    };
  }

  get size(): number {
    return this.book.rules.length;
  }

  /**
   * Adds a rule to a session; undefined when MAX_FAULT_RULES are already active or it would
   * take them past MAX_FAULT_BYTES. Throws MatchError for a match that cannot be compiled.
   */
  add(
    input: FaultRuleInput,
    session = DEFAULT_SESSION,
  ): FaultRuleView | undefined | Promise<FaultRuleView | undefined> {
    compileMatch(sourceOf(input), this.hashKey);
    // Stored with fingerprints for its credentials (a key, a credential header's value).
    const stored = input.match
      ? { ...input, match: storableMatch(input.match, this.hashKey) }
      : input;
    const added = this.book.add(stored, session, input.times);
    const shown = (record: StoredFault | undefined) =>
      record && view(record, { remaining: record.times, fired: 0 });
    return after(added, shown);
  }

  /** The rules of one session, or of all when none is named. */
  list(session?: string): FaultRuleView[] | Promise<FaultRuleView[]> {
    const shown = (rules: readonly StoredFault[], uses: Map<number, RuleUse>) =>
      rules
        .filter((r) => session === undefined || r.session === session)
        .map((r) => view(r, uses.get(r.id) ?? { remaining: r.times, fired: 0 }));
    const rules = this.book.current();
    const uses = this.book.uses();
    return rules instanceof Promise || uses instanceof Promise
      ? Promise.all([rules, uses]).then(([r, u]) => shown(r, u))
      : shown(rules, uses);
  }

  /** Removes one rule; false when there is none of that id (in that session). */
  remove(id: number, session?: string): boolean | Promise<boolean> {
    return this.book.remove(id, session);
  }

  reset(): void | Promise<void> {
    this.compiled = new WeakMap();
    return this.book.reset();
  }

  resetSession(session: string): void | Promise<void> {
    return this.book.clear(session);
  }

  /**
   * The first rule of the request's session that matches it, consumed once. Phase `now` (as the
   * request arrives, before its body is read) takes the rules that need no body; phase `body`
   * takes those that read the body, and, when the request streams, the stream rules (so a
   * stream rule is never spent on a plain request). A rule with a probability strikes when its
   * seeded draw says so, and is passed over otherwise. A rule another process used up meanwhile
   * is passed over too (its last use is spent once).
   */
  take(
    target: MatchTarget,
    session: string,
    phase: 'now' | 'body',
    streaming = false,
  ): Fault | undefined | Promise<Fault | undefined> {
    const rules = this.book.rules;
    for (let i = 0; i < rules.length; i++) {
      const rule = this.ruleOf(rules[i] as StoredFault);
      if (!this.applies(rule, target, session, phase, streaming)) continue;
      const { probability, seed } = rule.record.input;
      const draw = probability === undefined ? undefined : this.book.draw(rule.record.id);
      if (draw instanceof Promise) {
        return this.takeShared(rules, i, target, session, phase, streaming);
      }
      if (draw !== undefined && drawOf(seed ?? 0, draw) >= (probability as number)) continue;
      const use = this.book.spend(rule.record.id);
      if (use instanceof Promise)
        return this.takeShared(rules, i, target, session, phase, streaming, use);
      if (use === undefined) continue;
      return faultOf(rule);
    }
    return undefined;
  }

  /** `take` over a shared book: each draw and use is the store's, awaited in turn. */
  private async takeShared(
    rules: readonly StoredFault[],
    from: number,
    target: MatchTarget,
    session: string,
    phase: 'now' | 'body',
    streaming: boolean,
    spending?: Promise<RuleUse | undefined>,
  ): Promise<Fault | undefined> {
    for (let i = from; i < rules.length; i++) {
      const rule = this.ruleOf(rules[i] as StoredFault);
      if (i > from || spending === undefined) {
        if (i > from && !this.applies(rule, target, session, phase, streaming)) continue;
        const { probability, seed } = rule.record.input;
        if (probability !== undefined) {
          const draw = await this.book.draw(rule.record.id);
          if (drawOf(seed ?? 0, draw) >= probability) continue;
        }
      }
      const use = await (i === from && spending ? spending : this.book.spend(rule.record.id));
      if (use === undefined) continue;
      return faultOf(rule);
    }
    return undefined;
  }

  private applies(
    rule: FaultRule,
    target: MatchTarget,
    session: string,
    phase: 'now' | 'body',
    streaming: boolean,
  ): boolean {
    if (rule.record.session !== session) return false;
    if (forStreams(rule)) {
      if (phase === 'now' || !streaming) return false;
    } else if (rule.match.needsBody !== (phase === 'body')) return false;
    return meets(rule.match, target);
  }

  private ruleOf(record: StoredFault): FaultRule {
    let rule = this.compiled.get(record);
    if (!rule) {
      rule = {
        record,
        match: compileMatch(sourceOf(record.input), this.hashKey),
        kind: record.input.kind ?? defaultKind(record.input),
      };
      this.compiled.set(record, rule);
    }
    return rule;
  }
}

/** A rule's match: its own, with the `path` and `method` shorthands. */
const sourceOf = (input: FaultRuleInput): RequestMatch => ({
  ...(input.path === undefined ? {} : { path: input.path }),
  ...(input.method === undefined ? {} : { method: input.method }),
  ...input.match,
});

/** The fault a rule gives a request. */
function faultOf(rule: FaultRule): Fault {
  const { input, id } = rule.record;
  return {
    kind: rule.kind,
    status: input.status,
    afterEvents: input.after_events ?? 0,
    ...(input.after_bytes === undefined ? {} : { afterBytes: input.after_bytes }),
    retryAfterS: input.retry_after_s,
    ...(input.delay_ms === undefined ? {} : { delayMs: input.delay_ms }),
    label: `rule ${id}: ${rule.kind}${input.status ? ` ${input.status}` : ''}${
      input.delay_ms === undefined ? '' : ` ${input.delay_ms} ms`
    }${input.after_bytes === undefined ? '' : ` after ${input.after_bytes} bytes`}`,
  };
}

/** The kind a rule that names none has: what its other fields imply. */
export function defaultKind(input: FaultRuleInput): FaultKind {
  if (input.after_bytes !== undefined) return 'disconnect';
  if (input.delay_ms !== undefined && input.status === undefined) return 'delay';
  return 'error';
}

function view(record: StoredFault, use: RuleUse): FaultRuleView {
  const { input } = record;
  const source = sourceOf(input);
  const compiledMethod = source.method?.toUpperCase();
  return {
    id: record.id,
    session: record.session,
    path: source.path ?? null,
    method: compiledMethod ?? null,
    match: shownMatch(source),
    kind: input.kind ?? defaultKind(input),
    status: input.status ?? null,
    times: input.times ?? null,
    remaining: use.remaining ?? null,
    after_events: input.after_events ?? 0,
    after_bytes: input.after_bytes ?? null,
    retry_after_s: input.retry_after_s ?? null,
    delay_ms: input.delay_ms ?? null,
    probability: input.probability ?? null,
    seed: input.probability === undefined ? null : (input.seed ?? 0),
    fired: use.fired,
  };
}
