/**
 * Injected faults: rules set through `/_emulator/faults`, or one request's
 * `x-emulator-fault` header. A fault makes the request fail the way the real gateway fails.
 */

import type { Feature } from './features.js';

export type FaultKind = 'error' | 'disconnect' | 'stream_error' | 'delay' | 'hang';

/** The longest a `delay` fault waits, and how long a `hang` holds a request before dropping it. */
export const MAX_DELAY_MS = 600_000;
export const HANG_MS = 600_000;

export interface FaultRuleInput {
  path: string;
  method?: string;
  status?: number;
  times?: number;
  kind?: FaultKind;
  after_events?: number;
  retry_after_s?: number;
  delay_ms?: number;
}

export interface FaultRuleView {
  id: number;
  path: string;
  method: string | null;
  kind: FaultKind;
  status: number | null;
  times: number | null;
  remaining: number | null;
  after_events: number;
  retry_after_s: number | null;
  delay_ms: number | null;
  fired: number;
}

interface FaultRule {
  id: number;
  path: string;
  prefix: boolean;
  method: string | undefined;
  kind: FaultKind;
  status: number | undefined;
  times: number | undefined;
  remaining: number | undefined;
  afterEvents: number;
  retryAfterS: number | undefined;
  delayMs: number | undefined;
  fired: number;
}

/** The fault one request gets. */
export interface Fault {
  kind: FaultKind;
  /** Unset: the group's default (500, or 529 for a messages stream). */
  status: number | undefined;
  afterEvents: number;
  retryAfterS: number | undefined;
  /** A `delay` fault's wait before the request goes on as usual. */
  delayMs?: number;
  /** What the journal shows. */
  label: string;
}

export const FAULT_HEADER = 'x-emulator-fault';
export const MAX_FAULT_RULES = 1000;

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

  get size(): number {
    return this.rules.length;
  }

  /** Adds a rule; undefined when MAX_FAULT_RULES are already active. */
  add(input: FaultRuleInput): FaultRuleView | undefined {
    if (this.rules.length >= MAX_FAULT_RULES) return undefined;
    const prefix = input.path.endsWith('*');
    const rule: FaultRule = {
      id: this.nextId++,
      path: prefix ? input.path.slice(0, -1) : input.path,
      prefix,
      method: input.method?.toUpperCase(),
      kind:
        input.kind ??
        (input.delay_ms !== undefined && input.status === undefined ? 'delay' : 'error'),
      status: input.status,
      times: input.times,
      remaining: input.times,
      afterEvents: input.after_events ?? 0,
      retryAfterS: input.retry_after_s,
      delayMs: input.delay_ms,
      fired: 0,
    };
    this.rules.push(rule);
    return view(rule);
  }

  list(): FaultRuleView[] {
    return this.rules.map(view);
  }

  reset(): void {
    this.rules = [];
    this.nextId = 1;
  }

  /**
   * The first rule matching this request, consumed once: `now` takes error and disconnect rules
   * (as the request arrives), `stream` takes stream_error rules (once it is known to stream),
   * so a stream rule is never spent on a plain request.
   */
  take(method: string, path: string, phase: 'now' | 'stream'): Fault | undefined {
    const rule = this.rules.find(
      (r) =>
        (r.prefix ? path.startsWith(r.path) : path === r.path) &&
        (r.method === undefined || r.method === method) &&
        (r.kind === 'stream_error') === (phase === 'stream'),
    );
    if (!rule) return undefined;
    rule.fired++;
    if (rule.remaining !== undefined && --rule.remaining <= 0) {
      this.rules = this.rules.filter((r) => r !== rule);
    }
    return {
      kind: rule.kind,
      status: rule.status,
      afterEvents: rule.afterEvents,
      retryAfterS: rule.retryAfterS,
      ...(rule.delayMs === undefined ? {} : { delayMs: rule.delayMs }),
      label: `rule ${rule.id}: ${rule.kind}${rule.status ? ` ${rule.status}` : ''}${
        rule.delayMs === undefined ? '' : ` ${rule.delayMs} ms`
      }`,
    };
  }
}

function view(rule: FaultRule): FaultRuleView {
  return {
    id: rule.id,
    path: rule.prefix ? `${rule.path}*` : rule.path,
    method: rule.method ?? null,
    kind: rule.kind,
    status: rule.status ?? null,
    times: rule.times ?? null,
    remaining: rule.remaining ?? null,
    after_events: rule.afterEvents,
    retry_after_s: rule.retryAfterS ?? null,
    delay_ms: rule.delayMs ?? null,
    fired: rule.fired,
  };
}
