import cluster from 'node:cluster';
import { randomUUID } from 'node:crypto';
import type { Histogram, Registry } from 'prom-client';
import type { GroupName } from '../platform/group.js';

/**
 * `GET /_emulator/metrics` in Prometheus text, made by prom-client (docs/control.md "Metrics"). The
 * library costs ~50 ms to load, so it loads at the first scrape instead of delaying start-up or
 * the first answers. Counts are plain numbers, one per label set, that the counters read at
 * each scrape; stream durations go to a histogram, kept in a bounded list until it is there.
 * Counters only grow: `/_emulator/reset` does not touch them.
 */

/** One label set's count. */
interface Tally {
  labels: Record<string, string>;
  n: number;
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

interface Loaded {
  registry: Registry;
  process: Registry;
  streams: Histogram<'group' | 'outcome'>;
}

export class Metrics {
  private loaded: Loaded | undefined;
  private loading: Promise<Loaded> | undefined;
  private readonly requests = new Map<string, Tally>();
  private readonly cache = new Map<string, Tally>();
  private readonly callbacks = new Map<string, Tally>();
  private pendingDurations: Array<[group: GroupName, outcome: string, seconds: number]> = [];
  /** Histogram children by label set (a labels lookup per observation costs). */
  private readonly streamChildren = new Map<string, { observe(seconds: number): void }>();
  /** Stream durations dropped before the first scrape. */
  dropped = 0;

  constructor(
    /** Video tasks by status, read at each scrape. */
    private readonly tasksByStatus: () => Map<string, number> | Promise<Map<string, number>>,
  ) {}

  /** A gateway request that ended (status 0: the connection was dropped without an answer). */
  request(group: GroupName, status: number): void {
    count(this.requests, `${group} ${status}`, { group, status: String(status) });
  }

  /** A stream that ended, whole or not, after `seconds` on the wall clock. */
  stream(group: GroupName, seconds: number, completed: boolean): void {
    const outcome = completed ? 'completed' : 'aborted';
    if (this.loaded) this.observe(this.loaded, group, outcome, seconds);
    else if (this.pendingDurations.length < PENDING_DURATIONS) {
      this.pendingDurations.push([group, outcome, seconds]);
    } else this.dropped++;
  }

  /** A prompt that could read the cache: did it? */
  cacheLookup(group: 'messages' | 'chat', hit: boolean): void {
    const result = hit ? 'hit' : 'miss';
    count(this.cache, `${group} ${result}`, { group, result });
  }

  /** One callback attempt's end. */
  callback(outcome: CallbackOutcome): void {
    count(this.callbacks, outcome, { outcome });
  }

  private observe(loaded: Loaded, group: GroupName, outcome: string, seconds: number): void {
    const key = `${group} ${outcome}`;
    let child = this.streamChildren.get(key);
    if (!child) {
      child = loaded.streams.labels({ group, outcome });
      this.streamChildren.set(key, child);
    }
    child.observe(seconds);
  }

