/**
 * `npm run check:openapi-conformance`: the built emulator (dist/) against its own OpenAPI
 * document, checked by a third party. It starts the emulator on port 0, Stoplight Prism's
 * validating proxy (`prism proxy`) in front of it with the document the emulator serves, and
 * sends a traffic set that covers every operation, through the proxy, with fetch and the
 * official SDKs. It fails when:
 * - Prism reports a response violation (its `sl-violations` header);
 * - a request the emulator accepts is one Prism finds against the document, or one the
 *   emulator refuses for a rule a schema keyword can state is one Prism finds nothing wrong
 *   with (the rule is missing from the document); a refusal for a rule no keyword can state
 *   (across fields, or state) must instead be named in the operation's description;
 * - a stream frame does not match the operation's `text/event-stream` schema (Prism checks a
 *   stream as one JSON value, which it is not: the frames are checked here, with Ajv, against
 *   the schema converted as Prism converts it);
 * - an operation of the document was not sent, or an answer's status is not the one expected.
 * Prints one line per request and a summary.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { Ajv, type AnySchema, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import OpenAI from 'openai';
import { componentId, toJsonSchema } from './openapi-json-schema.js';

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const root = fileURLToPath(new URL('..', import.meta.url));

/** What a case expects of the emulator and of Prism. */
type Expect =
  /** 2xx, and Prism finds nothing wrong with the request. */
  | 'ok'
  /** Refused (4xx) for a rule the document states in a schema: Prism must find it too. */
  | 'refused'
  /** Refused (4xx) for a rule the operation's description names (`rule` is in it). */
  | 'described'
  /** An error the client asked for (a fault): the request itself is fine. */
  | 'fault';

interface Case {
  name: string;
  method: string;
  /** The path as sent, with its query. */
  url: string;
  headers?: Record<string, string>;
  body?: unknown;
  expect: Expect;
  status: number;
  /** For `described`: words of the operation's description that name the rule. */
  rule?: string;
}

interface Violation {
  location: string[];
  severity: string;
  code: string | number;
  message: string;
}

const VIDEO = { authorization: 'Bearer conformance-key' };
const MESSAGES = { 'x-api-key': 'conformance-key', 'msgapi-version': '2023-06-01' };
const CHAT = { authorization: 'Bearer conformance-key' };
const AZURE = { 'api-key': 'conformance-key' };
const MODEL = 'claude-sonnet-4-6';
const hello = [{ role: 'user', content: 'Hello' }];
const message = (extra: Json = {}) => ({ model: MODEL, max_tokens: 64, messages: hello, ...extra });
const chat = (extra: Json = {}) => ({ model: 'gpt-4o', messages: hello, ...extra });
const IMAGE = 'https://example.com/cat.png';
const VIDEO_URL = 'https://example.com/dance.mp4';

const VIDEO_BODIES: Record<string, Json> = {
  text2video: { model_name: 'vid-v1-6', prompt: 'a cat', duration: '5' },
  image2video: { model_name: 'vid-v1-6', image: IMAGE, prompt: 'wave', duration: '5' },
  'motion-control': { model_name: 'vid-v2-6', image_url: IMAGE, video_url: VIDEO_URL },
  'omni-video': { prompt: 'a cat', aspect_ratio: '16:9' },
  'multi-image2video': { image_list: [{ image: IMAGE }], prompt: 'a cat' },
};
/** A model of another kind, per kind. */
const FOREIGN_MODEL: Record<string, string> = {
  text2video: 'vid-video-o1',
  image2video: 'vid-v2-6',
  'motion-control': 'vid-v1-6',
  'omni-video': 'vid-v3',
  'multi-image2video': 'vid-v3',
};

const webSearch = (extra: Json = {}) => ({
  type: 'web_search_20250305',
  name: 'web_search',
  max_uses: 1,
  ...extra,
});

