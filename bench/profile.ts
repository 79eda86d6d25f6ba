/**
 * `npm run bench:profile [-- <scenario filter>] [--requests N] [--top N]`: where a request's CPU
 * goes. Each scenario runs against the emulator as users run it (LOG_LEVEL=info, the shipped
 * fixtures, the 256-token reply as a stub) under V8's sampling profiler (`--cpu-prof`), for a
 * fixed number of requests; prints the functions with the most self time, in µs per request
 * (start-up included, spread over the requests), beside the process's whole CPU per request. Profiling slows the process down: the figures
 * say where the time goes, `npm run bench` says how fast it is.
 */
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { cpuMicros, startShippedEmulator } from './harness.js';
import { SCENARIOS, type Scenario } from './scenarios.js';
import { positiveNumber } from './stats.js';

const { values: flags, positionals } = parseArgs({
  options: { requests: { type: 'string' }, top: { type: 'string' } },
  allowPositionals: true,
});
const REQUESTS = positiveNumber('--requests', flags.requests, 20_000);
const TOP = positiveNumber('--top', flags.top, 12);
const filter = positionals[0];

interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
  }>;
  samples: number[];
  startTime: number;
  endTime: number;
}

/** Self time per function (name and file), in µs per request, most first. */
function selfTimes(profile: CpuProfile, requests: number): Array<[string, number]> {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const interval = (profile.endTime - profile.startTime) / profile.samples.length;
  const times = new Map<string, number>();
  for (const sample of profile.samples) {
    const frame = byId.get(sample)?.callFrame;
    // (waiting is not CPU)
    if (!frame || frame.functionName === '(idle)') continue;
    const file = frame.url.split('/').pop() ?? '';
    const where = file ? ` ${file}:${frame.lineNumber + 1}` : '';
    const name = `${frame.functionName || '(anonymous)'}${where}`;
    times.set(name, (times.get(name) ?? 0) + interval / requests);
  }
  return [...times].sort((a, b) => b[1] - a[1]);
}

async function profile(s: Scenario): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'bench-profile-'));
  const { base, child } = await startShippedEmulator(['--cpu-prof', `--cpu-prof-dir=${dir}`]);
  const own = { ...s, ...(await s.prepare?.(base)) };
  const before = cpuMicros(child.pid);
  const result = await autocannon({
    url: `${base}${own.url}`,
    method: own.method,
    headers: { 'content-type': 'application/json', ...own.headers },
    ...(own.body === undefined ? {} : { body: own.body }),
    connections: 10,
    amount: REQUESTS,
  });
  const cpu = (cpuMicros(child.pid) - before) / result.requests.total;
  const exited = new Promise((resolve) => child.once('exit', resolve));
  child.kill('SIGINT');
  await exited;
  const file = readdirSync(dir).find((name) => name.endsWith('.cpuprofile'));
  if (!file || result.non2xx > 0) throw new Error(`${s.name}: no profile, or non-2xx answers`);
  const times = selfTimes(JSON.parse(readFileSync(join(dir, file), 'utf8')), REQUESTS);
  console.log(`\n${s.name}: ${cpu.toFixed(0)} µs of CPU per request under the profiler`);
  for (const [name, us] of times.slice(0, TOP)) {
    console.log(`  ${us.toFixed(1).padStart(7)} µs  ${name}`);
  }
}

for (const s of SCENARIOS.filter((s) => !filter || s.name.includes(filter))) await profile(s);
