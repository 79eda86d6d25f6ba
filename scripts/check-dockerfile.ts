/**
 * Proves the Dockerfile without a Docker engine: replays each stage in a scratch directory
 * (COPY sources must exist; RUN steps must succeed), then starts the final CMD with the image's
 * ENV and waits for its own HEALTHCHECK command to pass.
 *
 *   npm run check:docker
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';

const repo = resolve(dirname(new URL(import.meta.url).pathname), '..');

interface Instruction {
  op: string;
  args: string;
  line: number;
}

interface Stage {
  name: string;
  base: string;
  root: string;
  workdir: string;
  env: Record<string, string>;
  user?: string;
  expose: string[];
  healthcheck?: string[];
  cmd?: string[];
}

function fail(message: string): never {
  console.error(`check-dockerfile: FAIL: ${message}`);
  process.exit(1);
}

function parse(text: string): Instruction[] {
  const out: Instruction[] = [];
  const lines = text.split('\n');
  for (let i = 0; i < lines.length; i++) {
    const start = i;
    let line = lines[i] as string;
    if (/^\s*(#|$)/.test(line)) continue;
    while (line.endsWith('\\') && i + 1 < lines.length) line = `${line.slice(0, -1)} ${lines[++i]}`;
    const match = /^\s*(\w+)\s+(.*)$/.exec(line);
    if (!match) fail(`cannot read line ${start + 1}: ${line}`);
    out.push({
      op: (match[1] as string).toUpperCase(),
      args: (match[2] as string).trim(),
      line: start + 1,
    });
  }
  return out;
}

/** Splits `--flag=value` options off the front of an instruction's arguments. */
function flags(args: string): { flags: Record<string, string>; rest: string } {
  const found: Record<string, string> = {};
  let rest = args;
  for (
    let m = /^--([\w-]+)(?:=(\S+))?\s+/.exec(rest);
    m;
    m = /^--([\w-]+)(?:=(\S+))?\s+/.exec(rest)
  ) {
    found[m[1] as string] = m[2] ?? '';
    rest = rest.slice(m[0].length);
  }
  return { flags: found, rest };
}

function parseEnv(args: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const m of args.matchAll(/(\w+)=("[^"]*"|\S+)/g)) {
    env[m[1] as string] = (m[2] as string).replace(/^"|"$/g, '');
  }
  return env;
}

const inStage = (stage: Stage, path: string) =>
  join(stage.root, path.startsWith('/') ? path : join(stage.workdir, path));

function freePort(): Promise<number> {
  return new Promise((ok) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => ok(port));
    });
  });
}

/** The Node majors CI runs the tests on (.ci/run); an image must use one of them. */
const TESTED_MAJORS = [20, 22, 24];
/** Tags the official image publishes: a major, then a Debian or Alpine variant. */
const NODE_TAG =
  /^node:(\d+)(?:-(?:bookworm|bullseye|trixie)(?:-slim)?|-slim|-alpine(?:3\.\d+)?)?$/;

/**
 * A base image that exists and runs the Node this project is tested on: the official `node`
 * image, a tag of a shape it publishes, an even (LTS) major the tests run on, and the same
 * major in every stage (the runtime must run what the build stage built).
 */
const majors = new Set<number>();
function checkBase(base: string, where: string): void {
  const match = NODE_TAG.exec(base);
  if (!match) {
    fail(`${where}: ${base} is not an official node image tag (node:<major>[-bookworm|-slim|...])`);
  }
  const major = Number(match[1]);
  if (!TESTED_MAJORS.includes(major)) {
    fail(`${where}: node ${major} is not a major the tests run on (${TESTED_MAJORS.join(', ')})`);
  }
  const engines = JSON.parse(readFileSync(join(repo, 'package.json'), 'utf8')).engines?.node;
  const minimum = Number(/(\d+)/.exec(engines ?? '0')?.[1] ?? 0);
  if (major < minimum) fail(`${where}: node ${major} is below engines.node (${engines})`);
  majors.add(major);
  if (majors.size > 1)
    fail(`${where}: stages use different Node majors (${[...majors].join(', ')})`);
}

/** `.dockerignore` keeps the host's node_modules and dist out of the build context. */
function checkDockerignore(): void {
  const path = join(repo, '.dockerignore');
  if (!existsSync(path)) fail('.dockerignore is missing');
  const entries = readFileSync(path, 'utf8')
    .split('\n')
    .map((l) => l.trim());
  for (const needed of ['node_modules', 'dist']) {
    if (!entries.includes(needed)) fail(`.dockerignore does not exclude ${needed}`);
  }
}

