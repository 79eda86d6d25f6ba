import type { FastifyInstance } from 'fastify';
import { buildApp } from './app.js';
import { type Config, resolveConfig } from './config.js';
import type { FaultRuleInput, FaultRuleView } from './harness/faults.js';
import type { JournalEntry, JournalFilter, NearMiss } from './harness/journal.js';
import { SESSION_HEADER } from './harness/session.js';
import { createDeps, type Deps } from './platform/deps.js';
import type { StubInput, StubView } from './text/replies.js';

export interface EmulatorOptions extends Partial<Config> {
  deps?: Partial<Deps>;
}

/** A journal filter as `emu.journal` takes it (the query fields of `GET /_emulator/journal`). */
export type JournalQuery = Omit<JournalFilter, 'header' | 'body'>;

/** How many matching requests `verify` expects; default `{ at_least: 1 }`. */
export interface VerifyCount {
  exactly?: number;
  at_least?: number;
  at_most?: number;
}

/** What `emu.verify` throws: the message lists the closest requests and how they differ. */
export class VerificationError extends Error {
  override name = 'VerificationError';
  constructor(
    message: string,
    readonly matched: number,
    readonly nearMisses: NearMiss[],
  ) {
    super(message);
  }
}

/** The control surface as test code calls it; a `session` handle scopes every call. */
export interface EmulatorControl {
  /** The headers a client sends to belong to this session (none for the default one). */
  readonly headers: Record<string, string>;
  /** Adds a stub (`POST /_emulator/replies`): a reply rule that wins over fixture files. */
  stub(rule: StubInput): Promise<StubView>;
  /** Adds a fault rule (`POST /_emulator/faults`). */
  fault(rule: FaultRuleInput): Promise<FaultRuleView>;
  /** Journal entries, oldest first (`GET /_emulator/journal`). */
  journal(filter?: JournalQuery): Promise<JournalEntry[]>;
  /**
   * Checks the journal (`POST /_emulator/journal/verify`): resolves with the number of matching
   * requests, or throws a VerificationError listing the near misses.
   */
  verify(match: JournalFilter, count?: VerifyCount): Promise<number>;
  /** The first matching request, waiting up to `timeoutMs` for it (`journal/wait`); throws after. */
  waitFor(filter: JournalQuery, timeoutMs?: number): Promise<JournalEntry>;
  /** Empties what this session made (or, on the emulator itself, every store). */
  reset(only?: readonly string[]): void | Promise<void>;
}

export interface Emulator extends EmulatorControl {
  /** Base URL, e.g. `http://127.0.0.1:53211`. */
  url: string;
  port: number;
  config: Config;
  /** Emulator time: `clock.advance(ms)` moves it and runs whatever became due. */
  clock: Deps['clock'];
  app: FastifyInstance;
  /** Same as `clock.advance` (a promise with STATE_URL: the shared clock moves in the store). */
  advance(ms: number): void | Promise<void>;
  /** The control surface scoped to one session (docs/control.md "Sessions"). */
  session(name: string): EmulatorControl;
  close(): Promise<void>;
}

const queryOf = (filter: object) =>
  new URLSearchParams(
    Object.entries(filter)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]): [string, string] => [k, String(v)]),
  ).toString();

function describeMisses(misses: NearMiss[]): string {
  if (misses.length === 0) return 'No request was journaled in this scope.';
  const lines = misses.map(({ request, differences }) => {
    const differ = differences
      .map(
        (d) => `${d.field} expected ${JSON.stringify(d.expected)}, got ${JSON.stringify(d.actual)}`,
      )
      .join('; ');
    return `  ${request.id} ${request.method} ${request.url} (${request.status}): ${differ}`;
  });
  return `Near misses:\n${lines.join('\n')}`;
}

