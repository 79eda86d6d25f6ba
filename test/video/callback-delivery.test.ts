import { createServer, type ServerResponse } from 'node:http';
import { type AddressInfo, isIP } from 'node:net';
import { describe, expect, it, vi } from 'vitest';
import { createClock, realSetTimer, type SetTimer } from '../../src/platform/clock.js';
import { Scheduler } from '../../src/platform/scheduler.js';
import { CallbackGuard, type CallbackGuardOptions } from '../../src/video/callback-guard.js';
import { MAX_ANSWER_BYTES, type Post } from '../../src/video/callback-post.js';
import { Callbacks, DEFAULT_CALLBACK_OPTIONS } from '../../src/video/callbacks.js';

/** A transport whose answers the test gives one by one; a call that is never answered hangs. */
function manualPost() {
  const calls: Array<{
    url: string;
    body: string;
    aborted: () => boolean;
    answer(status: number): void;
  }> = [];
  const fake: Post = (url, body, signal, lookup) =>
    new Promise((resolve, reject) => {
      signal.addEventListener('abort', () => reject(new DOMException('aborted', 'AbortError')));
      const connect = () =>
        calls.push({ url, body, aborted: () => signal.aborted, answer: resolve });
      // As a connection does: a host name is resolved through the guard's lookup first.
      const { hostname } = new URL(url);
      if (!lookup || isIP(hostname.replace(/^\[(.*)\]$/, '$1')) !== 0) connect();
      else lookup(hostname, { all: true }, (err) => (err ? reject(err) : connect()));
    });
  return { calls, fake };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

/** The listed delivery of task `a` (key k) to `url`, refused at once as the emulator itself. */
const refusedAsSelf = (url: string) => ({
  id: 1,
  task_id: 'a',
  session: 'default',
  url,
  task_status: 'succeed',
  state: 'failed',
  attempts: 1,
  last_status: null,
  last_error: 'refused: callback_url must not point at the emulator itself',
  created_at: 0,
  updated_at: 0,
});

/** Timers the test fires by hand. */
function manualTimers() {
  const timers = new Set<{ fn: () => void; ms: number }>();
  const setTimer: SetTimer = (fn, ms) => {
    const timer = { fn, ms };
    timers.add(timer);
    return () => timers.delete(timer);
  };
  const fireAll = () => {
    const due = [...timers];
    timers.clear();
    for (const t of due) t.fn();
  };
  return { timers, setTimer, fireAll };
}

function setup(
  options: Partial<typeof DEFAULT_CALLBACK_OPTIONS> = {},
  guard?: Partial<CallbackGuardOptions>,
  setTimer: SetTimer = () => () => {},
) {
  const clock = createClock(() => 0);
  const scheduler = new Scheduler(clock, () => () => {});
  const { calls, fake } = manualPost();
  const callbacks = new Callbacks(
    clock,
    scheduler,
    setTimer,
    guard &&
      new CallbackGuard({ selfPorts: () => [], selfHosts: [], allowedHosts: undefined, ...guard }),
    { ...DEFAULT_CALLBACK_OPTIONS, post: fake, ...options },
  );
  return { clock, callbacks, calls };
}

describe('Callbacks', () => {
  it('delivers the notifications of one task one after another, in order', async () => {
    const { callbacks, calls } = setup();
    callbacks.enqueue('t1', 'k', 'http://h/a', 'processing', '{"n":1}');
    callbacks.enqueue('t1', 'k', 'http://h/a', 'succeed', '{"n":2}');
    callbacks.enqueue('t2', 'k', 'http://h/b', 'processing', '{"n":3}');
    await tick();
    expect(calls.map((c) => c.body)).toEqual(['{"n":1}', '{"n":3}']);
    calls[0]?.answer(200);
    await tick();
    expect(calls.map((c) => c.body)).toEqual(['{"n":1}', '{"n":3}', '{"n":2}']);
    calls[1]?.answer(200);
    calls[2]?.answer(200);
    await callbacks.idle();
    expect(callbacks.list().map((d) => [d.task_id, d.task_status, d.state])).toEqual([
      ['t1', 'processing', 'delivered'],
      ['t1', 'succeed', 'delivered'],
      ['t2', 'processing', 'delivered'],
    ]);
  });

  it('keeps at most `concurrency` requests in flight', async () => {
    const { callbacks, calls } = setup({ concurrency: 2 });
    for (const id of ['a', 'b', 'c', 'd']) {
      callbacks.enqueue(id, 'k', `http://${id}/`, 'processing', id);
    }
    await tick();
    expect(calls).toHaveLength(2);
    calls[0]?.answer(202);
    await tick();
    await tick();
    expect(calls).toHaveLength(3);
  });

  it('is bounded: forgets finished deliveries first, then refuses new ones', async () => {
    const { callbacks, calls } = setup({ limit: 2 });
    callbacks.enqueue('a', 'k', 'http://h/', 'processing', 'a');
    await tick();
    calls[0]?.answer(200);
    await callbacks.idle();
    callbacks.enqueue('b', 'k', 'http://h/', 'processing', 'b');
    callbacks.enqueue('c', 'k', 'http://h/', 'processing', 'c');
    expect(callbacks.list().map((d) => d.task_id)).toEqual(['b', 'c']);
    callbacks.enqueue('d', 'k', 'http://h/', 'processing', 'd');
    expect(callbacks.list().map((d) => d.task_id)).toEqual(['b', 'c']);
    expect(callbacks.dropped).toBe(1);
  });

  it("bounds each key's waiting notifications; other keys still get theirs", async () => {
    const { callbacks } = setup({ perKey: 3 });
    for (let i = 0; i < 5; i++) callbacks.enqueue(`a${i}`, 'greedy', 'http://h/', 'processing', '');
    callbacks.enqueue('b0', 'other', 'http://h/', 'processing', '');
    expect(callbacks.list().map((d) => d.task_id)).toEqual(['a0', 'a1', 'a2', 'b0']);
    expect(callbacks.dropped).toBe(2);
  });

  it('retries after 1 s, 2 s, 4 s, 8 s of emulator time, then fails', async () => {
    const { clock, callbacks, calls } = setup();
    callbacks.enqueue('a', 'k', 'http://h/', 'failed', 'a');
    await tick();
    for (const wait of [1000, 2000, 4000, 8000]) {
      calls.at(-1)?.answer(500);
      await tick();
      const before = calls.length;
      clock.advance(wait - 1);
      await tick();
      expect(calls.length).toBe(before);
      clock.advance(1);
      await tick();
      expect(calls.length).toBe(before + 1);
    }
    calls.at(-1)?.answer(500);
    await callbacks.idle();
    expect(callbacks.list()).toMatchObject([{ state: 'failed', attempts: 5, last_status: 500 }]);
  });

  it('lists a URL and logs it at shutdown without its password or credential parameters', async () => {
    const { callbacks, calls } = setup();
    callbacks.enqueue('a', 'k', 'http://al:pw-secret@h/cb?token=tok-secret', 'succeed', 'a');
    await tick();
    expect(calls.map((c) => c.url)).toEqual(['http://al:pw-secret@h/cb?token=tok-secret']);
    expect(callbacks.pending()).toEqual([
      'callback of task a (succeed) to http://al:[REDACTED]@h/cb?token=[REDACTED]: 1 attempts',
    ]);
    expect(callbacks.list().map((d) => d.url)).toEqual([
      'http://al:[REDACTED]@h/cb?token=[REDACTED]',
    ]);
  });

  it('never follows a redirect: a 3xx is a failed attempt that says so', async () => {
    const { callbacks, calls } = setup({ maxAttempts: 1 });
    callbacks.enqueue('a', 'k', 'http://h/', 'succeed', 'a');
    await tick();
    calls[0]?.answer(307);
    await callbacks.idle();
    expect(callbacks.list()).toMatchObject([
      {
        state: 'failed',
        attempts: 1,
        last_status: 307,
        last_error: 'HTTP 307 (redirects are not followed)',
      },
    ]);
  });

  it('times an attempt out with its own timer and frees the slot', async () => {
    const timers = manualTimers();
    const { callbacks, calls } = setup(
      { concurrency: 1, maxAttempts: 1, timeoutMs: 50 },
      undefined,
      timers.setTimer,
    );
    callbacks.enqueue('a', 'k', 'http://hang/', 'succeed', 'a');
    callbacks.enqueue('b', 'k', 'http://ok/', 'succeed', 'b');
    await tick();
    expect(calls.map((c) => c.url)).toEqual(['http://hang/']);
    expect([...timers.timers].map((t) => t.ms)).toEqual([50]);
    timers.fireAll();
    await tick();
    await tick();
    expect(calls[0]?.aborted()).toBe(true);
    expect(calls.map((c) => c.url)).toEqual(['http://hang/', 'http://ok/']);
    calls[1]?.answer(200);
    await callbacks.idle();
    expect(callbacks.list().map((d) => [d.task_id, d.state, d.last_error])).toEqual([
      ['a', 'failed', 'timed out after 50 ms'],
      ['b', 'delivered', null],
    ]);
    expect(timers.timers.size).toBe(0); // the answered attempt cleared its timer
  });

  it('cuts a DNS answer that never comes with the attempt timer, and frees the slot', async () => {
    const timers = manualTimers();
    const { callbacks, calls } = setup(
      { concurrency: 1, maxAttempts: 1, timeoutMs: 50 },
      { resolve: () => new Promise<string[]>(() => {}) },
      timers.setTimer,
    );
    callbacks.enqueue('a', 'k', 'http://slow-dns.example/', 'succeed', 'a');
    callbacks.enqueue('b', 'k2', 'http://127.0.0.1:9/', 'succeed', 'b');
    await tick();
    expect(calls).toEqual([]);
    timers.fireAll();
    await tick();
    await tick();
    expect(calls.map((c) => c.url)).toEqual(['http://127.0.0.1:9/']);
    calls[0]?.answer(200);
    await callbacks.idle();
    expect(callbacks.list().map((d) => [d.task_id, d.state, d.last_error])).toEqual([
      ['a', 'failed', 'timed out after 50 ms'],
      ['b', 'delivered', null],
    ]);
  });

  it('a key is one key whatever sessions it names: one turn, one share', async () => {
    const { callbacks, calls } = setup({ concurrency: 1, perKey: 3 });
    for (let i = 1; i <= 4; i++) {
      callbacks.enqueue(`a${i}`, `A\u0000s${i}`, `http://a${i}/`, 'succeed', '');
    }
    callbacks.enqueue('b', 'B', 'http://b/', 'succeed', '');
    // A's fourth notification was past its share of three, whatever its session.
    expect(callbacks.dropped).toBe(1);
    await tick();
    calls[0]?.answer(200);
    await tick();
    // A's sessions share A's turn: B goes next, not A's second session.
    expect(calls.map((c) => c.url)).toEqual(['http://a1/', 'http://b/']);
    callbacks.resetSession('s2');
    calls[1]?.answer(200);
    await tick();
    expect(calls.map((c) => c.url)).toEqual(['http://a1/', 'http://b/', 'http://a3/']);
    callbacks.enqueue('a5', 'A\u0000s5', 'http://a5/', 'succeed', '');
    callbacks.enqueue('a6', 'A\u0000s6', 'http://a6/', 'succeed', '');
    callbacks.enqueue('a7', 'A\u0000s7', 'http://a7/', 'succeed', '');
    expect(callbacks.dropped).toBe(2); // a3, a5 and a6 wait; a7 is past the share again
  });

  it('keys take turns and a host gets at most `perHost` slots', async () => {
    const { callbacks, calls } = setup({ concurrency: 4, perHost: 2 });
    for (let i = 0; i < 6; i++) callbacks.enqueue(`a${i}`, 'A', 'http://slow/', 'processing', '');
    for (let i = 0; i < 2; i++) callbacks.enqueue(`b${i}`, 'B', 'http://fast/', 'processing', '');
    await tick();
    // The slow host holds two slots; key B's deliveries are not stuck behind key A's.
    expect(calls.map((c) => c.url).sort()).toEqual([
      'http://fast/',
      'http://fast/',
      'http://slow/',
      'http://slow/',
    ]);
  });

  it('refuses a callback to the emulator itself at delivery, without retrying', async () => {
    const { callbacks, calls } = setup(
      {},
      { selfPorts: () => [8080], resolve: async () => ['127.0.0.1'] },
    );
    callbacks.enqueue('a', 'k', 'http://me.example:8080/hook', 'succeed', 'a');
    await callbacks.idle();
    expect(calls).toEqual([]);
    expect(callbacks.list()).toEqual([refusedAsSelf('http://me.example:8080/hook')]);
  });

  it('refuses at delivery a name whose DNS answer is loopback in IPv4-mapped IPv6', async () => {
    for (const answer of [['::ffff:127.0.0.1'], ['::ffff:7f00:1'], ['93.184.216.34', '::']]) {
      const { callbacks, calls } = setup(
        { maxAttempts: 1 },
        { selfPorts: () => [8080], resolve: async () => answer },
      );
      callbacks.enqueue('a', 'k', 'http://rebind.example:8080/hook', 'succeed', 'a');
      await tick();
      for (const call of calls) call.answer(200);
      await callbacks.idle();
      expect({ calls: calls.map((c) => c.url), list: callbacks.list() }, answer.join()).toEqual({
        calls: [],
        list: [refusedAsSelf('http://rebind.example:8080/hook')],
      });
    }
  });
});

/** What the guard's lookup says of a URL's host, as a connection would ask it. */
const lookupProblem = (g: CallbackGuard, url: string) =>
  new Promise<string | undefined>((resolve) =>
    g.lookupFor(url)(new URL(url).hostname, { all: true }, (err) => resolve(err?.message)),
  );

describe('CallbackGuard', () => {
  const guard = (o: Partial<CallbackGuardOptions> = {}) =>
    new CallbackGuard({
      selfPorts: () => [3000],
      selfHosts: ['gw.local'],
      allowedHosts: undefined,
      ...o,
    });

  it('refuses the control prefix on any host', () => {
    expect(guard().check('https://hooks.example/_emulator/reset')).toBe(
      "must not point at the emulator's control surface (/_emulator)",
    );
  });

  it('refuses the emulator by loopback, local address, configured name or request Host', () => {
    const g = guard();
    for (const url of [
      'http://127.0.0.1:3000/x',
      'http://localhost:3000/x',
      'http://[::1]:3000/x',
      'http://0.0.0.0:3000/x',
      'http://gw.local:3000/x',
    ]) {
      expect(g.check(url), url).toBe('must not point at the emulator itself');
    }
    expect(g.check('http://127.0.0.1:4000/x')).toBeUndefined();
    expect(g.check('http://proxy.example/x', 'proxy.example')).toBe(
      'must not point at the emulator itself',
    );
    expect(g.check('http://proxy.example:81/x', 'proxy.example')).toBeUndefined();
  });

  it('limits hosts to the allow-list when it is set', () => {
    const g = guard({ allowedHosts: ['hooks.example', '*.ci.example', 'box:9000'] });
    expect(g.check('https://hooks.example/a')).toBeUndefined();
    expect(g.check('https://a.b.ci.example/a')).toBeUndefined();
    expect(g.check('http://box:9000/a')).toBeUndefined();
    expect(g.check('http://box:9001/a')).toBe('host box is not in CALLBACK_ALLOWED_HOSTS');
    expect(g.check('https://evil.example/a')).toBe(
      'host evil.example is not in CALLBACK_ALLOWED_HOSTS',
    );
  });

  it('resolves names at delivery, against DNS rebinding', async () => {
    const g = guard({ resolve: async () => ['127.0.0.1'] });
    expect(await lookupProblem(g, 'http://rebind.example:3000/x')).toBe(
      'refused: callback_url must not point at the emulator itself',
    );
    expect(await lookupProblem(g, 'http://rebind.example:3001/x')).toBeUndefined();
  });

  it('refuses every spelling of a loopback, unspecified or own address', () => {
    const g = guard();
    const urls = [
      'http://[::ffff:127.0.0.1]:3000/x',
      'http://[::ffff:7f00:1]:3000/x',
      'http://[0:0:0:0:0:ffff:7f00:1]:3000/x',
      'http://[::ffff:0:7f00:1]:3000/x',
      'http://[::127.0.0.1]:3000/x',
      'http://[0::1]:3000/x',
      'http://[::]:3000/x',
      'http://[::ffff:0.0.0.0]:3000/x',
      'http://0:3000/x',
      'http://0.0.0.0:3000/x',
      'http://127.1:3000/x',
      'http://127.0.0.1.:3000/x',
      'http://127.255.255.254:3000/x',
      'http://2130706433:3000/x',
      'http://0x7f.1:3000/x',
      'http://017700000001:3000/x',
      'http://LOCALHOST:3000/x',
      'http://localhost.:3000/x',
      'http://app.localhost:3000/x',
      'http://GW.local.:3000/x',
    ];
    expect(urls.map((url) => [url, g.check(url)])).toEqual(
      urls.map((url) => [url, 'must not point at the emulator itself']),
    );
    for (const url of [
      'http://[::ffff:7f00:1]:3001/x',
      'http://[::ffff:808:808]:3000/x',
      'http://[2001:db8::1]:3000/x',
      'http://8.8.8.8:3000/x',
      'http://localhost.example:3000/x',
    ]) {
      expect(g.check(url), url).toBeUndefined();
    }
  });

  it('refuses the control prefix however the path spells it', () => {
    const g = guard();
    const paths = [
      '/_emulator',
      '/_emulator/reset',
      '/%5Femulator/reset',
      '/%5femulator/reset',
      '/%5F%65%6D%75%6C%61%74%6F%72/reset',
      '/%255Femulator/reset',
      '//_emulator/reset',
      '///_emulator/reset',
      '/./_emulator/reset',
      '/x/../_emulator/reset',
      '/%2e/_emulator/reset',
      '/x/%2E%2e/_emulator/reset',
      '/x/..%2F_emulator/reset',
      '/%2F_emulator/reset',
      '\\_emulator\\reset',
      '/%5C_emulator/reset',
      '/_EMULATOR/reset',
      '/_Emulator/clock/advance',
    ];
    const refused = "must not point at the emulator's control surface (/_emulator)";
    expect(paths.map((p) => [p, g.check(`http://[::ffff:7f00:1]:3001${p}`)])).toEqual(
      paths.map((p) => [p, refused]),
    );
    for (const path of ['/hooks/_emulator', '/emulator/reset', '/%5Fhooks', '/x/%2e%2e']) {
      expect(g.check(`https://hooks.example${path}`), path).toBeUndefined();
    }
  });

  it('compares the request Host after normalising it, and ignores a Host it cannot parse', () => {
    const g = guard();
    expect(g.check('http://[::ffff:a00:1]:81/x', '10.0.0.1:81')).toBe(
      'must not point at the emulator itself',
    );
    expect(g.check('http://proxy.example.:81/x', 'PROXY.example:81')).toBe(
      'must not point at the emulator itself',
    );
    for (const host of ['a b', '[::1', 'x:99999', 'ex.com:abc', '%', '', ':', '[]']) {
      expect(
        {
          public: g.check('https://hooks.example/x', host),
          loopback: g.check('http://[::ffff:7f00:1]:3000/x', host),
          named: g.check('http://gw.local:3000/x', host),
        },
        JSON.stringify(host),
      ).toEqual({
        public: undefined,
        loopback: 'must not point at the emulator itself',
        named: 'must not point at the emulator itself',
      });
    }
  });

  it('normalises resolved addresses at delivery as it does literals', async () => {
    for (const answer of ['::ffff:127.0.0.1', '::ffff:7f00:1', '::7f00:1', '0.0.0.0', '::']) {
      const g = guard({ resolve: async () => ['93.184.216.34', answer] });
      expect(await lookupProblem(g, 'http://rebind.example:3000/x'), answer).toBe(
        'refused: callback_url must not point at the emulator itself',
      );
    }
    const g = guard({ resolve: async () => ['::ffff:5db8:d822', '93.184.216.34'] });
    expect(await lookupProblem(g, 'http://public.example:3000/x')).toBeUndefined();
  });
});

describe('Callbacks with real timers', () => {
  it('frees slots held by targets that never answer, even after a GC', async () => {
    const { callbacks, calls } = setup(
      { concurrency: 8, maxAttempts: 1, timeoutMs: 30 },
      undefined,
      realSetTimer,
    );
    for (let i = 0; i < 8; i++) callbacks.enqueue(`h${i}`, 'A', `http://hang${i}/`, 'succeed', '');
    await tick();
    expect(calls).toHaveLength(8);
    callbacks.enqueue('ok', 'B', 'http://ok/', 'succeed', '');
    (globalThis as { gc?: () => void }).gc?.();
    const ok = await vi.waitFor(
      () => calls.find((c) => c.url === 'http://ok/') ?? expect.fail('not attempted yet'),
      { interval: 1 },
    );
    ok.answer(200);
    await callbacks.idle();
    expect(callbacks.list().filter((d) => d.state === 'failed')).toHaveLength(8);
    expect(callbacks.list().find((d) => d.task_id === 'ok')?.state).toBe('delivered');
  });
});

describe('Callbacks over node:http', () => {
  /** A local target that counts its hits and answers with `answer`. */
  async function target(answer: (res: ServerResponse) => void) {
    const hits: string[] = [];
    const server = createServer((req, res) => {
      hits.push(`${req.method} ${req.url} ${req.headers['content-type']}`);
      req.resume();
      answer(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const { port } = server.address() as AddressInfo;
    return { hits, port, server };
  }

  function realSetup(guard: Partial<CallbackGuardOptions>, options = {}) {
    const clock = createClock(() => 0);
    const callbacks = new Callbacks(
      clock,
      new Scheduler(clock, () => () => {}),
      realSetTimer,
      new CallbackGuard({ selfPorts: () => [], selfHosts: [], allowedHosts: undefined, ...guard }),
      { ...DEFAULT_CALLBACK_OPTIONS, maxAttempts: 1, ...options },
    );
    return callbacks;
  }

  it('connects to the address the guard resolved, not to a second DNS answer', async () => {
    const t = await target((res) => res.writeHead(204).end());
    const resolved: string[] = [];
    const callbacks = realSetup({
      resolve: async (host) => {
        resolved.push(host);
        return ['127.0.0.1'];
      },
    });
    callbacks.enqueue('a', 'k', `http://hooks.invalid:${t.port}/hook`, 'succeed', '{"a":1}');
    await callbacks.idle();
    expect(callbacks.list()).toMatchObject([{ state: 'delivered', last_status: 204 }]);
    expect(t.hits).toEqual(['POST /hook application/json']);
    expect(resolved).toEqual(['hooks.invalid']); // a name is resolved once, by the connection
    callbacks.close();
    t.server.close();
  });

  it('refuses a name that resolves to the emulator, asking DNS once: the connection asks', async () => {
    const t = await target((res) => res.writeHead(200).end());
    // A rebinding DNS server answers the emulator first and a public address after: there is
    // no second question for it to answer differently.
    const answers = [['127.0.0.1'], ['93.184.216.34']];
    const callbacks = realSetup({
      selfPorts: () => [t.port],
      resolve: async () => answers.shift() ?? ['127.0.0.1'],
    });
    callbacks.enqueue('a', 'k', `http://rebind.invalid:${t.port}/hook`, 'succeed', 'a');
    await callbacks.idle();
    expect(callbacks.list()).toEqual([refusedAsSelf(`http://rebind.invalid:${t.port}/hook`)]);
    expect(answers).toEqual([['93.184.216.34']]);
    expect(t.hits).toEqual([]);
    callbacks.close();
    t.server.close();
  });

  it('stops reading an answer past its bound and keeps the status', async () => {
    const chunk = Buffer.alloc(16 * 1024, 'x');
    const t = await target((res) => {
      res.writeHead(200);
      const pump = () => {
        while (res.write(chunk)) if (res.destroyed) return;
      };
      res.on('drain', pump);
      pump();
    });
    const callbacks = realSetup({ resolve: async () => ['127.0.0.1'] });
    callbacks.enqueue('a', 'k', `http://endless.invalid:${t.port}/`, 'succeed', 'a');
    await callbacks.idle();
    expect(callbacks.list()).toMatchObject([{ state: 'delivered', last_status: 200 }]);
    expect(MAX_ANSWER_BYTES).toBe(64 * 1024);
    callbacks.close();
    t.server.closeAllConnections();
    t.server.close();
  });

  it('keeps no connection open once an attempt is over, however many hosts are named', async () => {
    const t = await target((res) => res.writeHead(200, { connection: 'keep-alive' }).end());
    const callbacks = realSetup({ resolve: async () => ['127.0.0.1'] }, { perKey: 100 });
    for (let i = 0; i < 40; i++) {
      callbacks.enqueue(`t${i}`, 'k', `http://h${i}.invalid:${t.port}/`, 'succeed', 'a');
    }
    await callbacks.idle();
    expect(callbacks.list().filter((d) => d.state === 'delivered')).toHaveLength(40);
    const open = () =>
      new Promise<number>((resolve) => t.server.getConnections((_, n) => resolve(n)));
    await vi.waitFor(async () => expect(await open()).toBe(0), { interval: 5 });
    callbacks.close();
    t.server.close();
  });

  it('says why a connection failed, with its code', async () => {
    const t = await target((res) => res.end());
    await new Promise((r) => t.server.close(r)); // nobody listens on the port now
    const callbacks = realSetup({});
    callbacks.enqueue('a', 'k', `http://127.0.0.1:${t.port}/`, 'succeed', 'a');
    await callbacks.idle();
    expect(callbacks.list()).toMatchObject([
      {
        state: 'failed',
        last_status: null,
        last_error: `connect ECONNREFUSED 127.0.0.1:${t.port}`,
      },
    ]);
    callbacks.close();
  });
});
