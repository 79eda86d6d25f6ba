/**
 * Traffic statistics by emulator second (docs/control.md "Stats"): for each API group, requests by
 * status class, a latency histogram, tokens as each API reports them, and the most streams open
 * at once; kept for the last STATS_SECONDS seconds of the emulator clock, per session and for
 * all sessions, in slots made when a second first has traffic. Memory does not grow with
 * traffic: at most STATS_SECONDS slots per group, for all sessions and for up to STATS_SESSIONS
 * sessions (the least recently active forgotten past that); a slot holds only the latency
 * buckets its second used (a few hundred bytes).
 */

import type { Feature } from '../platform/features.js';
import type { GroupName } from '../platform/group.js';
import { after, type Maybe } from '../platform/maybe.js';
import type { StatsRequest, StatsSink } from './pipeline.js';

export type StatsGroup = GroupName;
export const STATS_GROUPS: readonly StatsGroup[] = ['chat', 'messages', 'video'];
export const STATUS_CLASSES = ['2xx', '4xx', '5xx', 'aborted'] as const;
export type StatusClass = (typeof STATUS_CLASSES)[number];

/** Seconds of the emulator clock kept (the widest window a query may ask for). */
export const STATS_SECONDS = 3600;
/** Sessions whose own statistics are kept (beyond: they count in all sessions' only). */
export const STATS_SESSIONS = 16;
/** Live stats streams (`/_emulator/stats/stream`) at once. */
export const MAX_STATS_WATCHERS = 100;

export type { StatsRequest };

/**
 * Latency buckets: [0, 0.1 ms), then each 2^(1/4) (about 19 %) wider than the one before, up
 * to 10 minutes; a percentile is read as the middle of its bucket (within about 10 %).
 */
const FIRST_EDGE_MS = 0.1;
const PER_DOUBLING = 4;
const BUCKETS = 1 + Math.ceil(PER_DOUBLING * Math.log2(600_000 / FIRST_EDGE_MS));

export function bucketOf(ms: number): number {
  if (!(ms >= FIRST_EDGE_MS)) return 0;
  return Math.min(BUCKETS - 1, 1 + Math.floor(PER_DOUBLING * Math.log2(ms / FIRST_EDGE_MS)));
}

/** The middle of a bucket (geometric), in ms, to three significant digits. */
function middleOf(bucket: number): number {
  if (bucket === 0) return FIRST_EDGE_MS / 2;
  const low = FIRST_EDGE_MS * 2 ** ((bucket - 1) / PER_DOUBLING);
  return Number((low * 2 ** (0.5 / PER_DOUBLING)).toPrecision(3));
}

/** One second of one group's traffic. */
export interface Slot {
  second: number;
  statuses: number[];
  /** Latency bucket and count pairs, for the buckets this second used. */
  latency: number[];
  tokens: [number, number, number, number];
  openMax: number;
}

export const newSlot = (second: number): Slot => ({
  second,
  statuses: [0, 0, 0, 0],
  latency: [],
  tokens: [0, 0, 0, 0],
  openMax: 0,
});

/** The seconds of one session (or all) a step is read from, and the streams open now. */
export interface SlotSource {
  find(group: StatsGroup, second: number): Slot | undefined;
  openNow(group: StatsGroup): number;
}

/**
 * Where the seconds are kept: in this process (MemoryStatsStore), or in the shared store for
 * every replica (state/stats.ts). Counting is a call that returns at once; reading may wait.
 */
export interface StatsStore {
  request(r: StatsRequest): void;
  stream(group: StatsGroup, session: string, at: number, by: 1 | -1): void;
  /** The seconds `from` to `to` (inclusive) of one session, or all; undefined: none kept. */
  source(session: string | undefined, from: number, to: number): Maybe<SlotSource | undefined>;
  reset(): Maybe<void>;
  resetSession(session: string): Maybe<void>;
}

/** One session's (or all sessions') seconds, per group, and its streams open now. */
class Series implements SlotSource {
  private readonly slots = new Map<StatsGroup, Array<Slot | undefined>>();
  private readonly open = new Map<StatsGroup, number>();

  slot(group: StatsGroup, second: number): Slot {
    let ring = this.slots.get(group);
    if (!ring) {
      ring = new Array(STATS_SECONDS);
      this.slots.set(group, ring);
    }
    const at = second % STATS_SECONDS;
    let slot = ring[at];
    if (slot?.second !== second) {
      slot = newSlot(second);
      // A stream open across seconds is open in each of them.
      slot.openMax = this.open.get(group) ?? 0;
      ring[at] = slot;
    }
    return slot;
  }

