/**
 * `npm run bench:paced`: many paced streams at once. Starts the emulator (the bundle, as `npm start` runs it)
 * with STREAM_TTFT_MS=50 and STREAM_CHUNK_DELAY_MS=50, opens N streaming chat completions of a
 * 256-token scripted reply at once, and reports the gap between consecutive frames of each
 * stream and the emulator's RSS per open stream.
 *
 *   npm run bench:paced                  # 1000 streams
 *   npm run bench:paced -- --streams 2000
 */

import { readFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { monitorEventLoopDelay, performance } from 'node:perf_hooks';
import { benchFixtures, cpuMicros, rssKiB, startServer } from './harness.js';
import { numberFlag, quantile } from './stats.js';

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
/** The request every stream sends, as bytes on its own connection. */
const requestBytes = (port: number) =>
  Buffer.from(
    `POST /v1/chat/completions HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nauthorization: Bearer bench-key\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );

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

/** A connection opened ahead of its stream, so the streams do not measure the accept queue. */
function open(port: number): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

const CR = 0x0d;
const LF = 0x0a;

/**
 * One stream on its own connection, read as raw bytes: the status line, then the chunked body
 * decoded by hand, counting the `\n\n` that end frames and timing the gap since the previous
 * frame. An HTTP client library's parsing and stream machinery per read, for a thousand
 * streams, would delay this process's event loop enough to show in the gaps it measures.
 */
function stream(socket: Socket, port: number): Promise<StreamResult> {
  return new Promise((resolve, reject) => {
    const sent = performance.now();
    const out: StreamResult = {
      firstFrame: Number.NaN,
      duration: Number.NaN,
      frames: 0,
      gaps: [],
      gapEnds: [],
      firstFrameAt: Number.NaN,
      status: 0,
    };
    let head = '';
    let inBody = false;
    /** Bytes left of the current chunk's data; -1 while reading a size line. */
    let left = -1;
    let sizeLine = '';
    /** CR LF bytes still to skip after a chunk's data. */
    let skip = 0;
    let previousByte = 0;
    let last = Number.NaN;
    const finish = () => {
      out.duration = performance.now() - sent;
      socket.destroy();
      resolve(out);
    };
    /** Counts frame ends in body bytes [from, to) (a `\n\n` may span two reads). */
    const frames = (chunk: Buffer, from: number, to: number): number => {
      let n = 0;
      for (let i = from; i < to; i++) {
        const byte = chunk[i] as number;
        if (byte === LF && previousByte === LF) {
          n++;
          previousByte = 0;
        } else previousByte = byte;
      }
      return n;
    };
    socket.on('data', (chunk: Buffer) => {
      const now = performance.now();
      let at = 0;
      if (!inBody) {
        head += chunk.toString('latin1');
        const end = head.indexOf('\r\n\r\n');
        if (end === -1) return;
        out.status = Number(head.slice(9, 12));
        at = chunk.length - (head.length - end - 4);
        inBody = true;
      }
      let n = 0;
      while (at < chunk.length) {
        if (skip > 0) {
          skip--;
          at++;
        } else if (left === -1) {
          const byte = chunk[at++] as number;
          if (byte === LF) {
            left = Number.parseInt(sizeLine, 16);
            sizeLine = '';
            if (left === 0) {
              record(n, now);
              finish();
              return;
            }
          } else if (byte !== CR) sizeLine += String.fromCharCode(byte);
        } else {
          const to = Math.min(chunk.length, at + left);
          n += frames(chunk, at, to);
          left -= to - at;
          at = to;
          if (left === 0) {
            left = -1;
            skip = 2;
          }
        }
      }
      record(n, now);
    });
    /** Frames of one read came together: the first waited since the last frame, the rest 0. */
    const record = (n: number, now: number) => {
      if (n === 0) return;
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
    };
    socket.once('error', reject);
    socket.once('close', () => {
      if (Number.isNaN(out.duration))
        reject(new Error('connection closed before the stream ended'));
    });
    socket.write(requestBytes(port));
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

async function main() {
  const fixtures = benchFixtures();
  const emulator = await startServer(
    'dist/server.bundle.cjs',
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
  const { port } = emulator;
  const warmSockets = await Promise.all(Array.from({ length: 20 }, () => open(port)));
  const warm = await Promise.all(warmSockets.map((socket) => stream(socket, port)));
  const alone = quantile(Float64Array.from(warm.map((r) => r.duration)).sort(), 0.5);
  await new Promise((r) => setTimeout(r, 1000));
  // Open every connection first, so the streams measure the emulator's pacing and not the
  // kernel's accept queue under a burst of N connects.
  const connectStart = performance.now();
  const sockets = await Promise.all(Array.from({ length: STREAMS }, () => open(port)));
  const connectMs = performance.now() - connectStart;
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
  const results = await Promise.allSettled(sockets.map((socket) => stream(socket, port)));
  const wallMs = performance.now() - started;
  const serverMetrics = await scrape(emulator.base);
  const cpu = process.cpuUsage(cpuBefore);
  const serverCpu = (cpuMicros(pid) - serverCpuBefore) / 1000 / wallMs;
  lag.disable();
  clearInterval(sampler);
  peak = Math.max(peak, rssKiB(pid));
  const crashed = emulator.child.exitCode !== null;
  emulator.child.kill();

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
    ['connections', `${sockets.length} opened in ${ms(connectMs)} before the streams`],
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