/** The cases that need nothing from an earlier answer. */
function staticCases(recordings: string): Case[] {
  const cases: Case[] = [];
  const add = (c: Case) => cases.push(c);
  // Control.
  add({ name: 'health', method: 'GET', url: '/_emulator/health', expect: 'ok', status: 200 });
  add({ name: 'ready', method: 'GET', url: '/_emulator/ready', expect: 'ok', status: 200 });
  add({ name: 'clock', method: 'GET', url: '/_emulator/clock', expect: 'ok', status: 200 });
  add({ name: 'fixtures', method: 'GET', url: '/_emulator/fixtures', expect: 'ok', status: 200 });
  add({ name: 'metrics', method: 'GET', url: '/_emulator/metrics', expect: 'ok', status: 200 });
  add({
    name: 'stats',
    method: 'GET',
    url: '/_emulator/stats?window_s=60',
    expect: 'ok',
    status: 200,
  });
  add({
    name: 'stats bad window',
    method: 'GET',
    url: '/_emulator/stats?window_s=-1',
    expect: 'refused',
    status: 400,
  });
  add({ name: 'cache', method: 'GET', url: '/_emulator/cache?limit=5', expect: 'ok', status: 200 });
  add({ name: 'callbacks', method: 'GET', url: '/_emulator/callbacks', expect: 'ok', status: 200 });
  add({
    name: 'advance',
    method: 'POST',
    url: '/_emulator/clock/advance',
    body: { ms: 1000 },
    expect: 'ok',
    status: 200,
  });
  add({
    name: 'advance negative',
    method: 'POST',
    url: '/_emulator/clock/advance',
    body: { ms: -1 },
    expect: 'refused',
    status: 400,
  });
  add({
    name: 'drift',
    method: 'POST',
    url: '/_emulator/drift',
    body: { recordings },
    expect: 'ok',
    status: 200,
  });
  add({
    name: 'drift extra field',
    method: 'POST',
    url: '/_emulator/drift',
    body: { recordings, more: 1 },
    expect: 'refused',
    status: 400,
  });
  add({
    name: 'drift no directory',
    method: 'POST',
    url: '/_emulator/drift',
    body: { recordings: join(recordings, 'none') },
    expect: 'described',
    status: 400,
    rule: 'does not exist',
  });
  add({
    name: 'reload fixtures',
    method: 'POST',
    url: '/_emulator/fixtures/reload',
    expect: 'ok',
    status: 200,
  });
  // Video: each kind created, listed, refused.
  for (const [kind, body] of Object.entries(VIDEO_BODIES)) {
    const url = `/videogen/v1/videos/${kind}`;
    add({
      name: `${kind} create`,
      method: 'POST',
      url,
      headers: VIDEO,
      body,
      expect: 'ok',
      status: 200,
    });
    add({
      name: `${kind} list`,
      method: 'GET',
      url: `${url}?pageNum=1&pageSize=10`,
      headers: VIDEO,
      expect: 'ok',
      status: 200,
    });
    add({
      name: `${kind} list page 0`,
      method: 'GET',
      url: `${url}?pageNum=0`,
      headers: VIDEO,
      expect: 'refused',
      status: 400,
    });
    add({
      name: `${kind} foreign model`,
      method: 'POST',
      url,
      headers: VIDEO,
      body: { ...body, model_name: FOREIGN_MODEL[kind] },
      expect: 'refused',
      status: 400,
    });
    add({ name: `${kind} no key`, method: 'POST', url, body, expect: 'refused', status: 401 });
    add({
      name: `${kind} unknown task`,
      method: 'GET',
      url: `${url}/424242`,
      headers: VIDEO,
      expect: 'described',
      status: 404,
      rule: '',
    });
  }
  add({
    name: 'text2video duration as number',
    method: 'POST',
    url: '/videogen/v1/videos/text2video',
    headers: VIDEO,
    body: { ...VIDEO_BODIES.text2video, duration: 5 },
    expect: 'refused',
    status: 400,
  });
  add({
    name: 'text2video fault 500',
    method: 'POST',
    url: '/videogen/v1/videos/text2video',
    headers: { ...VIDEO, 'x-emulator-fault': '500' },
    body: VIDEO_BODIES.text2video,
    expect: 'fault',
    status: 500,
  });
  // Messages.
  const messages = '/messages-api/v1/messages';
  const count = '/messages-api/v1/messages/count_tokens';
  add({
    name: 'messages',
    method: 'POST',
    url: messages,
    headers: MESSAGES,
    body: message(),
    expect: 'ok',
    status: 200,
  });
  add({
    name: 'messages thinking',
    method: 'POST',
    url: messages,
    headers: MESSAGES,
    body: message({ max_tokens: 2048, thinking: { type: 'enabled', budget_tokens: 1024 } }),
    expect: 'ok',
    status: 200,
  });
  add({
    name: 'messages web search',
    method: 'POST',
    url: messages,
    headers: MESSAGES,
    body: message({ tools: [webSearch()] }),
    expect: 'ok',
    status: 200,
  });
  add({
    name: 'count_tokens',
    method: 'POST',
    url: count,
    headers: MESSAGES,
    body: { model: MODEL, messages: hello },
    expect: 'ok',
    status: 200,
  });
  add({
    name: 'messages fault 529',
    method: 'POST',
    url: messages,
    headers: { ...MESSAGES, 'x-emulator-fault': '529' },
    body: message(),
    expect: 'fault',
    status: 529,
  });
  for (const [url, body] of [
    [messages, message()],
    [count, { model: MODEL, messages: hello }],
  ] as const) {
    const on = url === messages ? 'messages' : 'count_tokens';
    const refuse = (name: string, extra: Json, status = 400) =>
      add({
        name: `${on} ${name}`,
        method: 'POST',
        url,
        headers: MESSAGES,
        body: { ...body, ...extra },
        expect: 'refused',
        status,
      });
    refuse('no messages', { messages: [] });
    refuse('budget 1023', {
      ...(url === messages ? { max_tokens: 4096 } : {}),
      thinking: { type: 'enabled', budget_tokens: 1023 },
    });
    refuse('tool name', { tools: [{ name: 'get weather!', input_schema: { type: 'object' } }] });
    refuse('web search name', { tools: [webSearch({ name: 'search' })] });
    refuse('web search location', { tools: [webSearch({ user_location: { type: 'exact' } })] });
    refuse('web search inclusion', {
      tools: [webSearch({ type: 'web_search_20260209', response_inclusion: 'some' })],
    });
    refuse('web fetch name', { tools: [{ type: 'web_fetch_20250910', name: 'fetch' }] });
    refuse('tool search name', {
      tools: [{ type: 'tool_search_tool_regex_20251119', name: 'search' }],
    });
    refuse('bash name', { tools: [{ type: 'bash_20250124', name: 'shell' }] });
    refuse('text editor name', { tools: [{ type: 'text_editor_20250728', name: 'edit' }] });
    refuse('server tool caller', {
      tools: [webSearch({ allowed_callers: ['direct', 'code_execution_20240101'] })],
    });
    refuse('unknown role', { messages: [{ role: 'robot', content: 'hi' }] });
    add({
      name: `${on} no key`,
      method: 'POST',
      url,
      headers: { 'msgapi-version': '2023-06-01' },
      body,
      expect: 'refused',
      status: 401,
    });
    const tool = { name: 'get_weather', input_schema: { type: 'object' } };
    add({
      name: `${on} tool names twice`,
      method: 'POST',
      url,
      headers: MESSAGES,
      body: { ...body, tools: [tool, tool] },
      expect: 'described',
      status: 400,
      rule: 'names unique',
    });
  }
  add({
    name: 'messages budget over max_tokens',
    method: 'POST',
    url: messages,
    headers: MESSAGES,
    body: message({ max_tokens: 1500, thinking: { type: 'enabled', budget_tokens: 2000 } }),
    expect: 'described',
    status: 400,
    rule: 'max_tokens',
  });
  // Chat, both prefixes, and Azure's deployment path.
  for (const prefix of ['/v1', '/openai/v1']) {
    const headers = prefix === '/v1' ? CHAT : AZURE;
    add({
      name: `${prefix} chat`,
      method: 'POST',
      url: `${prefix}/chat/completions`,
      headers,
      body: chat(),
      expect: 'ok',
      status: 200,
    });
    /** A chat request the document refuses (400), by what it adds to a plain one. */
    const refuseChat = (what: string, extra: Json) =>
      add({
        name: `${prefix} chat ${what}`,
        method: 'POST',
        url: `${prefix}/chat/completions`,
        headers,
        body: chat(extra),
        expect: 'refused',
        status: 400,
      });
    const fn = (name: string) => ({ type: 'function', function: { name } });
    refuseChat('no messages', { messages: [] });
    refuseChat('tool name', { tools: [fn('get weather!')] });
    refuseChat('tool name too long', { tools: [fn('x'.repeat(65))] });
    refuseChat('129 tools', { tools: Array.from({ length: 129 }, (_, i) => fn(`tool_${i}`)) });
    refuseChat('bad temperature', { temperature: 3 });
    add({
      name: `${prefix} models`,
      method: 'GET',
      url: `${prefix}/models`,
      headers,
      expect: 'ok',
      status: 200,
    });
    add({
      name: `${prefix} model`,
      method: 'GET',
      url: `${prefix}/models/gpt-4o`,
      headers,
      expect: 'ok',
      status: 200,
    });
    add({
      name: `${prefix} no model`,
      method: 'GET',
      url: `${prefix}/models/no-such-model`,
      headers,
      expect: 'described',
      status: 404,
      rule: '',
    });
  }
  const azure = '/openai/deployments/my-gpt/chat/completions';
  const { model: _, ...azureBody } = chat();
  add({
    name: 'azure chat',
    method: 'POST',
    url: `${azure}?api-version=2024-10-21`,
    headers: AZURE,
    body: azureBody,
    expect: 'ok',
    status: 200,
  });
  add({
    name: 'azure no api-version',
    method: 'POST',
    url: azure,
    headers: AZURE,
    body: azureBody,
    expect: 'refused',
    status: 404,
  });
  add({
    name: 'azure api-version latest',
    method: 'POST',
    url: `${azure}?api-version=latest`,
    headers: AZURE,
    body: azureBody,
    expect: 'refused',
    status: 400,
  });
  add({
    name: 'azure api-version no date',
    method: 'POST',
    url: `${azure}?api-version=2024-02-30`,
    headers: AZURE,
    body: azureBody,
    expect: 'described',
    status: 400,
    rule: 'date',
  });
  add({
    name: 'chat fault 429',
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { ...CHAT, 'x-emulator-fault': '429' },
    body: chat(),
    expect: 'fault',
    status: 429,
  });
  return cases;
}

