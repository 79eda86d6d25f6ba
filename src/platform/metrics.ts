import type { Counter, Histogram, Registry } from 'prom-client';
import type { GroupName } from './group.js';

/**
 * `GET /_emulator/metrics` in Prometheus text, made by prom-client (README "Metrics"). The
 * library costs ~50 ms to load, so it loads after the server listens (or at the first scrape)
 * instead of delaying the first answer; what happens before that is queued (bounded) and
 * counted once it is there. Counters only grow: `/_emulator/reset` does not touch them.
 */

interface Instruments {
  registry: Registry;
  requests: Counter<'group' | 'status'>;
  streams: Histogram<'group' | 'outcome'>;
  cache: Counter<'group' | 'result'>;
  callbacks: Counter<'outcome'>;
}

/** Observations kept while prom-client loads; past this they are dropped (and counted). */
const QUEUE_LIMIT = 10_000;

export type CallbackOutcome = 'delivered' | 'failed' | 'retry';

export class Metrics {
  private instruments: Instruments | undefined;
  private loading: Promise<Instruments> | undefined;
  private queue: Array<(m: Instruments) => void> = [];
  /** Observations dropped while prom-client was loading. */
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

  /** A gateway request that ended (status 0: the connection was dropped without an answer). */
  request(group: GroupName, status: number): void {
    this.use((m) =>
      this.child(`requests ${group} ${status}`, () =>
        m.requests.labels({ group, status: String(status) }),
      ).inc(),
    );
  }

  /** A stream that ended, whole or not, after `seconds` on the wall clock. */
  stream(group: GroupName, seconds: number, completed: boolean): void {
    const outcome = completed ? 'completed' : 'aborted';
    this.use((m) =>
      this.child(`streams ${group} ${outcome}`, () => m.streams.labels({ group, outcome })).observe(
        seconds,
      ),
    );
  }

  /** A prompt that could read the cache: did it? */
  cacheLookup(group: 'messages' | 'chat', hit: boolean): void {
    this.use((m) => m.cache.inc({ group, result: hit ? 'hit' : 'miss' }));
  }

  /** One callback attempt's end. */
  callback(outcome: CallbackOutcome): void {
    this.use((m) => m.callbacks.inc({ outcome }));
  }

  /** Loads prom-client (once) and counts what was queued meanwhile. */
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
      const dropped = () => this.dropped;
      new prom.Gauge({
        name: 'emulator_metrics_dropped',
        help: 'Observations dropped while the metrics library loaded.',
        registers: [registry],
        collect() {
          this.set(dropped());
        },
      });
      for (const apply of this.queue) apply(instruments);
      this.queue = [];
      this.instruments = instruments;
      return instruments;
    });
    return this.loading;
  }

  /** The Prometheus text exposition. */
  async text(): Promise<{ contentType: string; body: string }> {
    const { registry } = await this.load();
    return { contentType: registry.contentType, body: await registry.metrics() };
  }

  private use(apply: (m: Instruments) => void): void {
    if (this.instruments) apply(this.instruments);
    else if (this.queue.length < QUEUE_LIMIT) this.queue.push(apply);
    else this.dropped++;
  }
}
