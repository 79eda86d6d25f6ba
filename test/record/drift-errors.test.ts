import { execFileSync, spawnSync } from 'node:child_process';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { Writable } from 'node:stream';
import Fastify from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { type ControlOptions, controlRoutes } from '../../src/control/index.js';
import { REFUSAL } from '../../src/platform/schema-helpers.js';
import {
  MAX_WALK_DEPTH,
  MAX_WALK_ENTRIES,
  RECORDING_MAX_BYTES,
  Recordings,
  RecordingsError,
} from '../../src/record/recordings.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
afterEach(() => t?.app.close());

const ROOT = join(import.meta.dirname, '..', '..');

const drift = (recordings: string) =>
  t.inject({ method: 'POST', url: '/_emulator/drift', payload: { recordings } });

/** The 400 every unusable recordings directory gets: its message, or a failure showing why not. */
async function refused(recordings: string): Promise<string> {
  const res = await drift(recordings);
  expect(res.statusCode, res.body).toBe(400);
  const { error } = res.json() as { error: { type: string; message: string } };
  expect(error.type).toBe('invalid_request_error');
  expect(error.message).toMatch(/^recordings: /);
  return error.message;
}

const CHAT_RECORDING = {
  match: { group: 'chat', method: 'POST', path: '/v1/chat/completions', model: 'm' },
  request: { body: { model: 'm', messages: [{ role: 'user', content: 'hi' }] } },
  responses: [{ status: 200, headers: {}, body: { object: 'chat.completion' } }],
  upstream: 'https://gateway.example',
};

