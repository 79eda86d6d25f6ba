/**
 * `npm run bench`: the emulator against three baselines answering the same bytes, all on
 * loopback in this run, driven by autocannon: the limit (a bare node:http server), bare Fastify,
 * and Fastify with the emulator's own route schemas (validation and serialization, nothing
 * else). Prints req/s and server CPU time per request (medians), the emulator's throughput as a
 * share of each (the median over rounds of back-to-back measurements, in rotating order) and the
 * schema baseline's share of the limit, the emulator's own work (its CPU µs a request over the
 * schema baseline's) beside what the goal leaves for it, then the memory cost of finished video
 * tasks and the time from spawn to the first answer.
 *
 *   npm run bench                # every scenario
 *   npm run bench -- --quick     # 1 s per run, for a smoke test
 *   npm run bench -- video       # scenarios whose name contains "video"
 *   npm run bench -- --rounds 9  # more rounds per scenario (default 5), for a steadier median
 *   npm run bench -- --calibrate "video task query"
 *                                # the limit with 5 to 40 µs of busy work per request, against
 *                                # itself: what a share of the limit means in µs on this machine
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import {
  benchFixtures,
  cpuMicros,
  rssKiB,
  type Server,
  startServer,
  startShippedEmulator,
} from './harness.js';
import { SCENARIOS, type Scenario } from './scenarios.js';
import { startup } from './startup.js';
import { median, pairedRatios, positiveNumber, roundOrder } from './stats.js';

const FIXTURES_DIR = benchFixtures();

const { values: flags, positionals } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    calibrate: { type: 'boolean', default: false },
    rounds: { type: 'string' },
    state: { type: 'boolean', default: false },
    against: { type: 'string' },
  },
  allowPositionals: true,
});
const { quick, calibrate, state } = flags;
const ROUNDS = positiveNumber('--rounds', flags.rounds, quick ? 1 : 5);
const filter = positionals[0];
const DURATION_S = quick ? 1 : 2;
const CONNECTIONS = 10;
const MEMORY_TASKS = quick ? 2000 : 60_000;

function startEmulator(
  env: Record<string, string> = {},
  bundle = 'dist/server.bundle.cjs',
): Promise<Server> {
  return startServer(bundle, [], { LOG_LEVEL: 'warn', FIXTURES_DIR, ...env }, '/_emulator/ready');
}

const request = (s: Scenario) => ({
  method: s.method,
  headers: { 'content-type': 'application/json', ...s.headers },
  ...(s.body === undefined ? {} : { body: s.body }),
});

async function measure(server: Server, s: Scenario, duration: number) {
  const cpuBefore = cpuMicros(server.child.pid);
  const result = await autocannon({
    url: `${server.base}${s.url}`,
    ...request(s),
    connections: CONNECTIONS,
    duration,
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${s.name}: ${result.non2xx} non-2xx, ${result.errors} errors`);
  }
  const cpu = (cpuMicros(server.child.pid) - cpuBefore) / result.requests.total;
  return { rps: result.requests.average, p99: result.latency.p99, cpu };
}

type Sample = Awaited<ReturnType<typeof measure>>;
/** The median over rounds of one measure of a subject's samples. */
const medianOf = (xs: Sample[], field: 'rps' | 'cpu') => median(xs.map((x) => x[field]));
const cells = (xs: Sample[]) =>
  `${medianOf(xs, 'rps').toFixed(0).padStart(8)} ${medianOf(xs, 'cpu').toFixed(1).padStart(7)}`;

/** What a baseline answers: the emulator's answer to the scenario, captured once. */
interface Answer {
  method: string;
  url: string;
  contentType: string;
  body: string;
}

/** Writes a baseline's route spec: the bytes the emulator answered for this scenario. */
function baselineSpec(route: Answer) {
  const file = join(mkdtempSync(join(tmpdir(), 'bench-')), 'baseline.json');
  writeFileSync(file, JSON.stringify({ routes: [route] }));
  return file;
}

/** A ratio: the median of the rounds' paired ratios. */
const ratio = (of: Sample[], to: Sample[]) => median(pairedRatios(of, to));

/**
 * The emulator's answer to the scenario (after the scenario's `prepare`, which may need the
 * emulator), for the baselines to answer.
 */
async function capture(emulator: Server, s: Scenario): Promise<Answer> {
  const res = await fetch(`${emulator.base}${s.url}`, request(s));
  if (!res.ok) throw new Error(`${s.name}: emulator answered ${res.status}: ${await res.text()}`);
  return {
    method: s.method,
    url: s.url,
    contentType: res.headers.get('content-type') ?? 'application/json',
    body: await res.text(),
  };
}

