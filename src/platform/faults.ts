/**
 * Injected faults: rules set through `/_emulator/faults`, or one request's
 * `x-emulator-fault` header. A fault makes the request fail the way the real gateway fails.
 */

import { roomFor } from './budget.js';
import type { Feature } from './features.js';
import {
  type CompiledMatch,
  compileMatch,
  type MatchTarget,
  meets,
  type RequestMatch,
  shownMatch,
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

interface FaultRule {
  id: number;
  session: string;
  /** The length of its JSON, counted against MAX_FAULT_BYTES. */
  bytes: number;
  match: CompiledMatch;
  kind: FaultKind;
  status: number | undefined;
  times: number | undefined;
  remaining: number | undefined;
  afterEvents: number;
  afterBytes: number | undefined;
  retryAfterS: number | undefined;
  delayMs: number | undefined;
  probability: number | undefined;
  seed: number | undefined;
  /** The seeded draws of a rule with a probability. */
  random: (() => number) | undefined;
  fired: number;
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

/** mulberry32: a small seeded generator, so a fault with a probability strikes the same way each run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

/** A rule that acts on a stream: it waits until the request is known to stream. */
const forStreams = (rule: FaultRule) =>
  rule.kind === 'stream_error' || rule.afterBytes !== undefined;

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
  private rules: FaultRule[] = [];
  private nextId = 1;

  /** The delayed and hung requests held now, and their bodies' bytes. */
  private held = { count: 0, bytes: 0 };

  constructor(private readonly hashKey: (key: string) => string) {}

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
    return this.rules.length;
  }

  /**
   * Adds a rule to a session; undefined when MAX_FAULT_RULES are already active or it would
   * take them past MAX_FAULT_BYTES. Throws MatchError for a match that cannot be compiled.
   */
  add(input: FaultRuleInput, session = DEFAULT_SESSION): FaultRuleView | undefined {
    const bytes = roomFor(this.rules, input, {
      maxCount: MAX_FAULT_RULES,
      maxBytes: MAX_FAULT_BYTES,
    });
    if (bytes === undefined) return undefined;
    const source: RequestMatch = {
      ...(input.path === undefined ? {} : { path: input.path }),
      ...(input.method === undefined ? {} : { method: input.method }),
      ...input.match,
    };
    const rule: FaultRule = {
      id: this.nextId++,
      session,
      bytes,
      match: compileMatch(source, this.hashKey),
      kind: input.kind ?? defaultKind(input),
      status: input.status,
      times: input.times,
      remaining: input.times,
      afterEvents: input.after_events ?? 0,
      afterBytes: input.after_bytes,
      retryAfterS: input.retry_after_s,
      delayMs: input.delay_ms,
      probability: input.probability,
      seed: input.seed,
      random: input.probability === undefined ? undefined : seeded(input.seed ?? 0),
      fired: 0,
    };
    this.rules.push(rule);
    return view(rule);
  }

  /** The rules of one session, or of all when none is named. */
  list(session?: string): FaultRuleView[] {
    return this.rules.filter((r) => session === undefined || r.session === session).map(view);
  }

  /** Removes one rule; false when there is none of that id (in that session). */
  remove(id: number, session?: string): boolean {
    const before = this.rules.length;
    this.rules = this.rules.filter(
      (r) => r.id !== id || (session !== undefined && r.session !== session),
    );
    return this.rules.length < before;
  }

  reset(): void {
    this.rules = [];
    this.nextId = 1;
  }

  resetSession(session: string): void {
    this.rules = this.rules.filter((r) => r.session !== session);
  }

  /**
   * The first rule of the request's session that matches it, consumed once. Phase `now` (as the
   * request arrives, before its body is read) takes the rules that need no body; phase `body`
   * takes those that read the body, and, when the request streams, the stream rules (so a
   * stream rule is never spent on a plain request). A rule with a probability strikes when its
   * seeded draw says so, and is passed over otherwise.
   */
  take(
    target: MatchTarget,
    session: string,
    phase: 'now' | 'body',
    streaming = false,
  ): Fault | undefined {
    const rule = this.rules.find((r) => {
      if (r.session !== session) return false;
      if (forStreams(r)) {
        if (phase === 'now' || !streaming) return false;
      } else if (r.match.needsBody !== (phase === 'body')) return false;
      if (!meets(r.match, target)) return false;
      return r.random === undefined || r.random() < (r.probability ?? 1);
    });
    if (!rule) return undefined;
    rule.fired++;
    if (rule.remaining !== undefined && --rule.remaining <= 0) {
      this.rules = this.rules.filter((r) => r !== rule);
    }
    return {
      kind: rule.kind,
      status: rule.status,
      afterEvents: rule.afterEvents,
      ...(rule.afterBytes === undefined ? {} : { afterBytes: rule.afterBytes }),
      retryAfterS: rule.retryAfterS,
      ...(rule.delayMs === undefined ? {} : { delayMs: rule.delayMs }),
      label: `rule ${rule.id}: ${rule.kind}${rule.status ? ` ${rule.status}` : ''}${
        rule.delayMs === undefined ? '' : ` ${rule.delayMs} ms`
      }${rule.afterBytes === undefined ? '' : ` after ${rule.afterBytes} bytes`}`,
    };
  }
}

/** The kind a rule that names none has: what its other fields imply. */
export function defaultKind(input: FaultRuleInput): FaultKind {
  if (input.after_bytes !== undefined) return 'disconnect';
  if (input.delay_ms !== undefined && input.status === undefined) return 'delay';
  return 'error';
}

function view(rule: FaultRule): FaultRuleView {
  const source = rule.match.source;
  return {
    id: rule.id,
    session: rule.session,
    path: source.path ?? null,
    method: rule.match.method ?? null,
    match: shownMatch(source),
    kind: rule.kind,
    status: rule.status ?? null,
    times: rule.times ?? null,
    remaining: rule.remaining ?? null,
    after_events: rule.afterEvents,
    after_bytes: rule.afterBytes ?? null,
    retry_after_s: rule.retryAfterS ?? null,
    delay_ms: rule.delayMs ?? null,
    probability: rule.probability ?? null,
    seed: rule.probability === undefined ? null : (rule.seed ?? 0),
    fired: rule.fired,
  };
}
