/**
 * Start-up: the time from spawning a server to its first `200` from `/_emulator/health`, for the
 * emulator's bin (what `npm start` and `npx gateway-emulator` run) and, in the same rounds and a
 * rotating order, two baselines: bare Fastify answering health, and node:http alone (Node's own
 * start-up, the floor). Prints medians and the emulator's time as a multiple of bare Fastify's,
 * then how long the emulator's first chat completion and first message take (each route's first
 * request loads its precompiled validator and serializer).
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { get } from 'node:http';
import { freePort } from './harness.js';
import { median } from './stats.js';

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

/** The first chat completion and the first message, each timed, once health answers. */
const FIRST_REQUESTS: Array<{ path: string; headers: Record<string, string>; body: object }> = [
  {
    path: '/v1/chat/completions',
    headers: { authorization: 'Bearer k' },
    body: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
  },
  {
    path: '/messages-api/v1/messages',
    headers: { 'x-api-key': 'k', 'msgapi-version': '2023-06-01' },
    body: { model: 'c', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] },
  },
];

async function firstAnswers(port: number): Promise<number[]> {
  const times: number[] = [];
  for (const { path, headers, body } of FIRST_REQUESTS) {
    const started = performance.now();
    const res = await fetch(`http://127.0.0.1:${port}${path}`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...headers },
      body: JSON.stringify(body),
    });
    await res.arrayBuffer();
    if (res.status !== 200) throw new Error(`${path}: ${res.status}`);
    times.push(performance.now() - started);
  }
  return times;
}

async function timeToHealth(
  script: string,
  then?: (port: number) => Promise<number[]>,
): Promise<{ health: number; after: number[] }> {
  const port = await freePort();
  const started = performance.now();
  const child: ChildProcess = spawn(process.execPath, [script], {
    env: { ...process.env, PORT: String(port) },
    stdio: 'ignore',
  });
  try {
    while (!(await healthy(port))) {
      if (child.exitCode !== null) throw new Error(`${script} exited with ${child.exitCode}`);
      if (performance.now() - started > GIVE_UP_MS) throw new Error(`${script}: no health`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    const health = performance.now() - started;
    return { health, after: then ? await then(port) : [] };
  } finally {
    if (child.exitCode === null) {
      const exited = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await exited;
    }
  }
}

export async function startup(rounds: number): Promise<void> {
  const times = SUBJECTS.map(() => [] as number[]);
  const firsts = FIRST_REQUESTS.map(() => [] as number[]);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < SUBJECTS.length; i++) {
      const at = (i + round) % SUBJECTS.length;
      const { script } = SUBJECTS[at] as (typeof SUBJECTS)[0];
      // Only the emulator (the first subject) has the routes to ask.
      const { health, after } = await timeToHealth(script, at === 0 ? firstAnswers : undefined);
      times[at]?.push(health);
      for (const [k, ms] of after.entries()) firsts[k]?.push(ms);
    }
  }
  const medians = times.map(median);
  const [emulator, fastify] = medians as [number, number];
  console.log(`\nstart-up, spawn to the first 200 from /_emulator/health (median of ${rounds}):`);
  SUBJECTS.forEach((s, i) => {
    console.log(`  ${s.name.padEnd(36)} ${Math.round(medians[i] as number)} ms`);
  });
  console.log(`  emulator / bare Fastify: ${(emulator / fastify).toFixed(2)}`);
  console.log(
    `  then the emulator's first chat completion ${Math.round(median(firsts[0] as number[]))} ms, first message ${Math.round(median(firsts[1] as number[]))} ms`,
  );
}