describe('POST /_emulator/drift with recordings it cannot use', () => {
  it('a file is a 400: not a directory', async () => {
    t = await buildTestApp();
    const file = join(ROOT, 'package.json');
    expect(await refused(file)).toBe(`recordings: ${file} is not a directory`);
  });

  it('a directory with a .json that is no recording is a 400 naming the file and its problem', async () => {
    t = await buildTestApp();
    const dir = mkdtempSync(join(tmpdir(), 'not-recordings-'));
    mkdirSync(join(dir, 'chat'));
    writeFileSync(join(dir, 'chat', 'ok.json'), JSON.stringify(CHAT_RECORDING));
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'x', version: '1.0.0' }));
    expect(await refused(dir)).toBe(
      'recordings: package.json is not a recording: match is missing or not an object',
    );
    // (the parser's words would quote the file: whatever is on the disk)
    writeFileSync(join(dir, 'package.json'), 'SECRET_TOKEN=abc');
    expect(await refused(dir)).toBe('recordings: package.json is not valid JSON');
    writeFileSync(
      join(dir, 'package.json'),
      JSON.stringify({ ...CHAT_RECORDING, responses: [{ headers: {} }] }),
    );
    expect(await refused(dir)).toBe(
      'recordings: package.json is not a recording: responses[0].status must be an integer from 200 to 599',
    );
    writeFileSync(join(dir, 'package.json'), JSON.stringify([1, 2]));
    expect(await refused(dir)).toBe(
      'recordings: package.json is not a recording: it is not a JSON object',
    );
    // a real package's directory: its first .json (in name order) is named
    expect(await refused(join(ROOT, 'node_modules', 'ajv'))).toMatch(
      /^recordings: \S+\.json is not a recording: match is missing or not an object$/,
    );
  });

  it('a tree deeper or larger than a recordings directory is refused before it is all walked', async () => {
    t = await buildTestApp();
    const deep = mkdtempSync(join(tmpdir(), 'deep-'));
    mkdirSync(join(deep, ...Array.from({ length: MAX_WALK_DEPTH + 1 }, () => 'd')), {
      recursive: true,
    });
    expect(await refused(deep)).toBe(
      `recordings: ${deep} is deeper than ${MAX_WALK_DEPTH} directories`,
    );
    const wide = mkdtempSync(join(tmpdir(), 'wide-'));
    for (let i = 0; i <= MAX_WALK_ENTRIES; i++) mkdirSync(join(wide, String(i)));
    expect(await refused(wide)).toBe(
      `recordings: ${wide} holds more than ${MAX_WALK_ENTRIES} files and directories`,
    );
  });

  it('a field it does not take, or recordings that are no path, is a 400 naming it', async () => {
    t = await buildTestApp();
    for (const [payload, message] of [
      [{ recordings: ROOT, more: 1 }, 'more is not a field of this body'],
      [{ recordings: '' }, 'recordings must be a directory path'],
      [{ recordings: 5 }, 'recordings must be a directory path'],
    ] as const) {
      const res = await t.inject({ method: 'POST', url: '/_emulator/drift', payload });
      expect([res.statusCode, res.json()], JSON.stringify(payload)).toEqual([
        400,
        { error: { type: 'invalid_request_error', message } },
      ]);
    }
  });

  it('a body that is not an object is a 400', async () => {
    t = await buildTestApp();
    for (const payload of ['[]', '5', 'true', '"x"']) {
      const res = await t.inject({
        method: 'POST',
        url: '/_emulator/drift',
        headers: { 'content-type': 'application/json' },
        payload,
      });
      expect([res.statusCode, res.json()], payload).toEqual([
        400,
        {
          error: {
            type: 'invalid_request_error',
            message: 'the body must be a JSON object, or none',
          },
        },
      ]);
    }
  });

  it('a FIFO named .json is refused, not read (the read would wait for a writer for ever)', async () => {
    t = await buildTestApp();
    const dir = mkdtempSync(join(tmpdir(), 'fifo-'));
    execFileSync('mkfifo', [join(dir, 'pipe.json')]);
    expect(await refused(dir)).toBe('recordings: pipe.json is not a regular file');
  });

  it(`a file over ${RECORDING_MAX_BYTES} bytes is refused before it is read`, async () => {
    t = await buildTestApp();
    const dir = mkdtempSync(join(tmpdir(), 'huge-'));
    writeFileSync(join(dir, 'huge.json'), '');
    truncateSync(join(dir, 'huge.json'), RECORDING_MAX_BYTES + 1); // sparse: costs no disk
    expect(await refused(dir)).toBe(
      `recordings: huge.json is larger than ${RECORDING_MAX_BYTES} bytes`,
    );
  });

  it('npm run drift stops with exit code 2 and the reason for such a directory', () => {
    const dir = mkdtempSync(join(tmpdir(), 'drift-cli-'));
    writeFileSync(join(dir, 'a.json'), '{"x":1}');
    const run = spawnSync('npx', ['tsx', 'scripts/drift.ts', '--recordings', dir], {
      cwd: ROOT,
      encoding: 'utf8',
    });
    expect({ status: run.status, stderr: run.stderr }).toEqual({
      status: 2,
      stderr: 'drift: a.json is not a recording: match is missing or not an object\n',
    });
  });

  it('a directory or file it cannot read is a 400 saying so', async () => {
    t = await buildTestApp();
    const dir = mkdtempSync(join(tmpdir(), 'unreadable-'));
    symlinkSync('loop.json', join(dir, 'loop.json')); // a link to itself: ELOOP, even for root
    expect(await refused(dir)).toBe('recordings: loop.json cannot be read (ELOOP)');

    const locked = mkdtempSync(join(tmpdir(), 'locked-')); // 0700: only its owner reads it
    if (process.getuid?.() !== 0) {
      chmodSync(locked, 0);
      try {
        expect(await refused(locked)).toBe(`recordings: ${locked} cannot be read (EACCES)`);
      } finally {
        chmodSync(locked, 0o700);
      }
      return;
    }
    // root reads every directory (as /root is, to it): ask as nobody, from a process of its own
    const script = `
      import { buildApp } from './src/app.js';
      import { resolveConfig } from './src/config.js';
      const app = await buildApp(resolveConfig({ logLevel: 'silent' }));
      const res = await app.inject({
        method: 'POST', url: '/_emulator/drift', payload: { recordings: process.argv[1] },
      });
      process.stdout.write(JSON.stringify({ status: res.statusCode, body: res.json() }));
      await app.close();`;
    // (a copy of this node: the one npx fetched for another major lives under /root, which
    // nobody cannot enter)
    const node = join(mkdtempSync(join(tmpdir(), 'node-')), 'node');
    copyFileSync(process.execPath, node);
    chmodSync(dirname(node), 0o755);
    chmodSync(node, 0o755);
    const child = spawnSync(
      node,
      ['--import', 'tsx', '--input-type=module', '-e', script, locked],
      {
        cwd: ROOT,
        uid: 65534,
        gid: 65534,
        encoding: 'utf8',
        env: { ...process.env, HOME: tmpdir() },
      },
    );
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual({
      status: 400,
      body: {
        error: {
          type: 'invalid_request_error',
          message: `recordings: ${locked} cannot be read (EACCES)`,
        },
      },
    });
  }, 60_000);

  it('a good recording next to nothing else still runs (and a non-JSON answer is drift, not a 500)', async () => {
    t = await buildTestApp();
    const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    writeFileSync(join(dir, 'ok.json'), JSON.stringify(CHAT_RECORDING));
    const streamed = {
      ...CHAT_RECORDING,
      match: { ...CHAT_RECORDING.match, body_hash: 'stream' },
      request: { body: { ...CHAT_RECORDING.request.body, stream: true } },
    };
    writeFileSync(join(dir, 'streamed.json'), JSON.stringify(streamed));
    const res = await drift(dir);
    expect(res.statusCode, res.body).toBe(200);
    const report = res.json() as {
      recordings: number;
      differences: Array<Record<string, unknown>>;
    };
    expect(report.recordings).toBe(2);
    expect(report.differences).toContainEqual(
      expect.objectContaining({ recording: 'streamed.json', at: 'body', kind: 'type' }),
    );
  });
});

