import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import { type AddressInfo, connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type Emulator, startEmulator } from '../../src/index.js';
import { bodyHash, type Recording } from '../../src/record/recordings.js';
import { MAX_UPSTREAM_BYTES } from '../../src/record/upstream.js';

const open: Emulator[] = [];
afterEach(async () => {
  for (const emu of open.splice(0)) await emu.close();
});
const start = async (options: Parameters<typeof startEmulator>[0]) => {
  const emu = await startEmulator(options);
  open.push(emu);
  return emu;
};

/** A recorder in front of a fake upstream (listening first), recording to a fresh directory. */
async function recorderOf(upstream: Server, options: Parameters<typeof startEmulator>[0] = {}) {
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  return start({
    upstreamMode: 'record',
    upstreamUrl: `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`,
    recordingsDir: mkdtempSync(join(tmpdir(), 'recordings-')),
    ...options,
  });
}

/** An emulator recording what another emulator (its upstream) answers, to a fresh directory. */
async function recordingEmulator() {
  const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
  const upstream = await start({});
  const recorder = await start({
    upstreamMode: 'record',
    upstreamUrl: upstream.url,
    recordingsDir: dir,
  });
  return { dir, upstream, recorder };
}

/** Waits that pass at once on a clock of their own, so that pacing is checked exactly. */
function pacedDeps() {
  const sleeps: number[] = [];
  let now = 0;
  return {
    sleeps,
    deps: {
      monotonic: () => now,
      wait: (ms: number, fn: () => void) => {
        sleeps.push(ms);
        now += ms;
        queueMicrotask(fn);
        return { cancel: () => {} };
      },
    },
  };
}