async function main() {
  checkDockerignore();
  const dockerfile = readFileSync(join(repo, 'Dockerfile'), 'utf8');
  const scratch = mkdtempSync(join(tmpdir(), 'dockerfile-check-'));
  const npmCache = join(scratch, '.npm-cache');
  const stages: Stage[] = [];
  let stage: Stage | undefined;
  const started = Date.now();

  for (const ins of parse(dockerfile)) {
    const where = `Dockerfile:${ins.line} ${ins.op}`;
    if (ins.op === 'FROM') {
      const [base, as, name] = ins.args.split(/\s+/);
      checkBase(base as string, where);
      const stageName = as?.toUpperCase() === 'AS' && name ? name : String(stages.length);
      stage = {
        name: stageName,
        base: base as string,
        root: join(scratch, stageName),
        workdir: '/',
        env: {},
        expose: [],
      };
      mkdirSync(stage.root, { recursive: true });
      stages.push(stage);
      continue;
    }
    if (!stage) fail(`${where} before any FROM`);
    switch (ins.op) {
      case 'WORKDIR':
        stage.workdir = ins.args.startsWith('/') ? ins.args : join(stage.workdir, ins.args);
        mkdirSync(inStage(stage, '.'), { recursive: true });
        break;
      case 'ENV':
        Object.assign(stage.env, parseEnv(ins.args));
        break;
      case 'COPY': {
        const { flags: f, rest } = flags(ins.args);
        const parts = rest.split(/\s+/);
        const dest = parts.pop() as string;
        const from = f.from ? stages.find((s) => s.name === f.from) : undefined;
        if (f.from && !from) fail(`${where}: no stage named ${f.from}`);
        for (const src of parts) {
          const source = from ? join(from.root, src) : join(repo, src);
          if (!existsSync(source)) fail(`${where}: source ${src} does not exist`);
          const target = inStage(stage, dest);
          const into =
            dest.endsWith('/') || parts.length > 1
              ? join(target, src.split('/').pop() as string)
              : target;
          mkdirSync(dirname(into), { recursive: true });
          cpSync(source, into, { recursive: true });
        }
        console.log(`  ${where} ${rest}`);
        break;
      }
      case 'RUN': {
        const { rest } = flags(ins.args);
        console.log(`  ${where} ${rest}`);
        try {
          execFileSync('sh', ['-c', rest], {
            cwd: inStage(stage, '.'),
            stdio: ['ignore', 'ignore', 'inherit'],
            env: { ...process.env, ...stage.env, npm_config_cache: npmCache },
          });
        } catch {
          fail(`${where} failed: ${rest}`);
        }
        break;
      }
      case 'USER':
        stage.user = ins.args;
        break;
      case 'EXPOSE':
        stage.expose.push(...ins.args.split(/\s+/));
        break;
      case 'HEALTHCHECK': {
        const { rest } = flags(ins.args);
        if (!rest.startsWith('CMD ')) fail(`${where}: expected HEALTHCHECK ... CMD [..]`);
        stage.healthcheck = JSON.parse(rest.slice(4)) as string[];
        break;
      }
      case 'CMD':
        stage.cmd = JSON.parse(ins.args) as string[];
        break;
      case 'ARG':
      case 'LABEL':
        break;
      default:
        fail(`${where}: instruction not supported by this check`);
    }
  }

  const final = stages.at(-1);
  if (!final || stages.length < 2) fail('expected a multi-stage build');
  if (!final.user || final.user === 'root' || final.user === '0')
    fail('final stage must set a non-root USER');
  if (final.env.HOST !== '0.0.0.0') fail('final stage must set ENV HOST=0.0.0.0');
  if (!final.expose.includes('4010')) fail('final stage must EXPOSE 4010');
  if (!final.healthcheck?.join(' ').includes('/_emulator/health'))
    fail('HEALTHCHECK must call /_emulator/health');
  if (!final.cmd) fail('final stage has no CMD');
  if (existsSync(join(inStage(final, '.'), 'node_modules', 'typescript'))) {
    fail('final stage contains dev dependencies (typescript)');
  }

  const port = await freePort();
  const env = { ...process.env, ...final.env, PORT: String(port), HOST: '127.0.0.1' };
  const cwd = inStage(final, '.');
  // The image carries the server's compiled code (bin/gateway-emulator.js, written by the
  // warm-up RUN): a container's first start does not compile the bundle.
  const cacheDir = final.env.NODE_COMPILE_CACHE;
  if (!cacheDir)
    fail('final stage must set NODE_COMPILE_CACHE (the compile cache it is built with)');
  const cacheIn = join(cwd, cacheDir);
  const cached = existsSync(cacheIn)
    ? readdirSync(cacheIn).filter((name) => /^server\.bundle-.*\.v8cache$/.test(name))
    : [];
  if (cached.length === 0) fail(`the image has no compiled code of the server in ${cacheDir}`);
  const [cmd, ...args] = final.cmd;
  const server: ChildProcess = spawn(cmd as string, args, {
    cwd,
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const [hcCmd, ...hcArgs] = final.healthcheck as string[];
  let healthy = false;
  for (let i = 0; i < 100 && !healthy && server.exitCode === null; i++) {
    await new Promise((r) => setTimeout(r, 100));
    try {
      execFileSync(hcCmd as string, hcArgs, { cwd, env, stdio: 'ignore' });
      healthy = true;
    } catch {
      // not ready yet
    }
  }
  const body = healthy
    ? await (await fetch(`http://127.0.0.1:${port}/_emulator/health`)).text()
    : '';
  const exited = new Promise<number | null>((ok) => server.once('exit', (code) => ok(code)));
  server.kill('SIGTERM');
  const code = await exited;
  rmSync(scratch, { recursive: true, force: true });
  if (!healthy) fail('the CMD never passed its HEALTHCHECK');
  if (body !== '{"status":"ok"}') fail(`unexpected health body ${body}`);
  if (code !== 0) fail(`the server exited with ${code} on SIGTERM`);
  console.log(
    `check-dockerfile: OK (${stages.length} stages, CMD healthy on :${port}, clean SIGTERM exit, ${Math.round((Date.now() - started) / 1000)} s)`,
  );
}

main().catch((err) => fail(String(err)));
