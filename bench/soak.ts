/**
 * `npm run soak`: a hostile mix against one emulator (from src/, through tsx) for a while, from
 * many connections at once: normal and streaming chat and messages requests, n=8 streams,
 * clients that leave mid-stream, malformed, deeply nested, huge and over-large bodies, bad
 * content types, unknown routes, video tasks with callbacks to a receiver that never answers,
 * clock jumps, credentials in the query string and uploads that stall mid-body. Samples the
 * emulator's RSS each second and a health check's round trip each 100 ms; exits 1 on any 5xx,
 * any request left unanswered (not a deliberate abort), or a crash.
 *
 *   npm run soak                  # 60 s
 *   npm run soak -- --quick       # 10 s
 *   npm run soak -- --seconds 600
 */
import { Agent, type ClientRequest, request } from 'node:http';
import { connect, createServer, type Socket } from 'node:net';
import { performance } from 'node:perf_hooks';
import { benchFixtures, rssKiB, startServer } from './harness.js';
import { numberFlag, quantile } from './stats.js';

const args = process.argv.slice(2);
const SECONDS = args.includes('--quick') ? 10 : numberFlag(args, '--seconds', 60);
const CONNECTIONS = numberFlag(args, '--connections', 32);
const TIMEOUT_MS = 30_000;
const MAX_STALLS = 64;
const SECRET = `soak-secret-${process.pid}`;
const MB = 1024 * 1024;
/** One buffer of '[' for the huge bodies: 31 MB is under the limit, 33 MB over it. */
const BRACKETS = Buffer.alloc(33 * MB, '[');

const CHAT = '/v1/chat/completions';
const MESSAGES = '/messages-api/v1/messages';
const VIDEO = '/videogen/v1/videos/text2video';
const bearer = { authorization: 'Bearer soak-key' };
const msgapi = { 'x-api-key': 'soak-key', 'msgapi-version': '2023-06-01' };
const json = { 'content-type': 'application/json' };

interface Tally {
  sent: number;
  classes: number[]; // by status / 100: [0, 1xx, 2xx, 3xx, 4xx, 5xx]
  aborted: number;
  unanswered: number;
}
const tallies = new Map<string, Tally>();
const problems: string[] = [];
/** Statuses other than the expected one: how often, and the first request and answer. */
const surprises = new Map<string, { count: number; example: string }>();

type Outcome = { status: number; body?: string } | { aborted: true } | { error: string };

function tally(label: string, outcome: Outcome, expect: number | '4xx' | undefined, what: string) {
  let t = tallies.get(label);
  if (!t) {
    t = { sent: 0, classes: [0, 0, 0, 0, 0, 0], aborted: 0, unanswered: 0 };
    tallies.set(label, t);
  }
  t.sent++;
  if ('aborted' in outcome) t.aborted++;
  else if ('error' in outcome) {
    t.unanswered++;
    problems.push(`${label}: ${outcome.error}: ${what}`);
  } else {
    const cls = Math.floor(outcome.status / 100);
    t.classes[cls] = (t.classes[cls] ?? 0) + 1;
    const answer = outcome.body ? ` -> ${outcome.body.slice(0, 300)}` : '';
    if (cls === 5) problems.push(`${label}: ${outcome.status}: ${what}${answer}`);
    const ok = expect === undefined || (expect === '4xx' ? cls === 4 : outcome.status === expect);
    if (!ok) {
      const key = `${label}: ${outcome.status} (expected ${expect})`;
      const seen = surprises.get(key) ?? { count: 0, example: `${what}${answer}` };
      seen.count++;
      surprises.set(key, seen);
    }
  }
}

interface Shot {
  label: string;
  method?: string;
  path: string;
  headers?: Record<string, string>;
  body?: string;
  expect?: number | '4xx';
  /** Leave after this many response bytes: a client that goes away mid-stream. */
  abortAfter?: number;
  keepBody?: boolean;
}

let base = '';
let port = 0;
const agent = new Agent({ keepAlive: true, maxSockets: CONNECTIONS });