/**
 * Starts a baseline answering `answer` and checks that it does, byte for byte and with the
 * emulator's content type: a ratio means something only if both sides send the same bytes.
 */
async function startBaseline(
  script: string,
  answer: Answer,
  s: Scenario,
  env: Record<string, string> = {},
): Promise<Server> {
  const server = await startServer(script, [baselineSpec(answer)], env, '/');
  const res = await fetch(`${server.base}${s.url}`, request(s));
  const body = await res.text();
  const type = res.headers.get('content-type');
  if (res.status !== 200 || type !== answer.contentType || body !== answer.body) {
    server.child.kill();
    throw new Error(
      `${s.name}: ${script} answered ${res.status} ${type} (${body.length} characters) instead of the emulator's 200 ${answer.contentType} (${answer.body.length})`,
    );
  }
  return server;
}

/**
 * Measures every subject (a server and its own copy of the scenario) after a 1 s warm-up each:
 * ROUNDS rounds, each measuring all of them back to back, in an order that rotates from round
 * to round. Kills them at the end; their samples, in the subjects' order.
 */
async function rounds(subjects: Array<[Server, Scenario]>): Promise<Sample[][]> {
  for (const [server, s] of subjects) await measure(server, s, 1);
  const samples: Sample[][] = subjects.map(() => []);
  for (let r = 0; r < ROUNDS; r++) {
    for (const at of roundOrder(subjects.length, r)) {
      const [server, s] = subjects[at] as [Server, Scenario];
      samples[at]?.push(await measure(server, s, DURATION_S));
    }
  }
  for (const [server] of subjects) server.child.kill();
  return samples;
}

/** The scenario as one server runs it (its `prepare` done against that server). */
const preparedFor = async (server: Server, s: Scenario): Promise<Scenario> => ({
  ...s,
  ...(await s.prepare?.(server.base)),
});

/**
 * One scenario: the emulator as users run it (info, shipped fixtures), the same build at warn
 * on the bench's fixtures, and the three baselines, all answering the bytes the emulator
 * answered, measured in rotating rounds.
 */
async function throughput(s: Scenario): Promise<boolean> {
  const emulator = await startShippedEmulator();
  const quiet = await startEmulator();
  const own = await preparedFor(emulator, s);
  const answer = await capture(emulator, own);
  const limit = await startBaseline('bench/limit-server.ts', answer, own);
  const fastify = await startBaseline('bench/baseline-server.ts', answer, own);
  const schemas = await startBaseline('bench/schema-server.ts', answer, own);
  const [lim, bare, schemed, emu, warn] = (await rounds([
    [limit, own],
    [fastify, own],
    [schemas, own],
    [emulator, own],
    [quiet, await preparedFor(quiet, s)],
  ])) as [Sample[], Sample[], Sample[], Sample[], Sample[]];
  // The rounds' lowest and highest ratio to the limit beside their median: the run's own noise.
  const toLimit = pairedRatios(emu, lim);
  const vsLimit = median(toLimit);
  const spread = `${Math.min(...toLimit).toFixed(2)}-${Math.max(...toLimit).toFixed(2)}`;
  const ok = vsLimit >= s.goal;
  const verdict = s.goal > 0 ? `>= ${s.goal.toFixed(2)} ${ok ? 'ok' : 'BELOW GOAL'}` : '(no goal)';
  console.log(
    `${s.name.padEnd(36)}|${cells(emu)} |${cells(warn)} |${cells(lim)} |${cells(bare)} |${cells(schemed)} | ${vsLimit.toFixed(2).padStart(5)} ${spread.padStart(9)} ${ratio(warn, lim).toFixed(2).padStart(6)} ${ratio(emu, bare).toFixed(2).padStart(6)} ${ratio(emu, schemed).toFixed(2).padStart(6)} ${ratio(schemed, lim).toFixed(2).padStart(6)}  ${ownWork(emu, lim, schemed, s.goal)}  ${verdict}`,
  );
  return ok;
}

/**
 * The emulator's own work, in CPU µs a request over the schema baseline's (Fastify with the same
 * validation and serialization), beside what the goal leaves for it: the goal is a share of the
 * limit's throughput, and a server bound by its own CPU answers in inverse proportion to its
 * CPU per request, so the goal allows limit µs / goal in all, of which the schema baseline's
 * part is already spent. `--calibrate` checks the proportion on this machine.
 */
function ownWork(emu: Sample[], lim: Sample[], schemed: Sample[], goal: number): string {
  const own = medianOf(emu, 'cpu') - medianOf(schemed, 'cpu');
  if (goal <= 0) return `${own.toFixed(1).padStart(6)}      -`;
  const allowed = medianOf(lim, 'cpu') / goal - medianOf(schemed, 'cpu');
  return `${own.toFixed(1).padStart(6)} ${allowed.toFixed(1).padStart(6)}`;
}

