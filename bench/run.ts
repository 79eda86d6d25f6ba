/**
 * `npm run bench`: the emulator against a bare Fastify server returning the same bytes, both on
 * loopback in this run, driven by autocannon. Prints req/s, p99 latency and emulator/bare ratios.
 *
 *   npm run bench                # every scenario
 *   npm run bench -- --quick     # 1 s per run, for a smoke test
 *   npm run bench -- chat        # scenarios whose name contains "chat"
 */
import { type ChildProcess, fork } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { SCENARIOS, type Scenario } from './scenarios.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const filter = args.find((a) => !a.startsWith('--'));
const DURATION_S = quick ? 1 : 5;
const ROUNDS = quick ? 1 : 3;
const CONNECTIONS = 10;

function freePort(): Promise<number> {
  return new Promise((ok) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => ok(typeof address === 'object' && address ? address.port : 0));
    });
  });
}

function start(
  script: string,
  scriptArgs: string[],
  env: Record<string, string>,
): Promise<ChildProcess> {
  return new Promise((ok, fail) => {
    const child = fork(script, scriptArgs, {
      env: { ...process.env, ...env },
      execArgv: script.endsWith('.ts') ? ['--import', 'tsx'] : [],
      stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
    });
    child.once('error', fail);
    child.once('exit', (code) => fail(new Error(`${script} exited with ${code}`)));
    child.once('message', () => ok(child));
  });
}

async function waitHealthy(url: string) {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      // not up yet
    }
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`${url} never became healthy`);
}

/** CPU time (user + system) a process has used, in µs, from /proc (Linux). */
function cpuMicros(pid: number | undefined): number {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return Number.NaN;
  }
}

async function measure(base: string, scenario: Scenario, duration: number, pid?: number) {
  const cpuBefore = cpuMicros(pid);
  const result = await autocannon({
    url: `${base}${scenario.url}`,
    method: scenario.method,
    headers: { 'content-type': 'application/json', ...scenario.headers },
    ...(scenario.body === undefined ? {} : { body: scenario.body }),
    connections: CONNECTIONS,
    duration,
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${scenario.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  }
  const cpu = (cpuMicros(pid) - cpuBefore) / result.requests.total;
  return { rps: result.requests.average, p99: result.latency.p99, cpu };
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] as number;

async function main() {
  const scenarios = SCENARIOS.filter((s) => !filter || s.name.includes(filter));
  const emulatorPort = await freePort();
  const emulatorBase = `http://127.0.0.1:${emulatorPort}`;
  const emulator = fork('dist/server.js', [], {
    env: { ...process.env, PORT: String(emulatorPort), LOG_LEVEL: 'warn', ...SCENARIO_ENV },
    stdio: ['ignore', 'ignore', 'inherit', 'ipc'],
  });
  await waitHealthy(`${emulatorBase}/_emulator/health`);

  // Capture the emulator's bytes for each scenario; the baseline serves exactly those.
  const routes = [];
  for (const s of scenarios) {
    await s.prepare?.(emulatorBase);
    const res = await fetch(`${emulatorBase}${s.url}`, {
      method: s.method,
      headers: { 'content-type': 'application/json', ...s.headers },
      ...(s.body === undefined ? {} : { body: s.body }),
    });
    if (!res.ok) throw new Error(`${s.name}: emulator answered ${res.status}: ${await res.text()}`);
    routes.push({
      method: s.method,
      url: s.url.split('?')[0],
      contentType: res.headers.get('content-type') ?? 'application/json',
      body: await res.text(),
    });
  }
  const specFile = join(mkdtempSync(join(tmpdir(), 'bench-')), 'baseline.json');
  const baselinePort = await freePort();
  writeFileSync(specFile, JSON.stringify({ port: baselinePort, routes }));
  const baseline = await start('bench/baseline-server.ts', [specFile], {});
  const baselineBase = `http://127.0.0.1:${baselinePort}`;

  console.log(
    `gateway-emulator bench: node ${process.version}, ${CONNECTIONS} connections, ${DURATION_S} s x ${ROUNDS} rounds per server (medians)\n`,
  );
  console.log(
    'scenario                        |  emulator req/s  p99 ms  cpu µs/req |      bare req/s  p99 ms  cpu µs/req | ratio   goal',
  );
  let failed = 0;
  for (const s of scenarios) {
    await measure(emulatorBase, s, 1);
    await measure(baselineBase, s, 1);
    const emu: Array<Awaited<ReturnType<typeof measure>>> = [];
    const bare: Array<Awaited<ReturnType<typeof measure>>> = [];
    for (let r = 0; r < ROUNDS; r++) {
      bare.push(await measure(baselineBase, s, DURATION_S, baseline.pid));
      emu.push(await measure(emulatorBase, s, DURATION_S, emulator.pid));
    }
    const row = (xs: typeof emu) =>
      `${median(xs.map((x) => x.rps))
        .toFixed(0)
        .padStart(15)} ${median(xs.map((x) => x.p99))
        .toFixed(1)
        .padStart(7)} ${median(xs.map((x) => x.cpu))
        .toFixed(1)
        .padStart(11)}`;
    const ratio = median(emu.map((x) => x.rps)) / median(bare.map((x) => x.rps));
    const ok = ratio >= s.goal;
    if (!ok) failed++;
    console.log(
      `${s.name.padEnd(32)}|${row(emu)} |${row(bare)} | ${ratio.toFixed(2).padStart(5)}  >= ${s.goal} ${ok ? 'ok' : 'BELOW GOAL'}`,
    );
  }
  for (const extra of EXTRA_REPORTS) await extra(emulatorBase);
  emulator.kill();
  baseline.kill();
  if (failed > 0 && !quick) process.exitCode = 1;
}

const SCENARIO_ENV: Record<string, string> = {};
const EXTRA_REPORTS: Array<(base: string) => Promise<void>> = [];

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