/** The control calls, made through `app.inject` so they are checked exactly as over HTTP. */
function controlFor(
  app: FastifyInstance,
  /** The admin token header, when the emulator has one. */
  admin: Record<string, string>,
  session: string | undefined,
  reset: (only?: readonly string[]) => void | Promise<void>,
): EmulatorControl {
  const headers: Record<string, string> =
    session === undefined ? {} : { [SESSION_HEADER]: session };
  const call = async <T>(method: 'GET' | 'POST', url: string, payload?: object) => {
    const res = await app.inject({
      method,
      url: `/_emulator${url}`,
      headers: { ...headers, ...admin },
      ...(payload === undefined ? {} : { payload }),
    });
    return { status: res.statusCode, body: res.json() as T };
  };
  const fail = (status: number, body: unknown): never => {
    const message = (body as { error?: { message?: string } }).error?.message ?? `HTTP ${status}`;
    throw new Error(`emulator refused the call (${status}): ${message}`);
  };
  return {
    headers,
    async stub(rule) {
      const res = await call<StubView>('POST', '/replies', rule);
      return res.status === 200 ? res.body : fail(res.status, res.body);
    },
    async fault(rule) {
      const res = await call<FaultRuleView>('POST', '/faults', rule);
      return res.status === 200 ? res.body : fail(res.status, res.body);
    },
    async journal(filter = {}) {
      const query = queryOf(filter);
      const res = await call<{ requests: JournalEntry[] }>(
        'GET',
        `/journal${query ? `?${query}` : ''}`,
      );
      return res.status === 200 ? res.body.requests : fail(res.status, res.body);
    },
    async verify(match, count = { at_least: 1 }) {
      const res = await call<{
        matched: number;
        near_misses?: NearMiss[];
        error?: { message: string };
      }>('POST', '/journal/verify', { match, count });
      if (res.status === 200) return res.body.matched;
      if (res.status !== 409) return fail(res.status, res.body);
      const misses = res.body.near_misses ?? [];
      throw new VerificationError(
        `${res.body.error?.message} ${describeMisses(misses)}`,
        res.body.matched,
        misses,
      );
    },
    async waitFor(filter, timeoutMs = 30_000) {
      const query = queryOf({ ...filter, timeout_ms: timeoutMs });
      const res = await call<JournalEntry>('GET', `/journal/wait?${query}`);
      return res.status === 200 ? res.body : fail(res.status, res.body);
    },
    reset,
  };
}

/** How long `startEmulator` waits for its state store (STATE_URL) before it gives up. */
const STORE_WAIT_MS = 10_000;

async function storeWithin(app: FastifyInstance, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the state store (STATE_URL) was not reachable within ${ms} ms`)),
      ms,
    );
  });
  try {
    await Promise.race([app.emulator.ready(), late]);
  } catch (err) {
    await app.close();
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Starts an emulator for a client's test suite: port 0 (any free port) and warn-level logs
 * unless told otherwise. docs/use-in-tests.md "Use in tests".
 */
export async function startEmulator(options: EmulatorOptions = {}): Promise<Emulator> {
  const { deps: depOverrides, ...overrides } = options;
  const config = resolveConfig({ port: 0, logLevel: 'warn', ...overrides });
  const deps = createDeps(depOverrides);
  const app = await buildApp(config, deps);
  // Control calls carry the admin token when the emulator has one.
  const admin: Record<string, string> = config.adminToken
    ? { 'x-emulator-admin-token': config.adminToken }
    : {};
  await app.listen({ port: config.port, host: config.host });
  if (config.stateUrl !== undefined) await storeWithin(app, STORE_WAIT_MS);
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : config.port;
  const host = config.host.includes(':') ? `[${config.host}]` : config.host;
  const control = controlFor(app, admin, undefined, (only) => app.emulator.reset(only));
  return {
    ...control,
    url: `http://${host === '0.0.0.0' ? '127.0.0.1' : host}:${port}`,
    port,
    config,
    clock: app.emulator.clock,
    app,
    advance: (ms) => app.emulator.clock.advance(ms),
    session: (name) => controlFor(app, admin, name, (only) => app.emulator.reset(only, name)),
    close: () => app.close(),
  };
}