describe('Recordings', () => {
  it('throws RecordingsError, naming the file, for a .json that is no recording', () => {
    const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    writeFileSync(
      join(dir, 'x.json'),
      JSON.stringify({ ...CHAT_RECORDING, match: { ...CHAT_RECORDING.match, group: 'images' } }),
    );
    expect(() => new Recordings(dir)).toThrow(
      new RecordingsError(
        'x.json is not a recording: match.group must be one of video, messages, chat',
      ),
    );
  });

  it.each([
    ['not a list', 'compact-2026-09-04'],
    ['a list holding a number', ['a', 5]],
    ['more than 64 betas', Array.from({ length: 65 }, (_, i) => `beta-${i}`)],
    ['a beta over 128 characters', ['b'.repeat(129)]],
  ])('refuses request.betas that is %s', (_name, betas) => {
    const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    writeFileSync(
      join(dir, 'x.json'),
      JSON.stringify({ ...CHAT_RECORDING, request: { ...CHAT_RECORDING.request, betas } }),
    );
    expect(() => new Recordings(dir)).toThrow(
      new RecordingsError(
        'x.json is not a recording: request.betas must be at most 64 strings of at most 128 characters',
      ),
    );
  });
});

describe('Recordings refuse at start what replay could not send', () => {
  const problemOf = (response: Record<string, unknown>) => {
    const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    const recording = { ...CHAT_RECORDING, responses: [response] };
    writeFileSync(join(dir, 'x.json'), JSON.stringify(recording));
    try {
      new Recordings(dir);
      return undefined;
    } catch (err) {
      return (err as Error).message.replace('x.json is not a recording: ', '');
    }
  };
  const ok = { status: 200, headers: { 'content-type': 'text/event-stream' } };
  const event = { at_ms: 5, event: 'ping', data: '{}' };

  it.each([
    [{ ...ok, status: 700 }, 'responses[0].status must be an integer from 200 to 599'],
    [{ ...ok, status: 99 }, 'responses[0].status must be an integer from 200 to 599'],
    [{ status: 200 }, 'responses[0].headers must be an object'],
    [
      { ...ok, headers: { 'x-a': 'b\nset-cookie: c' } },
      'responses[0].headers.x-a must be a string of the bytes a header may carry',
    ],
    [
      { ...ok, headers: { 'bad name': 'x' } },
      'responses[0].headers has a name that is no HTTP header name',
    ],
    [
      { ...ok, headers: { 'x-c': 'a\u0001b' } },
      'responses[0].headers.x-c must be a string of the bytes a header may carry',
    ],
    [
      { ...ok, headers: { 'x-u': 'caf\u2192' } },
      'responses[0].headers.x-u must be a string of the bytes a header may carry',
    ],
    [
      { ...ok, headers: { 'x-n': 5 } },
      'responses[0].headers.x-n must be a string of the bytes a header may carry',
    ],
    [
      { ...ok, stream: [{ ...event, at_ms: 1e12 }] },
      'responses[0].stream[0].at_ms must be a number from 0 to 3600000',
    ],
    [
      { ...ok, stream: [{ ...event, at_ms: -1 }] },
      'responses[0].stream[0].at_ms must be a number from 0 to 3600000',
    ],
    [
      { ...ok, stream: [{ data: '{}' }] },
      'responses[0].stream[0].at_ms must be a number from 0 to 3600000',
    ],
    [
      { ...ok, stream: [{ ...event, event: 'a\ndata: x' }] },
      'responses[0].stream[0].event must be a string without line breaks',
    ],
    [{ ...ok, stream: [{ ...event, raw: 5 }] }, 'responses[0].stream[0].raw must be a string'],
    [{ ...ok, body_text: 5 }, 'responses[0].body_text must be a string'],
    [{ ...ok, stream: [event] }, undefined],
  ])('%j: %s', (response, problem) => {
    expect(problemOf(response)).toBe(problem);
  });

  it('keeps a recording file within the bound a start-up reads: a repeated answer past it is not kept', () => {
    const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    const recordings = new Recordings(dir, 4000);
    const answer = { status: 200, headers: {}, body: { text: 'x'.repeat(1000) } };
    const kept: boolean[] = [];
    for (let i = 0; i < 5; i++) {
      kept.push(recordings.add(CHAT_RECORDING.match as never, {}, 'https://gw.example', answer));
    }
    expect(kept).toEqual([true, true, true, false, false]);
    expect(new Recordings(dir, 4000).all().map((r) => r.recording.responses.length)).toEqual([3]);
  });

  it('writes each file as JSON.stringify(recording, null, 2), a file read at start-up included, and counts its UTF-8 bytes exactly against the bound', () => {
    const dir = mkdtempSync(join(tmpdir(), 'recordings-'));
    const answer = (i: number) => ({
      status: 200,
      headers: { 'content-type': 'application/json' },
      body: { text: `é😀\n"${i}`, nested: [{ a: [1, {}] }, []] },
    });
    const request = { query: 'a=1', body: { responses: [], model: 'm' } };
    const first = new Recordings(dir);
    expect(first.add(CHAT_RECORDING.match as never, request, 'https://gw.example', answer(0))).toBe(
      true,
    );
    const [file] = first.all();
    const path = join(dir, file?.file as string);
    const exact = (responses: number) =>
      `${JSON.stringify(
        {
          match: CHAT_RECORDING.match,
          request,
          responses: Array.from({ length: responses }, (_, i) => answer(i)),
          upstream: 'https://gw.example',
        },
        null,
        2,
      )}\n`;
    expect(readFileSync(path, 'utf8')).toBe(exact(1));
    // read back at start-up, then added to: its pieces are made from what was read
    const bound = Buffer.byteLength(exact(3));
    const again = new Recordings(dir, bound);
    const kept = [1, 2, 3].map((i) =>
      again.add(CHAT_RECORDING.match as never, request, 'https://gw.example', answer(i)),
    );
    expect(kept).toEqual([true, true, false]);
    expect(readFileSync(path, 'utf8')).toBe(exact(3));
    expect(statSync(path).size).toBe(bound);
  });
});