  /** The slot of a second, if it had traffic and is still kept. */
  find(group: StatsGroup, second: number): Slot | undefined {
    const slot = this.slots.get(group)?.[second % STATS_SECONDS];
    return slot?.second === second ? slot : undefined;
  }

  opened(group: StatsGroup, second: number, by: 1 | -1): void {
    const now = Math.max(0, (this.open.get(group) ?? 0) + by);
    this.open.set(group, now);
    const slot = this.slot(group, second);
    slot.openMax = Math.max(slot.openMax, now);
  }

  openNow(group: StatsGroup): number {
    return this.open.get(group) ?? 0;
  }
}

export interface StatsStep {
  /** Emulator time the step starts at (ms). */
  at: number;
  groups: Record<StatsGroup, GroupStep>;
}

export interface GroupStep {
  requests: Record<StatusClass, number>;
  /** Requests per second over the step. */
  rate: number;
  latency_ms: { p50: number | null; p95: number | null; p99: number | null };
  tokens: { input: number; cache_read: number; cache_creation: number; output: number };
  open_streams: number;
}

/** Adds `n` to a bucket of a pair list. */
function addTo(pairs: number[], bucket: number, n: number): void {
  for (let i = 0; i < pairs.length; i += 2) {
    if (pairs[i] === bucket) {
      pairs[i + 1] = (pairs[i + 1] ?? 0) + n;
      return;
    }
  }
  pairs.push(bucket, n);
}

export const classOf = (status: number, aborted: boolean): number =>
  aborted ? 3 : status >= 500 ? 2 : status >= 400 ? 1 : 0;

/** The seconds in this process's memory. */
export class MemoryStatsStore implements StatsStore {
  private all = new Series();
  /** Per session, least recently active first. */
  private sessions = new Map<string, Series>();

  private seriesOf(session: string): Series[] {
    let own = this.sessions.get(session);
    if (own) {
      this.sessions.delete(session);
    } else {
      own = new Series();
      if (this.sessions.size >= STATS_SESSIONS) {
        const oldest = this.sessions.keys().next().value as string;
        this.sessions.delete(oldest);
      }
    }
    this.sessions.set(session, own);
    return [this.all, own];
  }

  request(r: StatsRequest): void {
    const second = Math.floor(r.at / 1000);
    const status = classOf(r.status, r.aborted);
    const bucket = bucketOf(r.durationMs);
    for (const series of this.seriesOf(r.session)) {
      const slot = series.slot(r.group, second);
      slot.statuses[status] = (slot.statuses[status] ?? 0) + 1;
      addTo(slot.latency, bucket, 1);
      if (r.tokens) {
        slot.tokens[0] += r.tokens.input;
        slot.tokens[1] += r.tokens.cacheRead;
        slot.tokens[2] += r.tokens.cacheCreation;
        slot.tokens[3] += r.tokens.output;
      }
    }
  }

  /** A stream began (`by` 1) or ended (-1) at emulator time `at`. */
  stream(group: StatsGroup, session: string, at: number, by: 1 | -1): void {
    const second = Math.floor(at / 1000);
    for (const series of this.seriesOf(session)) series.opened(group, second, by);
  }

  reset(): void {
    this.all = new Series();
    this.sessions.clear();
  }

  /** Forgets one session's own statistics (they stay counted in all sessions'). */
  resetSession(session: string): void {
    this.sessions.delete(session);
  }

  source(session: string | undefined): SlotSource | undefined {
    return session === undefined ? this.all : this.sessions.get(session);
  }
}

/**
 * Traffic statistics (docs/control.md "Stats", docs/dashboard.md): counted into a store, in memory or
 * shared, and read as steps.
 */
export class Stats implements StatsSink, Feature {
  /** The part of the emulator `/_emulator/reset?only=stats` names. */
  readonly name = 'stats';

  constructor(private readonly store: StatsStore = new MemoryStatsStore()) {}

  request(r: StatsRequest): void {
    this.store.request(r);
  }

  /** A stream began (`by` 1) or ended (-1) at emulator time `at`. */
  stream(group: StatsGroup, session: string, at: number, by: 1 | -1): void {
    this.store.stream(group, session, at, by);
  }