/** One request on the shared keep-alive pool; resolves with the reply body when `keepBody`. */
function send(shot: Shot): Promise<string | undefined> {
  const what = `${shot.method ?? 'POST'} ${shot.path} ${shot.body?.slice(0, 160) ?? ''}`;
  return new Promise((resolve) => {
    let req: ClientRequest | undefined;
    let settled = false;
    const done = (outcome: Outcome, body?: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      tally(shot.label, outcome, shot.expect, what);
      resolve(body);
    };
    const timer = setTimeout(() => {
      done({ error: `no answer in ${TIMEOUT_MS / 1000} s` });
      req?.destroy();
    }, TIMEOUT_MS);
    req = request(
      `${base}${shot.path}`,
      {
        method: shot.method ?? 'POST',
        agent,
        // node:http sends a GET or DELETE body unframed unless the length is given.
        headers: {
          ...shot.headers,
          ...(shot.body === undefined ? {} : { 'content-length': Buffer.byteLength(shot.body) }),
        },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const parts: Buffer[] = [];
        let seen = 0;
        res.on('data', (chunk: Buffer) => {
          seen += chunk.length;
          if (shot.keepBody || (status >= 400 && seen < 4096)) parts.push(chunk);
          if (shot.abortAfter !== undefined && seen >= shot.abortAfter) {
            done({ aborted: true });
            req?.destroy();
          }
        });
        res.on('end', () => {
          const body = Buffer.concat(parts).toString();
          done({ status, body }, body);
        });
        res.on('error', (err) => done({ error: `status ${status}, then ${err.message}` }));
      },
    );
    req.on('error', (err: NodeJS.ErrnoException) => done({ error: err.code ?? err.message }));
    req.end(shot.body);
  });
}

/**
 * A request on its own socket, written raw: for bodies the emulator may refuse before reading
 * them (a write error after the status line arrived is expected then).
 */
function sendRaw(label: string, head: string, body: Buffer, expect: number): Promise<void> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let writeError = '';
    let settled = false;
    const done = (outcome: Outcome) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      tally(label, outcome, expect, head.split('\r\n')[0] ?? '');
      resolve();
    };
    const timer = setTimeout(() => done({ error: 'no answer in 30 s' }), TIMEOUT_MS);
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
      const status = /^HTTP\/1\.1 (\d{3})/.exec(text)?.[1];
      if (status && text.includes('\r\n\r\n')) done({ status: Number(status) });
    });
    socket.on('error', (err: NodeJS.ErrnoException) => {
      writeError = err.code ?? err.message;
    });
    socket.on('close', () => done({ error: `closed with no status line (${writeError})` }));
    socket.write(head);
    socket.write(body);
  });
}

/** Uploads that stall: the head and half the body (or half the headers), then nothing. */
const stalls = { opened: 0, answered: new Map<number, number>(), closedAfterMs: [] as number[] };
const openStalls = new Set<Socket>();

function stallUpload(i: number): void {
  if (openStalls.size >= MAX_STALLS) return;
  const socket = connect(port, '127.0.0.1');
  const opened = performance.now();
  stalls.opened++;
  openStalls.add(socket);
  const head = `POST ${CHAT} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer soak-key\r\n`;
  socket.write(
    i % 2 === 0
      ? `${head}Content-Type: application/json\r\nContent-Length: 200000\r\n\r\n{"model":"chat-model","messages":[{"role":"user","content":"${'a'.repeat(100_000)}`
      : `${head}Content-Type: appli`,
  );
  let answered = false;
  socket.on('data', (chunk: Buffer) => {
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(chunk.toString('latin1'))?.[1]);
    if (!answered && status) stalls.answered.set(status, (stalls.answered.get(status) ?? 0) + 1);
    answered = true;
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    if (openStalls.delete(socket)) stalls.closedAfterMs.push(performance.now() - opened);
  });
}

let callbackUrl = '';
let lastHuge = 0;
let lastOversize = 0;
const deep = (depth: number, open: string, close: string, inner = '1') =>
  `${open.repeat(depth)}${inner}${close.repeat(depth)}`;
const EPHEMERAL = { type: 'ephemeral' };
const pick = <T>(xs: readonly T[], i: number): T => xs[i % xs.length] as T;
const chatBody = (i: number, extra: object = {}) =>
  JSON.stringify({
    model: 'chat-model',
    messages: [{ role: 'user', content: `Soak request ${i}: tell me about gateways.` }],
    max_tokens: 64,
    ...extra,
  });
/** A chat request offering one function `f` with these parameters. */
const chatTool = (i: number, parameters: object, extra: object = {}) =>
  chatBody(i, { tools: [{ type: 'function', function: { name: 'f', parameters } }], ...extra });