/** The Ajv that checks stream frames, with the document's components. */
function frameChecker(document: Json): (schema: unknown) => ValidateFunction {
  const ajv = new Ajv({ strict: false, allowUnionTypes: true, discriminator: true });
  addFormats.default(ajv);
  const components = ((document.components as Json).schemas ?? {}) as Json;
  for (const [name, schema] of Object.entries(components)) {
    ajv.addSchema(toJsonSchema(schema) as AnySchema, componentId(name));
  }
  const compiled = new Map<string, ValidateFunction>();
  return (schema) => {
    const key = JSON.stringify(schema);
    let validate = compiled.get(key);
    if (!validate) {
      validate = ajv.compile(toJsonSchema(schema) as AnySchema);
      compiled.set(key, validate);
    }
    return validate;
  };
}

/** An operation of the document: its template as a pattern, and what is needed of it. */
interface Operation {
  key: string;
  pattern: RegExp;
  method: string;
  description: string;
  streamSchema: unknown;
}

function operationsOf(document: Json): Operation[] {
  const operations: Operation[] = [];
  for (const [path, item] of Object.entries(document.paths as Json)) {
    const pattern = new RegExp(`^${path.replace(/\{[^}]+\}/g, '[^/]+')}$`);
    for (const [method, op] of Object.entries(item as Json)) {
      const operation = op as Json;
      const ok = (operation.responses as Json)['200'] as Json | undefined;
      const stream = isObject(ok?.content) ? (ok.content['text/event-stream'] as Json) : undefined;
      operations.push({
        key: `${method.toUpperCase()} ${path}`,
        pattern,
        method: method.toUpperCase(),
        description: `${operation.summary ?? ''}\n${operation.description ?? ''}`,
        streamSchema: stream?.schema,
      });
    }
  }
  return operations;
}