describe('an unexpected control-surface failure', () => {
  it('is a 500 in the control shape, logged with the request id', async () => {
    const logs: string[] = [];
    const app = Fastify({
      logger: {
        level: 'warn',
        stream: new Writable({
          write(chunk, _enc, cb) {
            logs.push(String(chunk));
            cb();
          },
        }),
      },
      genReqId: () => 'req_failing',
      // Fastify's own (strict) Ajv: the schemas' refusal wording is a keyword it must know.
      ajv: { customOptions: { keywords: [REFUSAL] } },
    });
    const options = {
      adminToken: undefined,
      knownHosts: [],
      text: { replies: {} },
      recordingsDir: ROOT,
      drift: async () => {
        throw new TypeError('boom');
      },
    } as unknown as ControlOptions;
    await app.register(controlRoutes(options), { prefix: '/_emulator' });
    try {
      const res = await app.inject({ method: 'POST', url: '/_emulator/drift' });
      expect(res.statusCode).toBe(500);
      expect(res.json()).toEqual({
        error: {
          type: 'api_error',
          message: 'The server had an error while processing your request.',
        },
      });
      const lines = logs.map((line) => JSON.parse(line) as Record<string, unknown>);
      expect(lines).toContainEqual(
        expect.objectContaining({
          level: 50,
          msg: 'request failed',
          reqId: 'req_failing',
          err: expect.objectContaining({ type: 'TypeError', message: 'boom' }),
        }),
      );
    } finally {
      await app.close();
    }
  });
});
