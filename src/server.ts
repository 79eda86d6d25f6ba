import cluster from 'node:cluster';
import type { AggregatorRegistry, RegistryContentType } from 'prom-client';
import { buildApp } from './app.js';
import { ConfigError, loadConfig, USAGE } from './config.js';
import { METRICS_ANSWER, METRICS_REQUEST, WORKER_METRICS } from './harness/metrics.js';
import { RecordingsError } from './record/recordings.js';
import { FixtureError } from './text/fixtures.js';

/** What the server emits on `process` once it listens (the bin waits for it). */
export const LISTENING_EVENT = 'gateway-emulator:listening';

/** How long a worker of WORKERS=N waits for its state store before it listens anyway. */
const WORKER_STORE_WAIT_MS = 10_000;

/** The process edge: reads env and flags, listens, and shuts down on SIGINT/SIGTERM. */
async function main(): Promise<void> {
  let loaded: ReturnType<typeof loadConfig>;
  try {
    loaded = loadConfig(process.env, process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    process.stderr.write(`gateway-emulator: invalid configuration: ${err.message}\n`);
    process.exit(2);
  }
  if (loaded.help) {
    process.stdout.write(`${USAGE}\n`);
    return;
  }
  const { config } = loaded;
  if (config.workers > 1 && cluster.isPrimary) {
    superviseWorkers(config.workers);
    return;
  }
  let app: Awaited<ReturnType<typeof buildApp>>;
  try {
    app = await buildApp(config);
  } catch (err) {
    if (err instanceof FixtureError) {
      process.stderr.write(`gateway-emulator: invalid fixtures: ${err.message}\n`);
      process.exit(2);
    }
    if (err instanceof RecordingsError) {
      process.stderr.write(`gateway-emulator: invalid RECORDINGS_DIR: ${err.message}\n`);
      process.exit(2);
    }
    throw err;
  }
  let closing = false;
  const shutdown = (signal: string) => {
    if (closing) return;
    closing = true;
    app.log.info({ signal, graceMs: config.shutdownGraceMs }, 'shutting down: draining');
    app.emulator
      .drain()
      .then((report) => {
        const { connectionsCut, left, ms } = report;
        if (connectionsCut > 0 || left.length > 0) {
          app.log.warn({ connectionsCut, left, ms }, 'shutdown deadline: cut what was left');
        } else app.log.info({ ms }, 'drained');
        return app.close();
      })
      .then(
        () => process.exit(0),
        () => process.exit(1),
      );
  };
  process.once('SIGINT', () => shutdown('SIGINT'));
  process.once('SIGTERM', () => shutdown('SIGTERM'));
  if (cluster.isWorker) {
    // A worker of WORKERS=N answers the primary's requests for its metrics from the start.
    await app.emulator.metrics.preload();
    // The primary hands each connection to any worker that listens, and asks none whether it
    // is ready: a worker joins once its store is connected (or after WORKER_STORE_WAIT_MS
    // anyway, so that its readiness can say why not).
    let waited: NodeJS.Timeout | undefined;
    await Promise.race([
      app.emulator.ready(),
      new Promise<void>((resolve) => {
        waited = setTimeout(resolve, WORKER_STORE_WAIT_MS);
      }),
    ]);
    clearTimeout(waited);
  }
  await app.listen({ port: config.port, host: config.host });
  // The bin saves the code start-up compiled, once (bin/gateway-emulator.js).
  const events: NodeJS.EventEmitter = process;
  events.emit(LISTENING_EVENT);
}

/**
 * WORKERS=N: this process forks N workers that serve one port (node:cluster hands out the
 * connections) and keep their state in STATE_URL. A worker that dies is replaced; SIGTERM or
 * SIGINT is passed to every worker, each drains as one process would, and the primary exits
 * once all have.
 */
function superviseWorkers(count: number): void {
  let closing = false;
  const fork = () => cluster.fork({ [WORKER_METRICS]: '1' });
  for (let i = 0; i < count; i++) fork();
  // `/_emulator/metrics` on any worker: the primary asks them all and sums (prom-client).
  let aggregator: Promise<AggregatorRegistry<RegistryContentType>> | undefined;
  cluster.on('message', (worker, message: { type?: string; id?: string }) => {
    if (message?.type !== METRICS_REQUEST) return;
    aggregator ??= import('prom-client').then((prom) => new prom.AggregatorRegistry());
    aggregator
      .then((registry) => registry.clusterMetrics())
      .then(
        (body) => worker.send({ type: METRICS_ANSWER, id: message.id, body }),
        () => worker.send({ type: METRICS_ANSWER, id: message.id, body: undefined }),
      );
  });
  cluster.on('exit', (worker, code, signal) => {
    if (!closing) {
      process.stderr.write(
        `gateway-emulator: worker ${worker.process.pid} ended (${signal ?? code}); starting another\n`,
      );
      fork();
      return;
    }
    if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
  });
  const stop = (signal: NodeJS.Signals) => {
    if (closing) return;
    closing = true;
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) process.exit(0);
    for (const worker of workers) worker?.process.kill(signal);
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

main().catch((err) => {
  process.stderr.write(`gateway-emulator: ${err instanceof Error ? err.stack : String(err)}\n`);
  process.exit(1);
});