/** The frames of an event stream: each `data:` line's JSON. */
function framesOf(text: string): unknown[] {
  const frames: unknown[] = [];
  for (const block of text.split(/\n\n/)) {
    const data = block
      .split('\n')
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(5).trimStart())
      .join('\n');
    if (data === '' || data === '[DONE]') continue;
    frames.push(JSON.parse(data));
  }
  return frames;
}

async function startPrism(
  documentFile: string,
  upstream: string,
): Promise<{ base: string; prism: ChildProcess }> {
  const bin = join(root, 'node_modules/.bin/prism');
  const prism = spawn(
    bin,
    ['proxy', documentFile, upstream, '--host', '127.0.0.1', '--port', '0'],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let output = '';
  const base = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`prism did not start:\n${output}`)), 60_000);
    const read = (chunk: Buffer) => {
      output += chunk.toString();
      const listening = /Prism is listening on (http:\/\/\S+)/.exec(output);
      if (listening?.[1]) {
        clearTimeout(timer);
        resolve(listening[1]);
      }
    };
    prism.stdout.on('data', read);
    prism.stderr.on('data', read);
    prism.once('exit', (code) => reject(new Error(`prism exited (${code}):\n${output}`)));
  });
  // Its log (one line per request and violation) is not needed once it listens.
  prism.stdout.removeAllListeners('data');
  prism.stderr.removeAllListeners('data');
  prism.stdout.resume();
  prism.stderr.resume();
  return { base, prism };
}

/**
 * Prism's `sl-violations` header: a JSON list, or, past its header's size, "Too many
 * violations!" and the list cut off: then the complete entries before the cut (enough to
 * tell a request violation from a response one).
 */