  reset(): Maybe<void> {
    return this.store.reset();
  }

  /** Live stats streams: how each is ended at shutdown. */
  private readonly watchers = new Set<() => void>();
  private closed = false;

  /**
   * A live stats stream begins (`end` ends it at shutdown); returns how to stop. Undefined when
   * MAX_STATS_WATCHERS already watch, `closed` once a shutdown has begun.
   */
  watch(end: () => void): (() => void) | 'closed' | undefined {
    if (this.closed) return 'closed';
    if (this.watchers.size >= MAX_STATS_WATCHERS) return undefined;
    this.watchers.add(end);
    return () => {
      this.watchers.delete(end);
    };
  }

  /** Ends the live streams as a shutdown begins (a dashboard left open must not hold it). */
  close(): void {
    this.closed = true;
    const ends = [...this.watchers];
    this.watchers.clear();
    for (const end of ends) end();
  }

  /** Forgets one session's own statistics (they stay counted in all sessions'). */
  resetSession(session: string): Maybe<void> {
    return this.store.resetSession(session);
  }

  /**
   * The steps of `stepS` seconds that end with the one holding `now` (the current, unfinished
   * one included, unless `closedOnly`: then the one before it ends them), `windowS` seconds in
   * all, oldest first; for one session or all.
   */
  steps(
    now: number,
    windowS: number,
    stepS: number,
    session?: string,
    closedOnly = false,
  ): Maybe<StatsStep[]> {
    const count = Math.ceil(windowS / stepS);
    const lastStart = (Math.floor(now / 1000 / stepS) - (closedOnly ? 1 : 0)) * stepS;
    const first = lastStart - (count - 1) * stepS;
    return after(this.store.source(session, first, lastStart + stepS - 1), (series) => {
      const out: StatsStep[] = [];
      for (let i = count - 1; i >= 0; i--) {
        const start = lastStart - i * stepS;
        const groups = {} as Record<StatsGroup, GroupStep>;
        for (const group of STATS_GROUPS)
          groups[group] = stepOf(series, group, start, stepS, i === 0 && !closedOnly);
        out.push({ at: start * 1000, groups });
      }
      return out;
    });
  }
}

function stepOf(
  series: SlotSource | undefined,
  group: StatsGroup,
  start: number,
  stepS: number,
  current: boolean,
): GroupStep {
  const statuses = [0, 0, 0, 0];
  const tokens = [0, 0, 0, 0];
  const latency = new Uint32Array(BUCKETS);
  let open = 0;
  for (let second = start; second < start + stepS; second++) {
    const slot = series?.find(group, second);
    if (!slot) continue;
    for (let i = 0; i < 4; i++) {
      statuses[i] = (statuses[i] ?? 0) + (slot.statuses[i] ?? 0);
      tokens[i] = (tokens[i] ?? 0) + (slot.tokens[i] ?? 0);
    }
    const pairs = slot.latency;
    for (let i = 0; i < pairs.length; i += 2) {
      const b = pairs[i] as number;
      latency[b] = (latency[b] ?? 0) + (pairs[i + 1] ?? 0);
    }
    open = Math.max(open, slot.openMax);
  }
  // The step now under way: streams open now count even if no slot of it saw one begin.
  if (current && series) open = Math.max(open, series.openNow(group));
  const total = latency.reduce((sum, n) => sum + n, 0);
  const percentile = (p: number): number | null => {
    if (total === 0) return null;
    const rank = Math.ceil(p * total);
    let seen = 0;
    for (let b = 0; b < BUCKETS; b++) {
      seen += latency[b] ?? 0;
      if (seen >= rank) return middleOf(b);
    }
    return middleOf(BUCKETS - 1);
  };
  const count = statuses.reduce((sum, n) => sum + n, 0);
  return {
    requests: {
      '2xx': statuses[0] ?? 0,
      '4xx': statuses[1] ?? 0,
      '5xx': statuses[2] ?? 0,
      aborted: statuses[3] ?? 0,
    },
    rate: count / stepS,
    latency_ms: { p50: percentile(0.5), p95: percentile(0.95), p99: percentile(0.99) },
    tokens: {
      input: tokens[0] ?? 0,
      cache_read: tokens[1] ?? 0,
      cache_creation: tokens[2] ?? 0,
      output: tokens[3] ?? 0,
    },
    open_streams: open,
  };
}