/** A chat request whose one custom tool, which it must call, takes text of a Lark grammar. */
const larkTool = (i: number, definition: string) =>
  chatBody(i, {
    tool_choice: 'required',
    tools: [
      {
        type: 'custom',
        custom: { name: 'g', format: { type: 'grammar', grammar: { syntax: 'lark', definition } } },
      },
    ],
  });
const messagesBody = (i: number, extra: object = {}) =>
  JSON.stringify({
    model: 'claude-like',
    max_tokens: 128,
    messages: [{ role: 'user', content: `Soak message ${i}` }],
    ...extra,
  });

/** Each kind of client: [weight, what it does with request number i]. */
const MIX: Array<[number, (i: number) => unknown]> = [
  [
    10,
    (i) =>
      send({
        label: 'chat',
        path: CHAT,
        headers: { ...bearer, ...json },
        body: chatBody(i),
        expect: 200,
      }),
  ],
  [
    8,
    (i) =>
      send({
        label: 'chat stream',
        path: CHAT,
        headers: { ...bearer, ...json, 'x-emulator-stream-delay-ms': String(i % 3) },
        body: chatBody(i, { stream: true, stream_options: { include_usage: true } }),
        expect: 200,
      }),
  ],
  [
    4,
    (i) =>
      send({
        label: 'chat n=8 stream',
        path: CHAT,
        headers: { ...bearer, ...json },
        body: chatBody(i, { n: 8, stream: true, max_tokens: 256 }),
        expect: 200,
      }),
  ],
  [
    10,
    (i) =>
      send({
        label: 'messages',
        path: MESSAGES,
        headers: { ...msgapi, ...json },
        body: messagesBody(i),
        expect: 200,
      }),
  ],
  [
    8,
    (i) =>
      send({
        label: 'messages stream',
        path: MESSAGES,
        headers: { ...msgapi, ...json, 'x-emulator-stream-delay-ms': String(i % 3) },
        body: messagesBody(i, { stream: true }),
        expect: 200,
      }),
  ],
  [
    3,
    (i) => {
      // Compaction on demand of a long tool loop, a pre-warm of a cached system prompt, and a
      // signed block sent back forged.
      const loop = [
        { role: 'user', content: `Soak search ${i}` },
        { role: 'assistant', content: [{ type: 'tool_use', id: `t${i}`, name: 's', input: {} }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: `t${i}`, content: 'found '.repeat(5000) }],
        },
        { role: 'assistant', content: 'Done.' },
      ];
      const cached = [{ type: 'text', text: 'rule '.repeat(2000), cache_control: EPHEMERAL }];
      const forged = { type: 'compaction', content: `Summary ${i}`, signature: 'A'.repeat(44) };
      const bodies = [
        messagesBody(i, { max_tokens: 4096, compaction: { type: 'summarize' }, messages: loop }),
        messagesBody(i, { max_tokens: 0, system: cached }),
        messagesBody(i, {
          messages: [
            { role: 'assistant', content: [forged] },
            { role: 'user', content: 'Go on.' },
          ],
        }),
      ];
      return send({
        label: 'compaction, pre-warm',
        path: MESSAGES,
        headers: { ...msgapi, ...json, 'anthropic-beta': 'compact-2026-09-04' },
        body: pick(bodies, i),
        expect: pick([200, 200, 400], i),
      });
    },
  ],
  [
    3,
    (i) => {
      // Upstream's web tools, run within the request: a search and a fetch of its first page,
      // streamed or not, and a fetch of a URL followed by 60 000 dots (quadratic to trim once).
      const web = [
        { type: 'web_search_20250305', name: 'web_search', max_uses: 2 },
        { type: 'web_fetch_20250910', name: 'web_fetch', citations: { enabled: true } },
      ];
      const bodies = [
        messagesBody(i, {
          tools: web,
          stream: i % 2 === 0,
          messages: [{ role: 'user', content: `Use web_search and web_fetch for soak ${i}` }],
        }),
        messagesBody(i, {
          tools: web,
          messages: [
            { role: 'user', content: `Read https://example.com/${i}/${'.'.repeat(60_000)}x` },
          ],
        }),
      ];
      return send({
        label: 'web search and fetch',
        path: MESSAGES,
        headers: { ...msgapi, ...json },
        body: pick(bodies, i),
        expect: 200,
      });
    },
  ],
  [
    8,
    (i) =>
      send({
        label: 'stream, client leaves',
        path: i % 2 ? CHAT : MESSAGES,
        headers: { ...(i % 2 ? bearer : msgapi), ...json, 'x-emulator-stream-delay-ms': '10' },
        body: (i % 2 ? chatBody : messagesBody)(i, {
          stream: true,
          max_tokens: 1024,
          messages: [{ role: 'user', content: '[bench] long' }],
        }),
        abortAfter: 200 + ((i * 7919) % 4000),
      }),
  ],
  [
    6,
    (i) =>
      send({
        label: 'malformed JSON',
        path: pick([CHAT, MESSAGES, VIDEO], i),
        headers: { ...bearer, ...msgapi, ...json },
        body: pick(
          ['{"model":', '{"a":1,}', 'nul', '[1,2', '"', '{"__proto__":{"x":1}}', '', '\u0000'],
          i,
        ),
        expect: 400,
      }),
  ],
  [
    3,
    (i) =>
      send({
        label: 'hostile bodies and schemas',
        headers: { ...bearer, ...msgapi, ...json },
        ...pick<{ path: string; body: string }>(
          [
            // JSON that is not an object (null killed the process)
            { path: pick([CHAT, MESSAGES, VIDEO], i), body: 'null' },
            { path: pick([VIDEO, CHAT, MESSAGES], i), body: '[]' },
            // a node that requires a list of itself (grown to 3^65 nodes before)
            {
              path: MESSAGES,
              body: messagesBody(i, {
                tool_choice: { type: 'any' },
                tools: [
                  {
                    name: 't',
                    input_schema: {
                      type: 'object',
                      $defs: {
                        n: {
                          type: 'object',
                          properties: {
                            c: { type: 'array', items: { $ref: '#/$defs/n' }, minItems: 1 },
                          },
                          required: ['c'],
                        },
                      },
                      properties: { root: { $ref: '#/$defs/n' } },
                      required: ['root'],
                    },
                  },
                ],
              }),
            },
            // hours for a backtracking engine: its value for one pattern checked by the other
            {
              path: CHAT,
              body: chatTool(
                i,
                {
                  type: 'object',
                  required: ['x'],
                  properties: {
                    x: {
                      type: 'string',
                      allOf: [{ pattern: '^a{40}!$' }, { pattern: '^(a|a)*$' }],
                    },
                  },
                },
                { tool_choice: 'required' },
              ),
            },
            // a custom tool's Lark grammar whose shortest text never ends in time, and one
            // nested past the bound (each a 400, not a hang or a stack overflow)
            { path: CHAT, body: larkTool(i, `start: x ~ ${1e9 + i}\nx: ["a"]`) },
            { path: CHAT, body: larkTool(i, `start: ${deep(20_000, '(', ')', `"${i}"`)}`) },
            // a large enum, each time another one (Ajv compiled each for seconds)
            {
              path: CHAT,
              body: chatTool(i, {
                type: 'object',
                properties: { e: { enum: Array.from({ length: 5000 }, (_, k) => `${i}-${k}`) } },
              }),
            },
          ],
          i,
        ),
        expect: 400,
      }),
  ],
  [
    4,
    (i) =>
      send({
        label: 'deeply nested JSON',
        path: pick([CHAT, MESSAGES, VIDEO, CHAT, MESSAGES], i),
        headers: { ...bearer, ...msgapi, ...json },
        body: pick(
          [
            // nesting in a key chat ignores
            chatBody(i).replace(/}$/, `,"x":${deep(100_000, '[', ']')}}`),
            // nesting where content blocks go
            `{"model":"claude-like","max_tokens":16,"messages":[{"role":"user","content":${deep(100_000, '[', ']', '"x"')}}]}`,
            `{"model_name":"vid-v1-6","prompt":"p","duration":"5","image_list":${deep(50_000, '{"a":', '}')}}`,
            // a tool schema 2000 levels deep
            chatTool(
              i,
              JSON.parse(
                deep(2000, '{"type":"object","properties":{"a":', '}}', '{"type":"string"}'),
              ),
              { tool_choice: 'required' },
            ),
            messagesBody(i, {
              output_config: {
                format: {
                  type: 'json_schema',
                  schema: JSON.parse(
                    deep(2000, '{"type":"array","items":', '}', '{"type":"string"}'),
                  ),
                },
              },
            }),
          ],
          i,
        ),
        expect: 400,
      }),
  ],
  [
    4,
    (i) =>
      send({
        label: 'bad content type',
        path: pick([CHAT, MESSAGES, VIDEO], i),
        headers: {
          ...bearer,
          ...msgapi,
          ...(i % 5 === 4
            ? {}
            : {
                'content-type': pick(
                  [
                    'text/plain',
                    'application/x-www-form-urlencoded',
                    'multipart/form-data; boundary=x',
                    'application/jsonx',
                  ],
                  i,
                ),
              }),
        },
        body: chatBody(i),
        expect: 415,
      }),
  ],
  [
    4,
    (i) =>
      send({
        label: 'unknown route',
        method: pick(['GET', 'POST', 'DELETE', 'PUT'], i),
        path: pick(
          [
            '/nope',
            '/v1/nope',
            '/messages-api/v1/nope',
            '/videogen/v1/videos/nokind/1',
            '/_emulator/nope',
            '/v1/%zz',
            `/videogen/v1/videos/text2video/${'a'.repeat(5000)}`,
          ],
          i,
        ),
        headers: { ...bearer, ...json },
        body: '{}',
        expect: '4xx',
      }),
  ],
  [6, (i) => videoTask(i)],
  [
    4,
    (i) =>
      send({
        label: 'credentials in query',
        method: i % 2 ? 'GET' : 'POST',
        path:
          i % 2
            ? `${VIDEO}?api-key=${SECRET}&key=${SECRET}&token=${SECRET}`
            : `${CHAT}?api-key=${SECRET}`,
        headers: { authorization: `Bearer ${SECRET}`, 'api-key': SECRET, ...json },
        ...(i % 2 ? {} : { body: chatBody(i) }),
        expect: 200,
      }),
  ],
  [2, (i) => stallUpload(i)],
  [
    1,
    () => {
      // 31 MB of '[' (under the limit: read and parsed), at most every 5 s
      if (performance.now() - lastHuge < 5000) return;
      lastHuge = performance.now();
      const head = `POST ${CHAT} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\nContent-Length: ${31 * MB}\r\n\r\n`;
      return sendRaw('31 MB of [', head, BRACKETS.subarray(0, 31 * MB), 400);
    },
  ],
  [
    1,
    (i) => {
      // 33 MB (over the 32 MB limit), with a length or chunked, at most every 2 s
      if (performance.now() - lastOversize < 2000) return;
      lastOversize = performance.now();
      const head = `POST ${pick([CHAT, MESSAGES, VIDEO], i)} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nx-api-key: k\r\nmsgapi-version: 2023-06-01\r\nContent-Type: application/json\r\n`;
      const chunked = i % 2 === 0;
      return sendRaw(
        `33 MB body, ${chunked ? 'chunked' : 'Content-Length'}`,
        `${head}${chunked ? 'Transfer-Encoding: chunked' : `Content-Length: ${33 * MB}`}\r\n\r\n`,
        chunked
          ? Buffer.concat([
              Buffer.from(`${(33 * MB).toString(16)}\r\n`),
              BRACKETS,
              Buffer.from('\r\n0\r\n\r\n'),
            ])
          : BRACKETS,
        413,
      );
    },
  ],
];
/** MIX with each kind repeated by its weight, for picking. */
const SLOTS = MIX.flatMap(([weight, run]) => Array.from({ length: weight }, () => run));