function violationsOf(header: string | null): Violation[] {
  if (header === null) return [];
  if (!header.startsWith('Too many violations!')) return JSON.parse(header) as Violation[];
  const entry =
    /\{"location":\[[^\]]*\],"severity":"[^"]*","code":("[^"]*"|\d+),"message":"(?:[^"\\]|\\.)*"\}/g;
  return [...header.matchAll(entry)].map(([json]) => JSON.parse(json) as Violation);
}

/** The schema of an operation's 200 JSON answer in the document (`GET /path`), if any. */
function okSchemaOf(document: Json, key: string): unknown {
  const [method = '', path = ''] = key.split(' ');
  const operation = ((document.paths as Json)[path] as Json | undefined)?.[method.toLowerCase()];
  const ok = isObject(operation)
    ? ((operation.responses as Json)['200'] as Json | undefined)
    : undefined;
  return isObject(ok?.content)
    ? ((ok.content['application/json'] as Json | undefined)?.schema as unknown)
    : undefined;
}

export async function checkConformance(): Promise<{ failures: string[]; lines: string[] }> {
  const { startEmulator } = (await import(
    join(root, 'dist/index.js')
  )) as typeof import('../src/index.js');
  const emulator = await startEmulator({ logLevel: 'silent' });
  const dir = mkdtempSync(join(tmpdir(), 'openapi-conformance-'));
  const failures: string[] = [];
  const lines: string[] = [];
  let prism: ChildProcess | undefined;
  try {
    const document = (await (await fetch(`${emulator.url}/_emulator/openapi.json`)).json()) as Json;
    const documentFile = join(dir, 'openapi.json');
    writeFileSync(documentFile, JSON.stringify(document));
    const started = await startPrism(documentFile, emulator.url);
    prism = started.prism;
    const { base } = started;
    const operations = operationsOf(document);
    const covered = new Set<string>();
    const schemaOf = frameChecker(document);
    const operationOf = (method: string, url: string) => {
      const path = url.split('?')[0] ?? url;
      // A path of the document before a template that also matches it (journal/wait, {id}).
      const matching = operations.filter((op) => op.method === method && op.pattern.test(path));
      return matching.find((op) => !op.key.includes('{')) ?? matching[0];
    };

    /** Checks one answer as the case expects; returns its body. */
    const check = async (c: Case, response: Response): Promise<string> => {
      const text = await response.text();
      const op = operationOf(c.method, c.url);
      if (op) covered.add(op.key);
      else failures.push(`${c.name}: ${c.method} ${c.url} is no operation of the document`);
      const violations = violationsOf(response.headers.get('sl-violations'));
      const isStream = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
      const said = (v: Violation) => `${v.location.join('.')}: ${v.message}`;
      const requestViolations = violations.filter((v) => v.location[0] === 'request');
      // Prism checks a stream as one JSON value: its body violations are for the frames' check.
      const responseViolations = violations.filter(
        (v) => v.location[0] !== 'request' && !(isStream && v.location[1] === 'body'),
      );
      const problems: string[] = responseViolations.map((v) => `response violation ${said(v)}`);
      if (response.status !== c.status)
        problems.push(`status ${response.status}, not ${c.status}: ${text.slice(0, 300)}`);
      if (
        (c.expect === 'ok' || c.expect === 'fault' || c.expect === 'described') &&
        requestViolations.length > 0
      ) {
        problems.push(
          `the document refuses a request the emulator ${c.expect === 'ok' ? 'accepts' : 'refuses only for a described rule'}: ${requestViolations.map(said).join('; ')}`,
        );
      }
      if (c.expect === 'refused' && requestViolations.length === 0) {
        problems.push(`the emulator refuses a request the document allows: ${text.slice(0, 300)}`);
      }
      if (c.expect === 'described' && c.rule && op && !op.description.includes(c.rule)) {
        problems.push(
          `the description of ${op.key} does not name the rule (${JSON.stringify(c.rule)})`,
        );
      }
      let frames = 0;
      if (isStream && response.status === 200) {
        let validate: ValidateFunction | undefined;
        try {
          validate = op?.streamSchema === undefined ? undefined : schemaOf(op.streamSchema);
        } catch (error) {
          problems.push(`the stream's schema does not compile: ${(error as Error).message}`);
        }
        if (!op?.streamSchema) problems.push('a stream where the document declares none');
        else if (validate) {
          for (const frame of framesOf(text)) {
            frames++;
            if (!validate(frame)) {
              problems.push(
                `frame ${frames} ${JSON.stringify(frame).slice(0, 200)}: ${validate.errors?.map((e) => `${e.instancePath} ${e.message}`).join('; ')}`,
              );
            }
          }
          if (frames === 0) problems.push('a stream without a frame');
        }
      }
      lines.push(
        `${problems.length === 0 ? 'ok  ' : 'FAIL'} ${response.status} ${c.name}${frames ? ` (${frames} frames)` : ''}`,
      );
      for (const problem of problems) failures.push(`${c.name}: ${problem}`);
      return text;
    };

    const send = async (c: Case) => {
      const response = await fetch(`${base}${c.url}`, {
        method: c.method,
        headers: {
          ...(c.body === undefined ? {} : { 'content-type': 'application/json' }),
          ...c.headers,
        },
        ...(c.body === undefined ? {} : { body: JSON.stringify(c.body) }),
      });
      return check(c, response);
    };

    const recordings = join(dir, 'recordings');
    mkdirSync(recordings);
    for (const c of staticCases(recordings)) await send(c);

    // Streams, through the official SDKs (each answer checked as it came through the proxy).
    let pending: Case | undefined;
    const checkingFetch: typeof fetch = async (input, init) => {
      const response = await fetch(input, init);
      const c = pending;
      if (!c) return response;
      pending = undefined;
      const text = await check(c, response.clone());
      return new Response(text, { status: response.status, headers: response.headers });
    };
    const anthropic = new Anthropic({
      apiKey: 'conformance-key',
      baseURL: `${base}/messages-api`,
      defaultHeaders: { 'msgapi-version': '2023-06-01' },
      maxRetries: 0,
      fetch: checkingFetch,
    });
    pending = {
      name: 'messages stream (SDK)',
      method: 'POST',
      url: '/messages-api/v1/messages',
      expect: 'ok',
      status: 200,
    };
    const streamed = await anthropic.messages
      .stream({ model: MODEL, max_tokens: 64, messages: [{ role: 'user', content: 'Hello' }] })
      .finalMessage();
    if (streamed.content.length === 0) failures.push('messages stream (SDK): no content');
    pending = {
      name: 'messages stream with thinking (SDK)',
      method: 'POST',
      url: '/messages-api/v1/messages',
      expect: 'ok',
      status: 200,
    };
    await anthropic.messages
      .stream({
        model: MODEL,
        max_tokens: 2048,
        thinking: { type: 'enabled', budget_tokens: 1024 },
        messages: [{ role: 'user', content: 'Hello' }],
      })
      .finalMessage();
    const openai = new OpenAI({
      apiKey: 'conformance-key',
      baseURL: `${base}/v1`,
      maxRetries: 0,
      fetch: checkingFetch,
    });
    pending = {
      name: '/v1 chat stream (SDK)',
      method: 'POST',
      url: '/v1/chat/completions',
      expect: 'ok',
      status: 200,
    };
    const chunks = await openai.chat.completions.create({
      model: 'gpt-4o',
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: 'user', content: 'Hello' }],
    });
    for await (const _ of chunks) {
      // read to the end: the check ran on the whole answer
    }
    pending = {
      name: '/v1 models (SDK)',
      method: 'GET',
      url: '/v1/models',
      expect: 'ok',
      status: 200,
    };
    await openai.models.list();
    await send({
      name: 'azure chat stream',
      method: 'POST',
      url: '/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21',
      headers: AZURE,
      body: { messages: hello, stream: true },
      expect: 'ok',
      status: 200,
    });
    await send({
      name: 'messages stream fault',
      method: 'POST',
      url: '/messages-api/v1/messages',
      headers: { ...MESSAGES, 'x-emulator-fault': 'stream_error' },
      body: message({ stream: true }),
      expect: 'fault',
      status: 200,
    });

    // Cases that need something from an earlier answer: tasks, the journal, faults, stubs.
    const kinds = Object.keys(VIDEO_BODIES);
    const created: Array<{ kind: string; id: string }> = [];
    for (const kind of kinds) {
      const c: Case = {
        name: `${kind} create (for its query)`,
        method: 'POST',
        url: `/videogen/v1/videos/${kind}`,
        headers: VIDEO,
        body: VIDEO_BODIES[kind],
        expect: 'ok',
        status: 200,
      };
      const answer = JSON.parse(await send(c)) as { data?: { task_id: string } };
      if (answer.data) created.push({ kind, id: answer.data.task_id });
    }
    const first = created[0]?.id ?? 'none';
    await send({
      name: 'force task',
      method: 'POST',
      url: `/_emulator/tasks/${first}`,
      body: { status: 'succeed' },
      expect: 'ok',
      status: 200,
    });
    await send({
      name: 'force task bad status',
      method: 'POST',
      url: `/_emulator/tasks/${first}`,
      body: { status: 'done' },
      expect: 'refused',
      status: 400,
    });
    await send({
      name: 'advance 10 min',
      method: 'POST',
      url: '/_emulator/clock/advance',
      body: { ms: 600_000 },
      expect: 'ok',
      status: 200,
    });
    let media = '';
    for (const { kind, id } of created) {
      const text = await send({
        name: `${kind} query`,
        method: 'GET',
        url: `/videogen/v1/videos/${kind}/${id}`,
        headers: VIDEO,
        expect: 'ok',
        status: 200,
      });
      const record = JSON.parse(text) as {
        data: { task_result: { videos: Array<{ url: string }> } };
      };
      media ||= record.data.task_result.videos[0]?.url ?? '';
    }
    if (media === '') failures.push('no task succeeded: no media to fetch');
    else {
      const path = new URL(media).pathname;
      await send({ name: 'media', method: 'GET', url: path, expect: 'ok', status: 200 });
      await send({
        name: 'media range',
        method: 'GET',
        url: path,
        headers: { range: 'bytes=0-99' },
        expect: 'ok',
        status: 206,
      });
      await send({
        name: 'media unknown',
        method: 'GET',
        url: `${path.replace(/\/[^/]+$/, '')}/other.mp4`,
        expect: 'described',
        status: 404,
        rule: '',
      });
    }
    await send({
      name: 'tasks',
      method: 'GET',
      url: '/_emulator/tasks?limit=10',
      expect: 'ok',
      status: 200,
    });

    const journal = JSON.parse(
      await send({
        name: 'journal',
        method: 'GET',
        url: '/_emulator/journal?group=messages',
        expect: 'ok',
        status: 200,
      }),
    ) as { requests: Array<{ id: string }> };
    await send({
      name: 'journal bad group',
      method: 'GET',
      url: '/_emulator/journal?group=nope',
      expect: 'refused',
      status: 400,
    });
    await send({
      name: 'requests',
      method: 'GET',
      url: '/_emulator/requests?group=video',
      expect: 'ok',
      status: 200,
    });
    const entry = journal.requests[0]?.id ?? 'none';
    await send({
      name: 'journal entry',
      method: 'GET',
      url: `/_emulator/journal/${entry}`,
      expect: 'ok',
      status: 200,
    });
    await send({
      name: 'journal verify',
      method: 'POST',
      url: '/_emulator/journal/verify',
      body: { match: { group: 'messages' } },
      expect: 'ok',
      status: 200,
    });
    await send({
      name: 'journal verify none',
      method: 'POST',
      url: '/_emulator/journal/verify',
      body: { match: { group: 'messages', model: 'no-such-model' } },
      expect: 'described',
      status: 409,
      rule: '',
    });
    await send({
      name: 'journal wait',
      method: 'GET',
      url: '/_emulator/journal/wait?group=chat&timeout_ms=100',
      expect: 'ok',
      status: 200,
    });

    const fault = JSON.parse(
      await send({
        name: 'add fault',
        method: 'POST',
        url: '/_emulator/faults',
        body: { path: '/v1/chat/completions', status: 503, times: 2 },
        expect: 'ok',
        status: 200,
      }),
    ) as { id: string };
    await send({
      name: 'add fault bad status',
      method: 'POST',
      url: '/_emulator/faults',
      body: { status: 200 },
      expect: 'refused',
      status: 400,
    });
    await send({
      name: 'faults',
      method: 'GET',
      url: '/_emulator/faults',
      expect: 'ok',
      status: 200,
    });
    await send({
      name: 'chat under a fault rule',
      method: 'POST',
      url: '/v1/chat/completions',
      headers: CHAT,
      body: chat(),
      expect: 'fault',
      status: 503,
    });
    await send({
      name: 'delete fault',
      method: 'DELETE',
      url: `/_emulator/faults/${fault.id}`,
      expect: 'ok',
      status: 200,
    });
    await send({
      name: 'delete faults',
      method: 'DELETE',
      url: '/_emulator/faults',
      expect: 'ok',
      status: 200,
    });

    const stub = JSON.parse(
      await send({
        name: 'add stub',
        method: 'POST',
        url: '/_emulator/replies',
        body: { model: 'stub-model', reply: 'stubbed' },
        expect: 'ok',
        status: 200,
      }),
    ) as { id: string };
    await send({
      name: 'add stub bad field',
      method: 'POST',
      url: '/_emulator/replies',
      body: { model: 'stub-model', answer: 'x' },
      expect: 'refused',
      status: 400,
    });
    await send({
      name: 'replies',
      method: 'GET',
      url: '/_emulator/replies',
      expect: 'ok',
      status: 200,
    });
    await send({
      name: 'delete stub',
      method: 'DELETE',
      url: `/_emulator/replies/${stub.id}`,
      expect: 'ok',
      status: 200,
    });
    await send({
      name: 'delete stubs',
      method: 'DELETE',
      url: '/_emulator/replies',
      expect: 'ok',
      status: 200,
    });

    await send({
      name: 'delete requests',
      method: 'DELETE',
      url: '/_emulator/requests',
      expect: 'ok',
      status: 200,
    });
    await send({
      name: 'delete journal',
      method: 'DELETE',
      url: '/_emulator/journal',
      expect: 'ok',
      status: 200,
    });
    await send({
      name: 'reset',
      method: 'POST',
      url: '/_emulator/reset',
      expect: 'ok',
      status: 200,
    });
    await send({
      name: 'reset unknown part',
      method: 'POST',
      url: '/_emulator/reset?only=nothing',
      expect: 'refused',
      status: 400,
    });

    // The live streams never end, so Prism (which reads an answer whole) cannot pass them on:
    // their first frame is read from the emulator directly and checked against the document.
    const firstFrame = async (path: string, trigger: () => Promise<unknown>) => {
      const abort = new AbortController();
      const response = await fetch(`${emulator.url}${path}`, { signal: abort.signal });
      await trigger();
      const reader = response.body?.getReader();
      let text = '';
      for (let i = 0; i < 20 && reader && !/\n\n/.test(text.replace(/^:[^\n]*\n\n/, '')); i++) {
        const chunk = await reader.read();
        if (chunk.done) break;
        text += new TextDecoder().decode(chunk.value);
      }
      abort.abort();
      const streams = (response.headers.get('content-type') ?? '').startsWith('text/event-stream');
      return { status: response.status, streams, text: text.replace(/^:[^\n]*\n\n/, '') };
    };
    const live = [
      {
        key: 'GET /_emulator/journal/stream',
        path: '/_emulator/journal/stream',
        // A request that is journaled: its entry is the stream's first event.
        trigger: () => fetch(`${emulator.url}/v1/models`, { headers: CHAT }),
        event: 'entry',
        // (each entry as GET /_emulator/journal lists it)
        dataOf: 'GET /_emulator/journal',
      },
      {
        key: 'GET /_emulator/stats/stream',
        path: '/_emulator/stats/stream?window_s=60&step_s=5',
        trigger: async () => undefined,
        event: 'window',
        // (the window as GET /_emulator/stats answers it)
        dataOf: 'GET /_emulator/stats',
      },
    ];
    for (const stream of live) {
      if (!operations.some((op) => op.key === stream.key)) continue;
      const { status, streams, text } = await firstFrame(stream.path, stream.trigger);
      const data = framesOf(text)[0];
      const answerSchema = okSchemaOf(document, stream.dataOf);
      const validate = answerSchema === undefined ? undefined : schemaOf(answerSchema);
      // The frame's data is checked as the answer of the operation it mirrors says it is.
      const asAnswer = stream.event === 'entry' ? { requests: [data] } : data;
      const valid = validate === undefined ? false : validate(asAnswer) === true;
      const ok =
        status === 200 &&
        streams &&
        new RegExp(`^event: ${stream.event}\ndata: \\{`).test(text) &&
        isObject(data) &&
        valid;
      if (!ok) {
        const why = validate?.errors ? ` ${JSON.stringify(validate.errors.slice(0, 3))}` : '';
        failures.push(`${stream.key}: ${status} ${text.slice(0, 200)}${why}`);
      }
      lines.push(
        `${ok ? 'ok  ' : 'FAIL'} ${status} ${stream.key} (direct: a stream that never ends; its first \`${stream.event}\` checked as ${stream.dataOf} answers)`,
      );
      covered.add(stream.key);
    }

    for (const op of operations) {
      if (!covered.has(op.key)) failures.push(`${op.key}: no request sent`);
    }
    lines.push(`${operations.length} operations, ${covered.size} covered`);
  } finally {
    prism?.kill();
    await emulator.close();
    rmSync(dir, { recursive: true, force: true });
  }
  return { failures, lines };
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const started = performance.now();
  const { failures, lines } = await checkConformance();
  for (const line of lines) console.log(line);
  for (const failure of failures) console.error(`violation: ${failure}`);
  const seconds = ((performance.now() - started) / 1000).toFixed(1);
  console.log(
    `check:openapi-conformance: ${failures.length} violation(s), ${lines.length - 1} requests, ${seconds} s`,
  );
  process.exit(failures.length === 0 ? 0 : 1);
}
