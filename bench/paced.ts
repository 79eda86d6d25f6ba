/**
 * `npm run bench:paced`: many paced streams at once. Starts the emulator (from src/, through tsx)
 * with STREAM_TTFT_MS=50 and STREAM_CHUNK_DELAY_MS=50, opens N streaming chat completions of a
 * 256-token scripted reply at once, and reports the gap between consecutive frames of each
 * stream and the emulator's RSS per open stream.
 *
 *   npm run bench:paced                  # 1000 streams
 *   npm run bench:paced -- --streams 2000
 */

import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { benchFixtures, cpuMicros, numberFlag, quantile, rssKiB, startServer } from './harness.js';

const STREAMS = numberFlag(process.argv.slice(2), '--streams', 1000);
const DELAY_MS = 50;
const GOAL_GAP_P99_MS = 65;
const GOAL_KIB_PER_STREAM = 64;

// Client sockets here, server sockets in the child (same limit): N each, plus headroom.
const openFiles = Number(
  /Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1],
);
if (openFiles < STREAMS + 200) {
  console.error(
    `open-file limit is ${openFiles}, too low for ${STREAMS} streams (needs ${STREAMS + 200}): raise it with \`ulimit -n ${STREAMS * 2 + 1000}\` in this shell, or pass fewer --streams`,
  );
  process.exit(2);
}

const body = JSON.stringify({
  model: 'chat-model',
  stream: true,
  messages: [{ role: 'user', content: '[bench] long' }],
});
const agent = new Agent({ keepAlive: true, maxSockets: STREAMS, maxFreeSockets: STREAMS });

interface StreamResult {
  /** ms from sending the request to the first frame, and to the end of the stream. */
  firstFrame: number;
  duration: number;
  frames: number;
  gaps: number[];
  /** When each gap ended (performance.now()), and when the first frame came. */
  gapEnds: number[];
  firstFrameAt: number;
  status: number;
}