  /** Loads prom-client (once) and hands over the durations kept meanwhile. */
  load(): Promise<Loaded> {
    this.loading ??= import('prom-client').then((prom) => {
      const registry = new prom.Registry();
      const counter = (
        name: string,
        help: string,
        labelNames: string[],
        tallies: Map<string, Tally>,
      ) =>
        new prom.Counter({
          name,
          help,
          labelNames,
          registers: [registry],
          async collect() {
            this.reset();
            for (const { labels, n } of tallies.values()) this.inc(labels, n);
          },
        });
      counter(
        'emulator_requests_total',
        'Gateway requests answered, by API group and HTTP status (0: dropped).',
        ['group', 'status'],
        this.requests,
      );
      const streams = new prom.Histogram({
        name: 'emulator_stream_duration_seconds',
        help: 'Wall-clock duration of event streams, by API group and outcome.',
        labelNames: ['group', 'outcome'],
        buckets: [0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
        registers: [registry],
      });
      counter(
        'emulator_prompt_cache_lookups_total',
        'Prompts that could read the prompt cache, by API group and result (hit, miss).',
        ['group', 'result'],
        this.cache,
      );
      counter(
        'emulator_callback_attempts_total',
        'Video callback attempts, by outcome (delivered, failed for good, retry).',
        ['outcome'],
        this.callbacks,
      );
      const tasksByStatus = this.tasksByStatus;
      new prom.Gauge({
        name: 'emulator_video_tasks',
        help: 'Video tasks held, by status at the emulator clock.',
        labelNames: ['status'],
        registers: [registry],
        // Workers of one emulator (WORKERS=N) each read the same tasks: one count, not a sum.
        aggregator: 'first',
        async collect() {
          this.reset();
          for (const status of ['submitted', 'processing', 'succeed', 'failed']) {
            this.set({ status }, 0);
          }
          for (const [status, count] of await tasksByStatus()) this.set({ status }, count);
        },
      });
      const dropped = () => this.dropped;
      new prom.Gauge({
        name: 'emulator_metrics_dropped',
        help: 'Stream durations dropped before the first scrape loaded the metrics library.',
        registers: [registry],
        collect() {
          this.set(dropped());
        },
      });
      if (!processRegistry) {
        processRegistry = new prom.Registry();
        prom.collectDefaultMetrics({ register: processRegistry });
      }
      const loaded: Loaded = { registry, process: processRegistry, streams };
      // A worker (WORKERS=N) answers the primary's requests for its metrics (prom-client).
      // (making an AggregatorRegistry is what sets prom-client's listener up)
      if (cluster.isWorker) {
        prom.AggregatorRegistry.setRegistries([registry, processRegistry]);
        new prom.AggregatorRegistry();
      }
      for (const [group, outcome, seconds] of this.pendingDurations) {
        this.observe(loaded, group, outcome, seconds);
      }
      this.pendingDurations = [];
      this.loaded = loaded;
      return loaded;
    });
    return this.loading;
  }

  /**
   * The Prometheus text exposition: the emulator's metrics, then the process's; with WORKERS=N,
   * every worker's, summed by the primary (prom-client's AggregatorRegistry).
   */
  async text(): Promise<{ contentType: string; body: string }> {
    const { registry, process: own } = await this.load();
    if (cluster.isWorker && process.env[WORKER_METRICS] === '1') {
      const body = await fromPrimary();
      if (body !== undefined) return { contentType: registry.contentType, body };
    }
    const body = `${await registry.metrics()}\n${await own.metrics()}`;
    return { contentType: registry.contentType, body };
  }

  /** Loads the library now (a worker must answer the primary's requests from its start). */
  async preload(): Promise<void> {
    await this.load();
  }
}

/** Adds one to a label set's count (its labels are kept the first time). */
function count(tallies: Map<string, Tally>, key: string, labels: Record<string, string>): void {
  const tally = tallies.get(key);
  if (tally) tally.n++;
  else tallies.set(key, { labels, n: 1 });
}

/** Set by the primary of WORKERS=N in its workers' environment: it sums their metrics. */
export const WORKER_METRICS = 'GWEMU_WORKER_METRICS';
export const METRICS_REQUEST = 'gwemu:metrics';
export const METRICS_ANSWER = 'gwemu:metrics:answer';

/** Every worker's metrics, summed by the primary; undefined if it does not answer in 5 s. */
function fromPrimary(): Promise<string | undefined> {
  const id = randomUUID();
  return new Promise((resolve) => {
    const onMessage = (message: { type?: string; id?: string; body?: string }) => {
      if (message?.type !== METRICS_ANSWER || message.id !== id) return;
      done(message.body);
    };
    const timer = setTimeout(() => done(undefined), 5000);
    const done = (body: string | undefined) => {
      clearTimeout(timer);
      process.off('message', onMessage);
      resolve(body);
    };
    process.on('message', onMessage);
    process.send?.({ type: METRICS_REQUEST, id });
  });
}