/**
 * A video task: create (half with a callback to the receiver that never answers), query, list,
 * and now and then jump the clock so that callbacks fall due.
 */
async function videoTask(i: number): Promise<void> {
  const headers = { ...bearer, ...json };
  const created = await send({
    label: 'video create',
    path: VIDEO,
    headers,
    body: JSON.stringify({
      model_name: 'vid-v1-6',
      prompt: `soak ${i}`,
      duration: '5',
      ...(i % 2 ? { callback_url: callbackUrl } : {}),
      ...(i % 3 ? { external_task_id: `soak-${i}` } : {}),
    }),
    expect: 200,
    keepBody: true,
  });
  const id = /"task_id":"([^"]+)"/.exec(created ?? '')?.[1] ?? 'missing';
  await send({
    label: 'video query',
    method: 'GET',
    path: `${VIDEO}/${id}`,
    headers: bearer,
    expect: 200,
  });
  await send({
    label: 'video list',
    method: 'GET',
    path: `${VIDEO}?pageNum=1&pageSize=500`,
    headers: bearer,
    expect: 200,
  });
  if (i % 4 === 0) {
    await send({
      label: 'clock advance',
      path: '/_emulator/clock/advance',
      headers: json,
      body: '{"ms":10000}',
      expect: 200,
    });
  }
}