/** Busy work per request (µs) the calibration gives the limit. */
const BUSY_LEVELS = [5, 10, 20, 40];

/**
 * The limit against itself with BUSY_LEVELS µs of CPU spun before each answer, in rotating
 * rounds: the share of the limit a server keeps when its work per request exceeds the limit's
 * by that much. On a machine where the load generator shares the cores, a slower server also
 * pays more per write (the client sleeps and must be woken), so the share falls faster than
 * the µs alone say.
 */
async function calibration(s: Scenario): Promise<void> {
  const emulator = await startEmulator();
  const own = await preparedFor(emulator, s);
  const answer = await capture(emulator, own);
  emulator.child.kill();
  const subjects = await Promise.all(
    [0, ...BUSY_LEVELS].map((us) =>
      startBaseline('bench/limit-server.ts', answer, own, { BUSY_US: String(us) }),
    ),
  );
  const [bare, ...busy] = (await rounds(subjects.map((server) => [server, own]))) as [
    Sample[],
    ...Sample[][],
  ];
  const shares = busy.map(
    (xs, i) =>
      `+${BUSY_LEVELS[i]} µs: ${ratio(xs, bare).toFixed(2)} (${medianOf(xs, 'cpu').toFixed(1)} µs)`,
  );
  console.log(
    `${s.name.padEnd(36)}| limit ${medianOf(bare, 'cpu').toFixed(1)} µs | ${shares.join(' | ')}`,
  );
}

/** RSS per finished video task: the growth from creating MEMORY_TASKS tasks, divided by them. */
async function taskMemory(): Promise<boolean> {
  const emulator = await startEmulator({ VIDEO_QUEUE_MS: '0', VIDEO_RENDER_MS: '0' });
  const create = {
    url: `${emulator.base}/videogen/v1/videos/text2video`,
    method: 'POST' as const,
    headers: { authorization: 'Bearer bench-key', 'content-type': 'application/json' },
    connections: CONNECTIONS,
  };
  const bodyFor = (i: number) =>
    JSON.stringify({
      model_name: 'vid-v1-6',
      prompt: `task ${i}`,
      duration: '5',
      external_task_id: `ext-${i}`,
    });
  let n = 0;
  const run = (amount: number) =>
    autocannon({
      ...create,
      amount,
      requests: [{ setupRequest: (req) => ({ ...req, body: bodyFor(n++) }) }],
    });
  await run(2000); // warm up: JIT, pools, first heap growth
  await new Promise((r) => setTimeout(r, 500));
  const before = rssKiB(emulator.child.pid);
  const result = await run(MEMORY_TASKS);
  await new Promise((r) => setTimeout(r, 1000));
  const after = rssKiB(emulator.child.pid);
  emulator.child.kill();
  if (result.non2xx > 0) throw new Error(`task memory: ${result.non2xx} non-2xx`);
  const perTask = ((after - before) * 1024) / MEMORY_TASKS;
  const ok = perTask < 2048;
  console.log(
    `\nvideo task memory: RSS ${(before / 1024).toFixed(1)} MiB -> ${(after / 1024).toFixed(1)} MiB over ${MEMORY_TASKS} finished tasks (each with an external_task_id) = ${perTask.toFixed(0)} B/task (goal < 2048) ${ok ? 'ok' : 'ABOVE GOAL'}`,
  );
  return ok;
}

/** The scenarios of the shared-state comparison, with Redis mode's goal against memory mode. */
const STATE_GOALS: Record<string, number> = {
  'chat completion (non-streaming)': 0.6,
  'messages (non-streaming)': 0.6,
  'messages, 100k-token cached system': 0,
  'video task creation': 0.4,
  'video task query': 0,
};

/**
 * `--state`: memory mode against Redis mode (STATE_URL, a redis-server of this run), and
 * WORKERS=2 against one worker (both on Redis), in rotating rounds; with `--against <git ref>`,
 * memory mode of that commit too (built in a temporary worktree): the A/B of memory mode
 * before and after a change. Each subject prepares its own copy of a scenario (a task of its
 * own to query).
 */