/** One stream: counts `\n\n` frame ends per chunk and times the gap since the previous frame. */
function stream(base: string): Promise<StreamResult> {
  return new Promise((resolve, reject) => {
    const sent = performance.now();
    const req = request(
      `${base}/v1/chat/completions`,
      {
        method: 'POST',
        agent,
        headers: { authorization: 'Bearer bench-key', 'content-type': 'application/json' },
      },
      (res) => {
        const out: StreamResult = {
          firstFrame: Number.NaN,
          duration: Number.NaN,
          frames: 0,
          gaps: [],
          gapEnds: [],
          firstFrameAt: Number.NaN,
          status: res.statusCode ?? 0,
        };
        let last = Number.NaN;
        let endedWithNewline = false;
        res.on('data', (chunk: Buffer) => {
          const now = performance.now();
          let n = endedWithNewline && chunk[0] === 0x0a ? 1 : 0;
          for (let at = chunk.indexOf('\n\n'); at >= 0; at = chunk.indexOf('\n\n', at + 2)) n++;
          endedWithNewline = chunk[chunk.length - 1] === 0x0a;
          if (n === 0) return;
          // Frames of one chunk came together: the first waited since the last frame, the rest 0.
          if (Number.isNaN(last)) {
            out.firstFrame = now - sent;
            out.firstFrameAt = now;
          } else {
            out.gaps.push(now - last);
            out.gapEnds.push(now);
          }
          for (let i = 1; i < n; i++) {
            out.gaps.push(0);
            out.gapEnds.push(now);
          }
          out.frames += n;
          last = now;
        });
        res.on('end', () => {
          out.duration = performance.now() - sent;
          resolve(out);
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** The emulator's Prometheus metrics: a sample's value by its name. */
async function scrape(base: string): Promise<(name: string) => number> {
  const text = await (await fetch(`${base}/_emulator/metrics`)).text();
  return (name) => {
    const line = text.split('\n').find((l) => l.startsWith(`${name} `));
    return line === undefined ? Number.NaN : Number(line.slice(name.length + 1));
  };
}

function health(base: string): Promise<void> {
  return new Promise((resolve, reject) => {
    request(`${base}/_emulator/health`, { agent }, (res) => res.resume().on('end', resolve))
      .on('error', reject)
      .end();
  });
}

async function main() {
  const fixtures = benchFixtures();
  const emulator = await startServer(
    'dist/server.bundle.js',
    [],
    {
      LOG_LEVEL: 'warn',
      FIXTURES_DIR: fixtures,
      STREAM_TTFT_MS: String(DELAY_MS),
      STREAM_CHUNK_DELAY_MS: String(DELAY_MS),
    },
    '/_emulator/health',
  );
  const pid = emulator.child.pid;
  // Warm up (JIT, first heap growth) with a few streams, then take the baseline.
  const warm = await Promise.all(Array.from({ length: 20 }, () => stream(emulator.base)));
  const alone = quantile(Float64Array.from(warm.map((r) => r.duration)).sort(), 0.5);
  await new Promise((r) => setTimeout(r, 1000));
  // Open every connection first (one health check each), so the streams measure the emulator's
  // pacing and not the kernel's accept queue under a burst of N connects.
  const connectStart = performance.now();
  await Promise.all(Array.from({ length: STREAMS }, () => health(emulator.base)));
  const connectMs = performance.now() - connectStart;
  const sockets = Object.values(agent.freeSockets).reduce((n, list) => n + (list?.length ?? 0), 0);
  await new Promise((r) => setTimeout(r, 1000));
  const baseline = rssKiB(pid);

  // The first scrape starts the emulator's process metrics; the last one gives its event-loop
  // delay over the streams (prom-client's histogram since the previous scrape).
  await scrape(emulator.base);
  let peak = baseline;
  const sampler = setInterval(() => {
    peak = Math.max(peak, rssKiB(pid));
  }, 100);
  const lag = monitorEventLoopDelay({ resolution: 10 });
  lag.enable();
  const cpuBefore = process.cpuUsage();
  const serverCpuBefore = cpuMicros(pid);
  const started = performance.now();
  const results = await Promise.allSettled(
    Array.from({ length: STREAMS }, () => stream(emulator.base)),
  );
  const wallMs = performance.now() - started;
  const serverMetrics = await scrape(emulator.base);
  const cpu = process.cpuUsage(cpuBefore);
  const serverCpu = (cpuMicros(pid) - serverCpuBefore) / 1000 / wallMs;
  lag.disable();
  clearInterval(sampler);
  peak = Math.max(peak, rssKiB(pid));
  const crashed = emulator.child.exitCode !== null;
  emulator.child.kill();
  agent.destroy();

  const done = results.flatMap((r) =>
    r.status === 'fulfilled' && r.value.status === 200 ? [r.value] : [],
  );
  const failed = STREAMS - done.length;
  const firstFailure = results.find((r) => r.status === 'rejected' || r.value.status !== 200);
  const frames = [...new Set(done.map((r) => r.frames))].sort((a, b) => a - b);
  const gaps = Float64Array.from(done.flatMap((r) => r.gaps)).sort();
  const sorted = (xs: number[]) => Float64Array.from(xs).sort();
  const firstFrames = sorted(done.map((r) => r.firstFrame));
  const durations = sorted(done.map((r) => r.duration));
  // Once every stream has sent its first frame, the burst of N requests is over.
  const allStarted = Math.max(...done.map((r) => r.firstFrameAt));
  const steadyGaps = Float64Array.from(
    done.flatMap((r) => r.gaps.filter((_, i) => (r.gapEnds[i] as number) > allStarted)),
  ).sort();
  const perStream = (peak - baseline) / STREAMS;
  const p99 = quantile(gaps, 0.99);
  const ms = (x: number) => `${x.toFixed(1)} ms`;
  const rows: Array<[string, string, string?]> = [
    ['streams', `${STREAMS} (${done.length} complete, ${failed} failed)`],
    ['connections', `${sockets} opened in ${ms(connectMs)} before the streams`],
    ['frames per stream', frames.join(', ')],
    [
      'frame gap p50/p99/max',
      `${ms(quantile(gaps, 0.5))} / ${ms(p99)} / ${ms(gaps[gaps.length - 1] ?? Number.NaN)}`,
      `goal p99 <= ${GOAL_GAP_P99_MS} ms: ${p99 <= GOAL_GAP_P99_MS ? 'ok' : 'MISSED'}`,
    ],
    [
      '  once all had started',
      `${ms(quantile(steadyGaps, 0.5))} / ${ms(quantile(steadyGaps, 0.99))} / ${ms(steadyGaps[steadyGaps.length - 1] ?? Number.NaN)}`,
      `(${steadyGaps.length} of ${gaps.length} gaps)`,
    ],
    [
      'first frame p50/p99/max',
      `${ms(quantile(firstFrames, 0.5))} / ${ms(quantile(firstFrames, 0.99))} / ${ms(firstFrames[firstFrames.length - 1] ?? Number.NaN)}`,
    ],
    [
      'stream time p50/max',
      `${ms(quantile(durations, 0.5))} / ${ms(durations[durations.length - 1] ?? Number.NaN)}`,
      `(20 streams at once, in the warm-up: ${ms(alone)})`,
    ],
    ['RSS baseline/peak', `${(baseline / 1024).toFixed(1)} / ${(peak / 1024).toFixed(1)} MB`],
    [
      'RSS (peak - baseline)/N',
      `${perStream.toFixed(1)} KiB`,
      `goal <= ${GOAL_KIB_PER_STREAM} KiB: ${perStream <= GOAL_KIB_PER_STREAM ? 'ok' : 'MISSED'}`,
    ],
    [
      'emulator CPU',
      `${(serverCpu * 100).toFixed(0)}% of a core, loop delay p99 ${ms(1000 * serverMetrics('nodejs_eventloop_lag_p99_seconds'))}`,
    ],
    [
      'client (this process)',
      `wall ${(wallMs / 1000).toFixed(1)} s, CPU ${(((cpu.user + cpu.system) / 1000 / wallMs) * 100).toFixed(0)}% of a core, loop delay p99 ${(lag.percentile(99) / 1e6).toFixed(1)} ms`,
    ],
  ];
  console.log(
    `paced streams: node ${process.version}, STREAM_TTFT_MS=${DELAY_MS} STREAM_CHUNK_DELAY_MS=${DELAY_MS}, chat stream of 256 tokens\n`,
  );
  for (const [name, value, goal] of rows) {
    console.log(`${name.padEnd(24)}${value.padEnd(40)}${goal ?? ''}`);
  }
  if (firstFailure) {
    const why =
      firstFailure.status === 'rejected'
        ? String(firstFailure.reason)
        : `status ${firstFailure.value.status}`;
    console.log(`first failure: ${why}`);
  }
  if (crashed) console.log('the emulator exited during the run');
  if (failed > 0 || crashed || p99 > GOAL_GAP_P99_MS || perStream > GOAL_KIB_PER_STREAM) {
    process.exitCode = 1;
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