async function worker(w: number, endAt: number, next: () => number): Promise<void> {
  while (performance.now() < endAt) {
    const i = next();
    await SLOTS[(((i + w) * 2654435761) >>> 0) % SLOTS.length]?.(i);
  }
}

async function main() {
  // The callback receiver: takes connections and never answers.
  const hung = new Set<Socket>();
  const receiver = createServer((socket) => {
    hung.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => hung.delete(socket));
  });
  let callbackConnections = 0;
  receiver.on('connection', () => callbackConnections++);
  await new Promise<void>((ok) => receiver.listen(0, '127.0.0.1', ok));
  const address = receiver.address();
  callbackUrl = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}/hook`;

  const emulator = await startServer(
    'dist/server.bundle.cjs',
    [],
    { LOG_LEVEL: 'error', FIXTURES_DIR: benchFixtures() },
    '/_emulator/health',
    'pipe',
  );
  ({ base, port } = emulator);
  const pid = emulator.child.pid;
  let logged = '';
  emulator.child.stderr?.on('data', (chunk: Buffer) => {
    logged += chunk.toString();
  });
  let crashed = '';
  let stopping = false;
  emulator.child.once('exit', (code, signal) => {
    if (!stopping) crashed = `exited with ${signal ?? code}`;
  });

  const rss: number[] = [rssKiB(pid)];
  const sampler = setInterval(() => rss.push(rssKiB(pid)), 1000);
  const started = performance.now();
  const endAt = started + SECONDS * 1000;
  const healthRtt: number[] = [];
  let healthFailures = 0;
  const worstHealth = { rtt: 0, at: 0 };
  const healthAgent = new Agent({ keepAlive: true, maxSockets: 1 });
  const probe = (async () => {
    while (performance.now() < endAt && !crashed) {
      const t = performance.now();
      const failure = await new Promise<string | undefined>((resolve) => {
        const req = request(`${base}/_emulator/health`, { agent: healthAgent }, (res) =>
          res
            .resume()
            .on('end', () => resolve(res.statusCode === 200 ? undefined : `${res.statusCode}`))
            .on('error', (err) => resolve(err.message)),
        );
        req.setTimeout(TIMEOUT_MS, () => req.destroy(new Error('no answer in 30 s')));
        req.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message)).end();
      });
      const rtt = performance.now() - t;
      if (failure !== undefined) {
        healthFailures++;
        problems.push(`health check failed after ${rtt.toFixed(0)} ms: ${failure}`);
      } else {
        healthRtt.push(rtt);
        if (rtt > worstHealth.rtt) Object.assign(worstHealth, { rtt, at: (t - started) / 1000 });
      }
      await new Promise((r) => setTimeout(r, Math.max(0, 100 - rtt)));
    }
  })();

  let n = 0;
  await Promise.all([
    probe,
    ...Array.from({ length: CONNECTIONS }, (_, w) => worker(w, endAt, () => n++)),
  ]);
  const duration = (performance.now() - started) / 1000;

  // After the load: is a secret anywhere in the journal or the log, are callbacks bounded?
  const journal =
    (await send({
      label: 'after: journal',
      method: 'GET',
      path: '/_emulator/requests',
      expect: 200,
      keepBody: true,
    })) ?? '';
  const callbacks = JSON.parse(
    (await send({
      label: 'after: callbacks',
      method: 'GET',
      path: '/_emulator/callbacks',
      expect: 200,
      keepBody: true,
    })) ?? '{}',
  ) as { callbacks?: Array<{ state: string }>; dropped?: number };
  await new Promise((r) => setTimeout(r, 1000));
  clearInterval(sampler);
  rss.push(rssKiB(pid));
  const stallsHeld = openStalls.size;
  for (const socket of [...openStalls, ...hung]) socket.destroy();
  receiver.close();
  stopping = true;
  emulator.child.kill();
  agent.destroy();
  healthAgent.destroy();

  const sum = (f: (t: Tally) => number) => [...tallies.values()].reduce((a, t) => a + f(t), 0);
  const rtt = Float64Array.from(healthRtt).sort();
  const live = rss.filter((x) => !Number.isNaN(x));
  const mb = (kib: number | undefined) => ((kib ?? Number.NaN) / 1024).toFixed(1);
  const closed = stalls.closedAfterMs.sort((a, b) => a - b);
  const states = new Map<string, number>();
  for (const c of callbacks.callbacks ?? []) states.set(c.state, (states.get(c.state) ?? 0) + 1);
  const errorLines = logged.split('\n').filter((l) => /"level":(50|60)/.test(l));
  const leaks = [journal.includes(SECRET) && 'journal', logged.includes(SECRET) && 'log'].filter(
    Boolean,
  );

  console.log(`soak: node ${process.version}, ${CONNECTIONS} connections, ${SECONDS} s\n`);
  const WIDTHS = [6, 7, 7, 7, 7, 9, 12];
  console.log(
    `${'kind'.padEnd(28)}${['sent', '2xx', '4xx', '5xx', 'other', 'aborted', 'unanswered'].map((h, k) => h.padStart(WIDTHS[k] ?? 7)).join('')}`,
  );
  for (const [label, t] of [...tallies].sort()) {
    const c = t.classes;
    console.log(
      `${label.padEnd(28)}${[
        t.sent,
        c[2],
        c[4],
        c[5],
        (c[0] ?? 0) + (c[1] ?? 0) + (c[3] ?? 0),
        t.aborted,
        t.unanswered,
      ]
        .map((x, k) => String(x).padStart(WIDTHS[k] ?? 7))
        .join('')}`,
    );
  }
  const rows: Array<[string, string]> = [
    ['duration', `${duration.toFixed(1)} s`],
    ['requests sent', `${sum((t) => t.sent)}`],
    [
      'answered',
      `2xx ${sum((t) => t.classes[2] ?? 0)}, 4xx ${sum((t) => t.classes[4] ?? 0)}, 5xx ${sum((t) => t.classes[5] ?? 0)}, other ${sum((t) => (t.classes[1] ?? 0) + (t.classes[3] ?? 0))}`,
    ],
    ['deliberate aborts', `${sum((t) => t.aborted)}`],
    ['unanswered', `${sum((t) => t.unanswered)} (+ ${healthFailures} failed health checks)`],
    [
      'stalled uploads',
      `${stalls.opened} opened, ${closed.length} closed by the emulator${closed.length ? ` (median after ${(quantile(closed, 0.5) / 1000).toFixed(1)} s)` : ''}, ${stallsHeld} still open at the end, answers ${JSON.stringify(Object.fromEntries(stalls.answered))}`,
    ],
    [
      'callbacks',
      `${callbackConnections} connections to the hung receiver; log ${JSON.stringify(Object.fromEntries(states))}, dropped ${callbacks.dropped}`,
    ],
    [
      'RSS start/peak/end',
      `${mb(live[0])} / ${mb(Math.max(...live))} / ${mb(live[live.length - 1])} MB`,
    ],
    [
      'RSS along the run',
      `${live
        .filter((_, k) => k % Math.ceil(live.length / 10) === 0)
        .map(mb)
        .join(' ')} MB`,
    ],
    [
      'health RTT p50/p99/max',
      `${quantile(rtt, 0.5).toFixed(1)} / ${quantile(rtt, 0.99).toFixed(1)} / ${(rtt[rtt.length - 1] ?? Number.NaN).toFixed(1)} ms (${rtt.length} probes; the slowest at ${worstHealth.at.toFixed(1)} s)`,
    ],
    ['secret in query leaked', leaks.length ? `YES: ${leaks.join(', ')}` : 'no'],
    ['error log lines', `${errorLines.length}`],
    ['emulator', crashed || 'alive to the end'],
  ];
  console.log('');
  for (const [name, value] of rows) console.log(`${name.padEnd(24)}${value}`);
  for (const [key, { count, example }] of surprises) {
    console.log(`unexpected status: ${key} x${count}, e.g. ${example}`);
  }
  for (const line of problems.slice(0, 20)) console.log(`problem: ${line}`);
  if (problems.length > 20) console.log(`... and ${problems.length - 20} more problems`);
  for (const line of errorLines.slice(0, 5)) console.log(`error log: ${line.slice(0, 400)}`);
  const failed =
    sum((t) => (t.classes[5] ?? 0) + t.unanswered) + healthFailures > 0 ||
    crashed !== '' ||
    leaks.length > 0;
  process.exitCode = failed ? 1 : 0;
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