async function stateComparison(): Promise<boolean> {
  const { startRedis } = await import('../test/helpers/redis.js');
  const redis = await startRedis();
  const before = flags.against ? buildAt(flags.against) : undefined;
  let failed = 0;
  console.log(
    `shared state: req/s (server CPU µs per request), medians of ${ROUNDS} rounds; redis-server ${redis.url}\n`,
  );
  console.log(
    `scenario                            |   memory cpu µs |    redis cpu µs | redis/memory goal |  2 workers  | 2w/1w${before ? ` | memory ${flags.against}  | now/before` : ''}`,
  );
  try {
    for (const base of SCENARIOS.filter((s) => s.name in STATE_GOALS)) {
      if (filter && !base.name.includes(filter)) continue;
      await redis.flush();
      const subjects: Array<[string, Promise<Server>]> = [
        ['memory', startEmulator()],
        ['redis', startEmulator({ STATE_URL: redis.url, STATE_PREFIX: 'one' })],
        ['workers', startEmulator({ STATE_URL: redis.url, STATE_PREFIX: 'two', WORKERS: '2' })],
        ...(before ? [['before', startEmulator({}, before)] as [string, Promise<Server>]] : []),
      ];
      const servers = await Promise.all(subjects.map(([, server]) => server));
      const scenarios = await Promise.all(
        servers.map(async (server) => ({ ...base, ...(await base.prepare?.(server.base)) })),
      );
      for (let i = 0; i < servers.length; i++) {
        await measure(servers[i] as Server, scenarios[i] as Scenario, 1);
      }
      const samples: Sample[][] = servers.map(() => []);
      for (let r = 0; r < ROUNDS; r++) {
        for (const at of roundOrder(servers.length, r)) {
          samples[at]?.push(
            await measure(servers[at] as Server, scenarios[at] as Scenario, DURATION_S),
          );
        }
      }
      for (const server of servers) server.child.kill();
      const [memory, shared, workers, old] = samples as [Sample[], Sample[], Sample[], Sample[]?];
      const goal = STATE_GOALS[base.name] ?? 0;
      const share = ratio(shared, memory);
      const ok = share >= goal;
      if (!ok) failed++;
      console.log(
        `${base.name.padEnd(36)}|${cells(memory)} |${cells(shared)} | ${share.toFixed(2).padStart(5)} ${goal > 0 ? `>= ${goal.toFixed(2)} ${ok ? 'ok' : 'BELOW'}` : '         '} |${cells(workers).slice(0, 9)}  | ${ratio(workers, shared).toFixed(2)}${old ? ` |${cells(old)} | ${ratio(memory, old).toFixed(2)}` : ''}`,
      );
    }
  } finally {
    await redis.close();
  }
  return failed === 0;
}

/** Builds the server of a git ref in a temporary worktree; the path of its bundle. */
function buildAt(ref: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'gwemu-before-'));
  execFileSync('git', ['worktree', 'add', '--detach', dir, ref], { stdio: 'ignore' });
  execFileSync('npm', ['ci', '--ignore-scripts', '--prefer-offline', '--no-audit', '--no-fund'], {
    cwd: dir,
    stdio: 'ignore',
  });
  execFileSync('npm', ['run', 'build'], { cwd: dir, stdio: 'ignore' });
  process.on('exit', () => {
    execFileSync('git', ['worktree', 'remove', '--force', dir], { stdio: 'ignore' });
  });
  // (builds before the bin's compile cache made an ES module of it)
  const older = join(dir, 'dist/server.bundle.cjs');
  return existsSync(older) ? older : join(dir, 'dist/server.bundle.cjs');
}

async function main() {
  console.log(
    `gateway-emulator bench: node ${process.version}, ${CONNECTIONS} connections, ${ROUNDS} rounds of ${DURATION_S} s per server (medians; ratios = medians of the rounds' ratios); the emulator at LOG_LEVEL=info on the shipped fixtures (goals), and at warn on the bench's own\n`,
  );
  if (state) {
    if (!(await stateComparison()) && !quick) process.exitCode = 1;
    return;
  }
  const scenarios = SCENARIOS.filter((s) => !filter || s.name.includes(filter));
  if (calibrate) {
    console.log(
      'the limit with busy work per request: its share of the bare limit (its CPU per request)',
    );
    for (const s of scenarios) await calibration(s);
    return;
  }
  let failed = 0;
  if (scenarios.length > 0) {
    console.log(
      'scenario                            |  emulator  cpu µs |  at warn  cpu µs |  limit    cpu µs |  fastify  cpu µs |  schemas  cpu µs | /limit (rounds)   warn/limit /fastify /schemas schemas/limit  own µs allowed  goal (/limit)',
    );
  }
  for (const s of scenarios) if (!(await throughput(s))) failed++;
  if (!filter || 'video task memory'.includes(filter)) {
    if (!(await taskMemory())) failed++;
  }
  if (!filter || 'start-up'.includes(filter)) await startup(quick ? 1 : 21);
  if (failed > 0 && !quick) process.exitCode = 1;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