/** A chat stream asked for on a raw socket that reads the first bytes, then never again. */
function stalledChatStream(emu: Emulator, body: object): Socket {
  const text = JSON.stringify(body);
  const socket = connect(Number(new URL(emu.url).port), '127.0.0.1');
  socket.write(
    `POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  );
  socket.once('data', () => socket.pause());
  return socket;
}

function files(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath, e.name));
}

const CHAT = {
  model: 'gpt-rec',
  messages: [{ role: 'user', content: 'Tell me about recordings' }],
};
const MESSAGES = {
  model: 'claude-rec',
  max_tokens: 60,
  stream: true,
  messages: [{ role: 'user', content: 'Stream me something' }],
};
const TASK = { model_name: 'vid-v1-6', prompt: 'a recorded cat', duration: '5' };

const chat = (emu: Emulator, key: string, body: object = CHAT) =>
  fetch(`${emu.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
const messages = (emu: Emulator, key: string) =>
  fetch(`${emu.url}/messages-api/v1/messages?x-api-key=${key}`, {
    method: 'POST',
    headers: {
      'x-api-key': key,
      'msgapi-version': '2023-06-01',
      'content-type': 'application/json',
    },
    body: JSON.stringify(MESSAGES),
  });
const video = (emu: Emulator, key: string, id?: string) =>
  fetch(`${emu.url}/videogen/v1/videos/text2video${id ? `/${id}` : ''}`, {
    method: id ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(id ? {} : { body: JSON.stringify(TASK) }),
  });

/** Records a chat call, a messages stream and a video task's life through a recorder. */
async function record() {
  const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
  const upstream = await start({
    streamChunkDelayMs: 3,
    apiKeys: ['sk-secret-chat', 'sk-secret-msg', 'sk-secret-video'],
  });
  const recorder = await start({
    upstreamMode: 'record',
    upstreamUrl: upstream.url,
    recordingsDir: dir,
  });
  const answers = {
    chat: await (await chat(recorder, 'sk-secret-chat')).text(),
    stream: await (await messages(recorder, 'sk-secret-msg')).text(),
    polls: [] as string[],
    created: '',
  };
  answers.created = await (await video(recorder, 'sk-secret-video')).text();
  const id = JSON.parse(answers.created).data.task_id as string;
  answers.polls.push(await (await video(recorder, 'sk-secret-video', id)).text());
  upstream.clock.advance(2000);
  answers.polls.push(await (await video(recorder, 'sk-secret-video', id)).text());
  upstream.clock.advance(10_000);
  answers.polls.push(await (await video(recorder, 'sk-secret-video', id)).text());
  const journal = await recorder.journal();
  await upstream.close();
  return { dir, id, answers, journal };
}

describe('record, then replay with the upstream gone', () => {
  it('gives the same bytes, paced as recorded; keeps the task id; writes no credential', async () => {
    const { dir, id, answers, journal } = await record();
    expect(journal.map((e) => e.source)).toEqual(Array(6).fill('upstream'));
    expect(JSON.parse(answers.chat).object).toBe('chat.completion');
    expect(answers.stream).toContain('event: message_stop');
    expect(answers.polls.map((p) => JSON.parse(p).data.task_status)).toEqual([
      'submitted',
      'processing',
      'succeed',
    ]);

    // every file is readable JSON in the reply-rule shape, and holds no key
    const written = files(dir);
    expect(written).toHaveLength(4);
    for (const file of written) {
      const text = readFileSync(file, 'utf8');
      expect(text).not.toMatch(/sk-secret/);
      const recording = JSON.parse(text) as Recording;
      expect(Object.keys(recording).sort()).toEqual(['match', 'request', 'responses', 'upstream']);
    }
    const poll = written
      .map((f) => JSON.parse(readFileSync(f, 'utf8')) as Recording)
      .find((r) => r.match.method === 'GET');
    expect(poll?.responses).toHaveLength(3);

    const paced = pacedDeps();
    const replayer = await start({
      upstreamMode: 'replay',
      recordingsDir: dir,
      replayStrict: true,
      deps: paced.deps,
    });
    expect(await (await chat(replayer, 'any-key')).text()).toBe(answers.chat);
    expect(await (await messages(replayer, 'any-key')).text()).toBe(answers.stream);
    // the pauses between events are the recorded ones
    const streamFile = written.find((f) => f.includes('messages'));
    const events =
      (JSON.parse(readFileSync(streamFile as string, 'utf8')) as Recording).responses[0]?.stream ??
      [];
    const last = events.at(-1)?.at_ms ?? 0;
    expect(last).toBeGreaterThan(0);
    expect(paced.sleeps.reduce((a, b) => a + b, 0)).toBe(last);

    expect(await (await video(replayer, 'k')).text()).toBe(answers.created);
    for (const expected of answers.polls)
      expect(await (await video(replayer, 'k', id)).text()).toBe(expected);
    // the last recorded answer repeats
    expect(await (await video(replayer, 'k', id)).text()).toBe(answers.polls[2]);
    // another session replays from the first answer
    const other = await fetch(`${replayer.url}/videogen/v1/videos/text2video/${id}`, {
      headers: { authorization: 'Bearer k', 'x-emulator-session': 'other' },
    });
    expect(await other.text()).toBe(answers.polls[0]);
    expect((await replayer.journal()).every((e) => e.source === 'replay')).toBe(true);
    expect((await replayer.journal({ session: 'other' })).map((e) => e.source)).toEqual(['replay']);

    // strict: an unrecorded request is a 404 in the group's envelope
    const unrecorded = await chat(replayer, 'k', { ...CHAT, model: 'never-recorded' });
    expect(unrecorded.status).toBe(404);
    expect(((await unrecorded.json()) as { error: { message: string } }).error.message).toBe(
      'No recording of POST /v1/chat/completions matches.',
    );
  });

  it('not strict: an unrecorded request gets the emulator answer; instant pacing does not wait', async () => {
    const { dir, answers } = await record();
    const paced = pacedDeps();
    const replayer = await start({
      upstreamMode: 'replay',
      recordingsDir: dir,
      replayPacing: 'instant',
      deps: paced.deps,
    });
    expect(await (await messages(replayer, 'k')).text()).toBe(answers.stream);
    expect(paced.sleeps).toEqual([]);
    const own = await chat(replayer, 'k', { ...CHAT, model: 'never-recorded' });
    expect(own.status).toBe(200);
    expect((await replayer.journal()).map((e) => e.source)).toEqual(['replay', 'emulator']);
  });

  it('proxy: replays what is recorded, forwards (and records) the rest', async () => {
    const { dir, answers } = await record();
    const upstream = await start({});
    const proxy = await start({
      upstreamMode: 'proxy',
      upstreamUrl: upstream.url,
      recordingsDir: dir,
    });
    expect(await (await chat(proxy, 'k')).text()).toBe(answers.chat);
    const forwarded = await chat(proxy, 'k', { ...CHAT, model: 'new-one' });
    expect(forwarded.status).toBe(200);
    expect((await proxy.journal()).map((e) => e.source)).toEqual(['replay', 'upstream']);
    expect((await upstream.journal()).map((e) => e.model)).toEqual(['new-one']);
    expect(files(dir)).toHaveLength(5);
  });
});

describe('held answers outlive IDLE_TIMEOUT_MS', () => {
  it('a forward to an upstream that thinks for longer than the idle timeout is answered', async () => {
    const answer = { id: 'chatcmpl-slow', object: 'chat.completion', choices: [] };
    let release: (() => void) | undefined;
    const upstream = createServer((req, res) => {
      req.resume();
      release = () =>
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(answer));
    });
    const recorder = await recorderOf(upstream, { idleTimeoutMs: 100 });
    const pending = chat(recorder, 'k');
    await vi.waitFor(() => expect(release).toBeDefined());
    // Several idle timeouts pass (wall time inside Node's server) while upstream thinks.
    await new Promise((resolve) => setTimeout(resolve, 500));
    release?.();
    const res = await pending;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual(answer);
    upstream.close();
  });

  it('a replayed stream whose recorded pauses are longer than the idle timeout is whole', async () => {
    const { dir, answers } = await record();
    let now = 0;
    let held: Array<() => void> = [];
    let auto = false;
    const replayer = await start({
      upstreamMode: 'replay',
      recordingsDir: dir,
      idleTimeoutMs: 100,
      deps: {
        monotonic: () => now,
        wait: (ms: number, fn: () => void) => {
          const go = () => {
            now += ms;
            fn();
          };
          if (auto) queueMicrotask(go);
          else held.push(go);
          return { cancel: () => {} };
        },
      },
    });
    const res = await messages(replayer, 'k');
    const text = res.text();
    await vi.waitFor(() => expect(held.length).toBe(1));
    // The stream sits in a recorded pause across several idle timeouts.
    await new Promise((resolve) => setTimeout(resolve, 500));
    auto = true;
    for (const go of held) go();
    held = [];
    expect(await text).toBe(answers.stream);
  });
});

describe('bounds and failures', () => {
  it("writes a video task's callback_url without its password or credential parameters", async () => {
    const { dir, recorder } = await recordingEmulator();
    const res = await fetch(`${recorder.url}/videogen/v1/videos/text2video`, {
      method: 'POST',
      headers: { authorization: 'Bearer k', 'content-type': 'application/json' },
      body: JSON.stringify({
        ...TASK,
        callback_url: 'https://u:pw-secret@hooks.example/cb?token=t0k',
      }),
    });
    expect(res.status).toBe(200);
    const [file] = files(dir);
    const recording = JSON.parse(readFileSync(file as string, 'utf8')) as Recording;
    expect((recording.request.body as { callback_url: string }).callback_url).toBe(
      'https://u:[REDACTED]@hooks.example/cb?token=[REDACTED]',
    );
    expect(readFileSync(file as string, 'utf8')).not.toMatch(/pw-secret|t0k/);
  });

  it('keeps no credential an upstream echoes (body, stream event, kept header); the client gets the answer as sent', async () => {
    const upstream = createServer((req, res) => {
      req.resume();
      const key = req.headers['x-api-key'] ?? String(req.headers.authorization).slice(7);
      const query = new URL(req.url ?? '/', 'http://x').searchParams.get('api-key');
      if (req.url?.startsWith('/v1/chat')) {
        res.writeHead(401, { 'content-type': 'application/json', 'x-request-id': `req-${key}` });
        res.end(JSON.stringify({ error: { message: `Incorrect API key provided: ${key}.` } }));
        return;
      }
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`event: ping\ndata: {"key":"${key}"}\n\n`);
      res.end(`event: message_stop\ndata: {"q":"${query}"}\n\n`);
    });
    const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    const recorder = await recorderOf(upstream, { recordingsDir: dir });
    const denied = await chat(recorder, 'sk-echoed-chat-key');
    expect(denied.status).toBe(401);
    expect(denied.headers.get('x-request-id')).toBe('req-sk-echoed-chat-key');
    expect(await denied.json()).toEqual({
      error: { message: 'Incorrect API key provided: sk-echoed-chat-key.' },
    });
    const stream = await fetch(
      `${recorder.url}/messages-api/v1/messages?api-key=sk%2Dquery%2Dsecret`,
      {
        method: 'POST',
        headers: {
          'x-api-key': 'sk-echoed-msg-key',
          'msgapi-version': '2023-06-01',
          'content-type': 'application/json',
        },
        body: JSON.stringify(MESSAGES),
      },
    );
    expect(await stream.text()).toBe(
      'event: ping\ndata: {"key":"sk-echoed-msg-key"}\n\nevent: message_stop\ndata: {"q":"sk-query-secret"}\n\n',
    );
    const written = files(dir).map((file) => readFileSync(file, 'utf8'));
    expect(written).toHaveLength(2);
    expect(written.join('\n')).not.toMatch(/sk-echoed|sk-query|sk%2Dquery/);
    const recordings = written.map((text) => JSON.parse(text) as Recording);
    const chatRecording = recordings.find((r) => r.match.group === 'chat');
    expect(chatRecording?.responses).toEqual([
      {
        status: 401,
        headers: { 'content-type': 'application/json', 'x-request-id': 'req-[REDACTED]' },
        body: { error: { message: 'Incorrect API key provided: [REDACTED].' } },
      },
    ]);
    const streamRecording = recordings.find((r) => r.match.group === 'messages');
    expect(
      streamRecording?.responses[0]?.stream?.map(({ event, data }) => ({ event, data })),
    ).toEqual([
      { event: 'ping', data: '{"key":"[REDACTED]"}' },
      { event: 'message_stop', data: '{"q":"[REDACTED]"}' },
    ]);
    upstream.close();
  });

  it('journals a forwarded stream the upstream cuts off as aborted, and records nothing', async () => {
    const first = 'data: {"id":"c1","choices":[]}\n\n';
    const upstream = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(first, () => setTimeout(() => res.destroy(), 20));
    });
    const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    const recorder = await recorderOf(upstream, { recordingsDir: dir });
    const res = await chat(recorder, 'k', { ...CHAT, stream: true });
    expect(res.status).toBe(200);
    await res.text().catch(() => 'cut');
    const entry = await recorder.waitFor({ path: '/v1/chat/completions' }, 5000);
    expect(entry).toMatchObject({
      source: 'upstream',
      status: 200,
      aborted: true,
      bytes_sent: Buffer.byteLength(first),
    });
    expect(files(dir)).toEqual([]);
    upstream.close();
  });

  it('passes on an answer over RECORDING_MAX_BYTES without recording it; one at the bound is kept', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    const upstream = await start({});
    const small = await (await chat(upstream, 'k')).text();
    const size = Buffer.byteLength(small);
    const atBound = await start({
      upstreamMode: 'record',
      upstreamUrl: upstream.url,
      recordingsDir: dir,
      recordingMaxBytes: size,
    });
    // (each answer has its own id and time; the sizes are the same)
    expect(Buffer.byteLength(await (await chat(atBound, 'k')).text())).toBe(size);
    expect(files(dir)).toHaveLength(1);
    const over = mkdtempSync(join(tmpdir(), 'recordings-'));
    const below = await start({
      upstreamMode: 'record',
      upstreamUrl: upstream.url,
      recordingsDir: over,
      recordingMaxBytes: size - 1,
    });
    expect(Buffer.byteLength(await (await chat(below, 'k')).text())).toBe(size);
    expect(files(over)).toEqual([]);
    // a stream past the bound is passed on whole, and not kept
    const tiny = await start({
      upstreamMode: 'record',
      upstreamUrl: upstream.url,
      recordingsDir: over,
      recordingMaxBytes: 100,
    });
    const stream = await (await messages(tiny, 'k')).text();
    expect(stream).toContain('event: message_stop');
    expect(Buffer.byteLength(stream)).toBeGreaterThan(100);
    expect(files(over)).toEqual([]);
  });

  it(`answers 502 for an upstream JSON answer over ${MAX_UPSTREAM_BYTES} bytes, compressed, or broken off`, async () => {
    const upstream = createServer((req, res) => {
      req.resume();
      const model = req.headers['x-test-case'];
      if (model === 'huge') {
        res.writeHead(200, { 'content-type': 'application/json' });
        const mb = Buffer.alloc(1024 * 1024, 'a');
        let sent = 0;
        const more = () => {
          while (sent <= MAX_UPSTREAM_BYTES && res.write(mb)) sent += mb.length;
          if (sent <= MAX_UPSTREAM_BYTES) res.once('drain', more);
          else res.end();
        };
        more();
      } else if (model === 'gzip') {
        res.writeHead(200, { 'content-type': 'application/json', 'content-encoding': 'gzip' });
        res.end(Buffer.alloc(10));
      } else {
        res.writeHead(200, { 'content-type': 'application/json', 'content-length': '1000' });
        res.write('{"id":', () => setTimeout(() => res.destroy(), 20));
      }
    });
    const recorder = await recorderOf(upstream);
    for (const [testCase, message] of [
      ['huge', `The upstream gateway answered with more than ${MAX_UPSTREAM_BYTES} bytes.`],
      [
        'gzip',
        'The upstream gateway answered with Content-Encoding gzip, though asked for identity.',
      ],
      ['cut', 'The upstream gateway broke off its answer.'],
    ]) {
      const res = await fetch(`${recorder.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer k',
          'content-type': 'application/json',
          'x-test-case': testCase as string,
        },
        body: JSON.stringify(CHAT),
      });
      expect(res.status, testCase).toBe(502);
      expect(((await res.json()) as { error: { message: string } }).error.message).toBe(message);
    }
    upstream.close();
  });

  it('answers 504 in the group envelope when the upstream takes longer than UPSTREAM_TIMEOUT_MS, or cuts its stream', async () => {
    const held: Array<import('node:http').ServerResponse> = [];
    const upstream = createServer((req, res) => {
      req.resume();
      if (req.headers['x-test-case'] === 'trickle') {
        // headers at once, then a byte a while: fetch's own timeouts restart at every byte
        res.writeHead(200, { 'content-type': 'application/json' });
        const drip = setInterval(() => res.write(' '), 20);
        res.on('close', () => clearInterval(drip));
      }
      held.push(res); // never answers (or never ends)
    });
    const recorder = await recorderOf(upstream, { upstreamTimeoutMs: 300 });
    for (const testCase of ['hang', 'trickle']) {
      const res = await fetch(`${recorder.url}/v1/chat/completions`, {
        method: 'POST',
        headers: {
          authorization: 'Bearer k',
          'content-type': 'application/json',
          'x-test-case': testCase,
        },
        body: JSON.stringify(CHAT),
      });
      expect(res.status, testCase).toBe(504);
      expect(((await res.json()) as { error: { message: string } }).error.message).toBe(
        'The upstream gateway did not answer within 300 ms.',
      );
    }
    // a stream under way when the time is up: cut, and journaled as aborted
    const first = 'data: {"id":"c1","choices":[]}\n\n';
    const streaming = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' }).write(first);
      held.push(res);
    });
    const streamed = await recorderOf(streaming, { upstreamTimeoutMs: 300 });
    const cut = await chat(streamed, 'k', { ...CHAT, stream: true });
    expect(cut.status).toBe(200);
    await cut.text().catch(() => 'cut'); // the connection is dropped
    expect(await streamed.waitFor({ path: '/v1/chat/completions' }, 5000)).toMatchObject({
      source: 'upstream',
      status: 200,
      aborted: true,
      bytes_sent: Buffer.byteLength(first),
    });
    for (const res of held) res.destroy();
    upstream.close();
    streaming.close();
  });

  it('cuts a forwarded stream whose client stops reading, after STREAM_STALL_TIMEOUT_MS', async () => {
    const frame = `data: ${JSON.stringify({ text: 'x'.repeat(60_000) })}\n\n`;
    const upstream = createServer((req, res) => {
      req.resume();
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      const more = () => {
        while (!res.destroyed && res.write(frame));
        if (!res.destroyed) res.once('drain', more);
      };
      more();
      res.on('error', () => {});
    });
    const recorder = await recorderOf(upstream, { streamStallTimeoutMs: 300 });
    const socket = stalledChatStream(recorder, { ...CHAT, stream: true });
    const entry = await recorder.waitFor({ path: '/v1/chat/completions' }, 10_000);
    expect(entry).toMatchObject({ source: 'upstream', status: 200, aborted: true });
    socket.destroy();
    upstream.close();
  });

  it('cuts a replayed stream whose client stops reading, after STREAM_STALL_TIMEOUT_MS', async () => {
    const body = { ...CHAT, stream: true };
    const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    const data = JSON.stringify({ text: 'x'.repeat(60_000) });
    const recording: Recording = {
      match: {
        group: 'chat',
        method: 'POST',
        path: '/v1/chat/completions',
        model: CHAT.model,
        body_hash: bodyHash(body) as string,
      },
      request: { body },
      responses: [
        {
          status: 200,
          headers: { 'content-type': 'text/event-stream' },
          stream: Array.from({ length: 400 }, () => ({ at_ms: 0, data })),
        },
      ],
      upstream: 'https://gw.example',
    };
    writeFileSync(join(dir, 'stream.json'), JSON.stringify(recording));
    const replayer = await start({
      upstreamMode: 'replay',
      recordingsDir: dir,
      replayPacing: 'instant',
      streamStallTimeoutMs: 300,
    });
    const socket = stalledChatStream(replayer, body);
    const entry = await replayer.waitFor({ path: '/v1/chat/completions' }, 10_000);
    expect(entry).toMatchObject({ source: 'replay', status: 200, aborted: true });
    // cut well before the 24 MB recorded: what the socket and its buffers held
    expect((entry as { bytes_sent: number }).bytes_sent).toBeLessThan(400 * data.length);
    socket.destroy();
  });

  it('answers 502 in the group envelope when the upstream cannot be reached', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    const gone = await start({});
    const url = gone.url;
    await gone.close();
    open.splice(open.indexOf(gone), 1);
    const recorder = await start({ upstreamMode: 'record', upstreamUrl: url, recordingsDir: dir });
    const res = await chat(recorder, 'k');
    expect(res.status).toBe(502);
    const body = (await res.json()) as { error: { message: string; type: string } };
    expect(body.error.message).toMatch(
      /^The upstream gateway could not be reached \(ECONNREFUSED\)\.$/,
    );
    expect(files(dir)).toEqual([]);
  });
});

describe('drift', () => {
  it('an honest recording (a video task’s whole life included) reports no drift', async () => {
    const { dir } = await record();
    const emu = await start({ recordingsDir: dir });
    const res = await fetch(`${emu.url}/_emulator/drift`, { method: 'POST' });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      drift: false,
      recordings: 4,
      responses: 6,
      differences: [],
    });
  });

  it('a changed upstream field, enum value or event order shows up, field by field', async () => {
    const { dir } = await record();
    for (const file of files(dir)) {
      const recording = JSON.parse(readFileSync(file, 'utf8')) as Recording;
      const [first] = recording.responses;
      if (!first) continue;
      if (recording.match.group === 'chat') {
        const body = first.body as {
          usage: unknown;
          usage_v2?: unknown;
          choices: Array<{ finish_reason: string }>;
        };
        body.usage_v2 = body.usage;
        delete (body as { usage?: unknown }).usage;
        (body.choices[0] as { finish_reason: string }).finish_reason = 'stopped_by_upstream';
        first.body_text = undefined;
        delete first.body_text;
      }
      if (recording.match.group === 'messages' && first.stream) {
        first.stream = first.stream.filter((e) => e.event !== 'message_delta');
        for (const e of first.stream) delete e.raw;
      }
      writeFileSync(file, JSON.stringify(recording, null, 2));
    }
    const emu = await start({});
    const report = (await (
      await fetch(`${emu.url}/_emulator/drift`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ recordings: dir }),
      })
    ).json()) as {
      drift: boolean;
      differences: Array<{ kind: string; at: string; recording: string }>;
    };
    expect(report.drift).toBe(true);
    const seen = report.differences.map((d) => `${d.kind} ${d.at}`);
    expect(seen).toEqual(
      expect.arrayContaining([
        'missing body.usage',
        'extra body.usage_v2',
        'enum body.choices[0].finish_reason',
        'event_order events',
      ]),
    );
    expect(report.differences.every((d) => !d.recording.startsWith('/'))).toBe(true);
  });

  it('an agent conversation with betas and signed blocks: the betas are recorded and sent again, the blocks signed again, so no drift', async () => {
    const { dir, recorder } = await recordingEmulator();
    const ask = async (body: object) => {
      const res = await fetch(`${recorder.url}/messages-api/v1/messages`, {
        method: 'POST',
        headers: {
          'x-api-key': 'sk-agent',
          'msgapi-version': '2023-06-01',
          'anthropic-beta': 'compact-2026-09-04',
          'content-type': 'application/json',
        },
        body: JSON.stringify({ model: 'claude-like', max_tokens: 2048, ...body }),
      });
      expect(res.status).toBe(200);
      return (await res.json()) as { content: Array<Record<string, unknown>> };
    };
    const question = { role: 'user', content: 'Think, then answer.' };
    const thinking = { type: 'enabled', budget_tokens: 1024 };
    const turn = await ask({ thinking, messages: [question] });
    const history = [
      question,
      { role: 'assistant', content: turn.content },
      { role: 'user', content: 'And?' },
    ];
    await ask({ thinking, messages: history });
    const summary = await ask({ compaction: { type: 'summarize' }, messages: history });
    await ask({
      messages: [
        { role: 'assistant', content: summary.content },
        { role: 'user', content: 'Go on.' },
      ],
    });
    // upstream's signatures are its own: the emulator cannot verify them
    let signed = 0;
    for (const file of files(dir)) {
      const recording = JSON.parse(readFileSync(file, 'utf8')) as Recording;
      expect(recording.request.betas).toEqual(['compact-2026-09-04']);
      const text = JSON.stringify(recording).replace(/"signature":"[^"]+"/g, () => {
        signed++;
        return '"signature":"EuYBCkQYupstreamsignature"';
      });
      writeFileSync(file, text);
    }
    expect(signed).toBeGreaterThanOrEqual(4);
    const emu = await start({});
    const res = await fetch(`${emu.url}/_emulator/drift`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ recordings: dir }),
    });
    expect(await res.json()).toEqual({
      drift: false,
      recordings: 4,
      responses: 4,
      differences: [],
    });
  });

  it('npm run drift exits 1 on drift, 0 without, 2 without a directory', async () => {
    const { dir } = await record();
    const { spawnSync } = await import('node:child_process');
    const run = (args: string[]) =>
      spawnSync(process.execPath, ['--import', 'tsx', 'scripts/drift.ts', ...args], {
        encoding: 'utf8',
      });
    const clean = run(['--recordings', dir]);
    expect(clean.stdout).toContain('4 recordings, 6 answers compared: no drift');
    expect(clean.status).toBe(0);
    const chatFile = files(dir).find((f) => f.includes(`${join('chat', '')}`)) as string;
    const recording = JSON.parse(readFileSync(chatFile, 'utf8')) as Recording;
    (recording.responses[0]?.body as Record<string, unknown>).object = 42;
    writeFileSync(chatFile, JSON.stringify(recording));
    const drifted = run(['--recordings', dir]);
    expect(drifted.status).toBe(1);
    expect(drifted.stdout).toContain('type at body.object: emulator "string", recorded "number"');
    expect(run([]).status).toBe(2);
  }, 60_000);
});
