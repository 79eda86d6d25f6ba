import type { Counter, Histogram, Registry } from 'prom-client';
import type { GroupName } from './group.js';

/**
 * `GET /_emulator/metrics` in Prometheus text, made by prom-client (README "Metrics"). The
 * library costs ~50 ms to load, so it loads at the first scrape instead of delaying start-up or
 * the first answers; until then counts are kept as plain numbers (one per label set) and stream
 * durations in a bounded list, and handed over when it loads. Counters only grow:
 * `/_emulator/reset` does not touch them.
 */

interface Instruments {
  registry: Registry;
  requests: Counter<'group' | 'status'>;
  streams: Histogram<'group' | 'outcome'>;
  cache: Counter<'group' | 'result'>;
  callbacks: Counter<'outcome'>;
}

/** An increment of one labelled counter, counted before prom-client is there. */
interface PendingCount {
  n: number;
  apply: (m: Instruments, n: number) => void;
}

/** Stream durations kept before the first scrape; past this they are dropped (and counted). */
export const PENDING_DURATIONS = 10_000;

export type CallbackOutcome = 'delivered' | 'failed' | 'retry';

/**
 * The process itself (CPU, memory, event-loop delay, GC: prom-client's default metrics), once
 * per process whatever the number of apps in it: what they watch is the process's, and the
 * watchers they set up are never taken down.
 */
let processRegistry: Registry | undefined;

export class Metrics {
  private instruments: Instruments | undefined;
  private loading: Promise<Instruments> | undefined;
  private pendingCounts = new Map<string, PendingCount>();
  private pendingDurations: Array<(m: Instruments) => void> = [];
  /** Stream durations dropped before the first scrape. */
  dropped = 0;

  constructor(
    /** Video tasks by status, read at each scrape. */
    private readonly tasksByStatus: () => Map<string, number>,
  ) {}

  /** Labelled children, found once per label set (a labels lookup per observation costs). */
  private readonly children = new Map<string, unknown>();

  private child<C>(key: string, make: () => C): C {
    let child = this.children.get(key) as C | undefined;
    if (child === undefined) {
      child = make();
      this.children.set(key, child);
    }
    return child;
  }

  /** Adds one to a labelled counter, found by `key`. */
  private count(key: string, counter: (m: Instruments) => Counter<string>, labels: object): void {
    const m = this.instruments;
    if (m) {
      this.child(key, () => counter(m).labels(labels as Record<string, string>)).inc();
      return;
    }
    const pending = this.pendingCounts.get(key);
    if (pending) pending.n++;
    else {
      this.pendingCounts.set(key, {
        n: 1,
        apply: (loaded, n) =>
          this.child(key, () => counter(loaded).labels(labels as Record<string, string>)).inc(n),
      });
    }
  }

  /** A gateway request that ended (status 0: the connection was dropped without an answer). */
  request(group: GroupName, status: number): void {
    this.count(`requests ${group} ${status}`, (m) => m.requests, {
      group,
      status: String(status),
    });
  }

  /** A stream that ended, whole or not, after `seconds` on the wall clock. */
  stream(group: GroupName, seconds: number, completed: boolean): void {
    const outcome = completed ? 'completed' : 'aborted';
    const observe = (m: Instruments) =>
      this.child(`streams ${group} ${outcome}`, () => m.streams.labels({ group, outcome })).observe(
        seconds,
      );
    if (this.instruments) observe(this.instruments);
    else if (this.pendingDurations.length < PENDING_DURATIONS) this.pendingDurations.push(observe);
    else this.dropped++;
  }

  /** A prompt that could read the cache: did it? */
  cacheLookup(group: 'messages' | 'chat', hit: boolean): void {
    const result = hit ? 'hit' : 'miss';
    this.count(`cache ${group} ${result}`, (m) => m.cache, { group, result });
  }

  /** One callback attempt's end. */
  callback(outcome: CallbackOutcome): void {
    this.count(`callbacks ${outcome}`, (m) => m.callbacks, { outcome });
  }

  /** Loads prom-client (once) and hands over what was counted meanwhile. */
  load(): Promise<Instruments> {
    this.loading ??= import('prom-client').then((prom) => {
      const registry = new prom.Registry();
      const tasksByStatus = this.tasksByStatus;
      const instruments: Instruments = {
        registry,
        requests: new prom.Counter({
          name: 'emulator_requests_total',
          help: 'Gateway requests answered, by API group and HTTP status (0: dropped).',
          labelNames: ['group', 'status'],
          registers: [registry],
        }),
        streams: new prom.Histogram({
          name: 'emulator_stream_duration_seconds',
          help: 'Wall-clock duration of event streams, by API group and outcome.',
          labelNames: ['group', 'outcome'],
          buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
          registers: [registry],
        }),
        cache: new prom.Counter({
          name: 'emulator_prompt_cache_lookups_total',
          help: 'Prompts that could read the prompt cache, by API group and result (hit, miss).',
          labelNames: ['group', 'result'],
          registers: [registry],
        }),
        callbacks: new prom.Counter({
          name: 'emulator_callback_attempts_total',
          help: 'Video callback attempts, by outcome (delivered, failed for good, retry).',
          labelNames: ['outcome'],
          registers: [registry],
        }),
      };
      new prom.Gauge({
        name: 'emulator_video_tasks',
        help: 'Video tasks held, by status at the emulator clock.',
        labelNames: ['status'],
        registers: [registry],
        collect() {
          this.reset();
          for (const status of ['submitted', 'processing', 'succeed', 'failed']) {
            this.set({ status }, 0);
          }
          for (const [status, count] of tasksByStatus()) this.set({ status }, count);
        },
      });
      processRegistry ??= (() => {
        const shared = new prom.Registry();
        prom.collectDefaultMetrics({ register: shared });
        return shared;
      })();
      const dropped = () => this.dropped;
      new prom.Gauge({
        name: 'emulator_metrics_dropped',
        help: 'Stream durations dropped before the first scrape loaded the metrics library.',
        registers: [registry],
        collect() {
          this.set(dropped());
        },
      });
      for (const { apply, n } of this.pendingCounts.values()) apply(instruments, n);
      for (const observe of this.pendingDurations) observe(instruments);
      this.pendingCounts.clear();
      this.pendingDurations = [];
      this.instruments = instruments;
      return instruments;
    });
    return this.loading;
  }

  /** The Prometheus text exposition: the emulator's metrics, then the process's. */
  async text(): Promise<{ contentType: string; body: string }> {
    const { registry } = await this.load();
    const own = await registry.metrics();
    const process = await (processRegistry as Registry).metrics();
    return { contentType: registry.contentType, body: `${own}\n${process}` };
  }
}
