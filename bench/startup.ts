/**
 * Start-up: the time from spawning a server to its first `200` from `/_emulator/health`, for the
 * emulator's bin (what `npm start` and `npx gateway-emulator` run) and, in the same rounds and a
 * rotating order, two baselines: bare Fastify answering health, and node:http alone (Node's own
 * start-up, the floor). Prints medians and the emulator's time as a multiple of bare Fastify's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { get } from 'node:http';
import { freePort, median } from './harness.js';

const SUBJECTS = [
  { name: 'emulator (bin/gateway-emulator.js)', script: 'bin/gateway-emulator.js' },
  { name: 'bare Fastify', script: 'bench/fastify-health.mjs' },
  { name: 'node:http alone', script: 'bench/http-health.mjs' },
];
/** Poll interval while waiting for the first answer, and how long a start may take. */
const POLL_MS = 2;
const GIVE_UP_MS = 10_000;

const healthy = (port: number) =>
  new Promise<boolean>((ok) => {
    get(`http://127.0.0.1:${port}/_emulator/health`, (response) => {
      response.resume();
      response.on('end', () => ok(response.statusCode === 200));
    }).on('error', () => ok(false));
  });

async function timeToHealth(script: string, env: Record<string, string>): Promise<number> {
  const port = await freePort();
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, [script], {
    env: { ...process.env, ...env, PORT: String(port) },
    stdio: 'ignore',
  });
  try {
    while (!(await healthy(port))) {
      if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
      if (performance.now() - started > GIVE_UP_MS) throw new Error(`${script}: no health`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    return performance.now() - started;
  } finally {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
  }
}

export async function startup(rounds: number, env: Record<string, string>): Promise<void> {
  const times = SUBJECTS.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < SUBJECTS.length; i++) {
      const at = (i + round) % SUBJECTS.length;
      times[at]?.push(await timeToHealth((SUBJECTS[at] as (typeof SUBJECTS)[0]).script, env));
    }
  }
  const medians = times.map(median);
  const [emulator, fastify] = medians as [number, number];
  console.log(`\nstart-up, spawn to the first 200 from /_emulator/health (median of ${rounds}):`);
  SUBJECTS.forEach((s, i) => {
    console.log(`  ${s.name.padEnd(36)} ${Math.round(medians[i] as number)} ms`);
  });
  console.log(`  emulator / bare Fastify: ${(emulator / fastify).toFixed(2)}`);
}
