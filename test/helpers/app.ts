import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify';
import { Redis } from 'ioredis';
import { buildApp } from '../../src/app.js';
import { type Config, resolveConfig } from '../../src/config.js';
import { type Clock, createClock, realSetTimer } from '../../src/platform/clock.js';
import type { Deps } from '../../src/platform/deps.js';
import type { IdKind, Ids } from '../../src/platform/ids.js';
import { groupRequests } from './groups.js';

/** 2026-01-01T00:00:00Z: the fake clock's starting point. */
export const T0 = Date.UTC(2026, 0, 1);

const PREFIX: Record<IdKind, string> = {
  request: 'req_',
  chat: 'chatcmpl-',
  message: 'msg_',
  task: '',
  tool_use: 'toolu_',
  server_tool_use: 'srvtoolu_',
  tool_call: 'call_',
};

/** Ids that count up per kind: `chatcmpl-1`, `chatcmpl-2`, ... tasks are `1000001`, ... */
export function countingIds(): Ids {
  const counters = new Map<IdKind, number>();
  return {
    next(kind) {
      const n = (counters.get(kind) ?? 0) + 1;
      counters.set(kind, n);
      return kind === 'task' ? String(1_000_000 + n) : `${PREFIX[kind]}${n}`;
    },
  };
}

/** The media token of task 1000001 under the test secret (see `mediaToken`). */
export const MEDIA_TOKEN_1 = 'QeM_PAbzTn2blNUtj_6pD0';

export interface TestDeps extends Deps {
  clock: Clock;
  /** Every pause the app asked for, in order. */
  sleeps: number[];
  logs: string[];
}

/** A frozen clock (moved only by `advance`), counting ids, instant sleep, timers that never fire. */
export function testDeps(): TestDeps {
  const sleeps: number[] = [];
  const logs: string[] = [];
  let slept = 0;
  return {
    clock: createClock(() => T0),
    ids: countingIds(),
    sleeps,
    logs,
    // Wall time that passes only in (instant) waits, so stream pauses are exactly the ones asked.
    monotonic: () => slept,
    wait: (ms, fn) => {
      sleeps.push(ms);
      slept += ms;
      let live = true;
      queueMicrotask(() => {
        if (live) fn();
      });
      return {
        cancel: () => {
          live = false;
        },
      };
    },
    setTimer: () => () => {},
    secret: Buffer.from('test-secret'),
    logStream: new Writable({
      write(chunk, _enc, cb) {
        logs.push(String(chunk));
        cb();
      },
    }),
  };
}

export interface HandTimer {
  ms: number;
  fire(): void;
}

/** Test deps whose wall-clock timers (`setTimer`) the test fires by hand, from the list given. */
export function handTimerDeps(): { deps: TestDeps; timers: HandTimer[] } {
  const timers: HandTimer[] = [];
  const deps = testDeps();
  deps.setTimer = (fn, ms) => {
    const timer = { ms, fire: fn };
    timers.push(timer);
    return () => {
      timers.splice(timers.indexOf(timer), 1);
    };
  };
  return { deps, timers };
}

export interface TestApp extends ReturnType<typeof groupRequests> {
  app: FastifyInstance;
  deps: TestDeps;
  inject(options: InjectOptions): Promise<LightMyRequestResponse>;
}

/**
 * `npm run test:replicas` sets this: every test app is then three replicas on one Redis
 * (a key prefix of their own), and each request goes to the next one in turn, as behind a
 * round-robin proxy (docs/replicas.md).
 */
const REPLICAS_STATE_URL = process.env.GWEMU_TEST_STATE_URL;

export async function buildTestApp(
  overrides: Partial<Config> = {},
  deps: TestDeps = testDeps(),
  /** `false`: one process in memory whatever the run (what it tests is a process's own). */
  asReplicas = true,
): Promise<TestApp> {
  if (!asReplicas || REPLICAS_STATE_URL === undefined || overrides.stateUrl !== undefined) {
    const app = await buildApp(resolveConfig({ logLevel: 'info', ...overrides }), deps);
    const inject = (options: InjectOptions) => app.inject(options);
    return { app, deps, inject, ...groupRequests(inject) };
  }
  const config = resolveConfig({
    logLevel: 'info',
    ...overrides,
    stateUrl: REPLICAS_STATE_URL,
    statePrefix: `t-${randomUUID()}`,
  });
  // The store's secret is the test one, so that result URLs are the ones the tests expect.
  const store = new Redis(REPLICAS_STATE_URL);
  await store.set(`${config.statePrefix}:secret`, deps.secret.toString('base64'));
  store.disconnect();
  const replicas = [
    await buildApp(config, deps),
    await buildApp(config, deps),
    await buildApp(config, deps),
  ];
  const [app, ...others] = replicas as [FastifyInstance, ...FastifyInstance[]];
  app.addHook('onClose', async () => {
    for (const other of others) await other.close();
  });
  await Promise.all(replicas.map((replica) => replica.emulator.ready()));
  let turn = 0;
  const inject = (options: InjectOptions) =>
    (replicas[turn++ % replicas.length] as FastifyInstance).inject(options);
  return { app, deps, inject, ...groupRequests(inject) };
}

/** Parses an SSE body into frames: `{event?, data}` with `data` JSON-decoded when it is JSON. */
export function parseSse(body: string): Array<{ event?: string; data: unknown }> {
  return body
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      const frame: { event?: string; data: unknown } = { data: undefined };
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) frame.event = line.slice(7);
        else if (line.startsWith('data: ')) {
          const raw = line.slice(6);
          try {
            frame.data = JSON.parse(raw);
          } catch {
            frame.data = raw;
          }
        }
      }
      return frame;
    });
}

/** A real-time wait that counts its calls in `calls.count`. */
export function countingWait(calls: { count: number }): Deps['wait'] {
  return (ms, fn) => {
    calls.count++;
    return { cancel: realSetTimer(fn, ms) };
  };
}
