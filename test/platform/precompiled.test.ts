import { existsSync, mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { InjectOptions } from 'fastify';
import { afterAll, describe, expect, it } from 'vitest';
import { ChatCompletionRequestSchema } from '../../src/chat/schemas.js';
import { precompileInto } from '../../src/platform/precompile.js';
import { compileStats, usePrecompiled, validatorKey } from '../../src/platform/validation.js';
import { buildTestApp } from '../helpers/app.js';

const CHAT = { authorization: 'Bearer k' };
const MESSAGES = { 'x-api-key': 'k', 'msgapi-version': '2023-06-01' };
const TOOL = {
  name: 'get_weather',
  description: 'Weather',
  input_schema: {
    type: 'object',
    properties: { city: { type: 'string' } },
    required: ['city'],
  },
};

/** Requests over every part a validator or serializer reads: bodies, query strings, params. */
const REQUESTS: InjectOptions[] = [
  {
    method: 'POST',
    url: '/v1/chat/completions',
    headers: CHAT,
    payload: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
  },
  {
    method: 'POST',
    url: '/v1/chat/completions',
    headers: CHAT,
    payload: { model: 'm', messages: 'hi' },
  },
  {
    method: 'POST',
    url: '/v1/chat/completions',
    headers: CHAT,
    payload: { model: 'm', n: '2', messages: [{ role: 'user', content: 'hi' }] },
  },
  {
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers: MESSAGES,
    payload: {
      model: 'c',
      max_tokens: 100,
      tools: [TOOL],
      tool_choice: { type: 'tool', name: 'get_weather' },
      messages: [{ role: 'user', content: 'weather in Paris?' }],
    },
  },
  {
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers: MESSAGES,
    payload: { model: 'c', max_tokens: 'x', messages: [] },
  },
  {
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers: MESSAGES,
    payload: {
      model: 'c',
      max_tokens: 10,
      messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'url' } }] }],
    },
  },
  {
    method: 'POST',
    url: '/videogen/v1/videos/text2video',
    headers: CHAT,
    payload: { model_name: 'vid-v1-6', prompt: 'a cat', duration: '5' },
  },
  {
    method: 'POST',
    url: '/videogen/v1/videos/text2video',
    headers: CHAT,
    payload: { model_name: 'vid-v1-6', prompt: 'a cat', duration: 5 },
  },
  { method: 'GET', url: '/videogen/v1/videos/text2video?pageNum=1&pageSize=2', headers: CHAT },
  { method: 'GET', url: '/videogen/v1/videos/text2video?pageNum=x', headers: CHAT },
  { method: 'GET', url: '/videogen/v1/videos/text2video/1000001', headers: CHAT },
  { method: 'GET', url: '/_emulator/journal?status=200&group=chat' },
  { method: 'POST', url: '/_emulator/faults', payload: { match: { group: 'chat' }, times: -1 } },
];

async function answers() {
  const t = await buildTestApp();
  try {
    const out = [];
    for (const request of REQUESTS) {
      const res = await t.inject(request);
      // The journal's durations are wall time: the rest must be the same bytes.
      out.push({
        status: res.statusCode,
        body: res.body.replace(/"duration_ms":[\d.]+/g, '"duration_ms":0'),
      });
    }
    return out;
  } finally {
    await t.app.close();
  }
}

afterAll(() => usePrecompiled(null));

describe('precompiled validators and serializers', () => {
  it('answer byte for byte as compiled ones do, and nothing is compiled at run time', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'precompiled-'));
    const written = await precompileInto(dir, async () => (await buildTestApp()).app);
    expect(written.validators).toBe(readdirSync(join(dir, 'validators')).length);
    expect(written.serializers).toBe(readdirSync(join(dir, 'serializers')).length);
    expect(written.validators).toBeGreaterThan(10);
    expect(written.serializers).toBeGreaterThan(10);

    usePrecompiled(null);
    const compiled = await answers();
    expect(compileStats.validators.precompiled + compileStats.serializers.precompiled).toBe(0);
    expect(compileStats.validators.compiled).toBeGreaterThan(5);

    usePrecompiled(dir);
    const loaded = await answers();
    expect(compileStats.validators.compiled).toBe(0);
    expect(compileStats.serializers.compiled).toBe(0);
    expect(compileStats.validators.precompiled).toBeGreaterThan(5);
    expect(compileStats.serializers.precompiled).toBeGreaterThan(5);

    expect(loaded).toEqual(compiled);
    // Both good answers and refusals were compared.
    expect(compiled.map((a) => a.status)).toEqual([
      200, 400, 400, 200, 400, 400, 200, 400, 200, 400, 200, 200, 400,
    ]);
  }, 60_000);

  it('compiles a schema that has no file (another configuration), as before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'precompiled-none-'));
    usePrecompiled(dir);
    const first = await answers();
    expect(compileStats.validators.precompiled).toBe(0);
    expect(compileStats.validators.compiled).toBeGreaterThan(5);
    expect(first[0]?.status).toBe(200);
  }, 60_000);

  it('compiles instead when a file does not load', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'precompiled-bad-'));
    mkdirSync(join(dir, 'validators'));
    writeFileSync(
      join(dir, 'validators', `${validatorKey(ChatCompletionRequestSchema, false)}.cjs`),
      'module.exports = require("no-such-module");',
    );
    usePrecompiled(dir);
    const [good, bad] = await answers();
    expect(good?.status).toBe(200);
    expect(bad?.status).toBe(400);
    expect(compileStats.validators.precompiled).toBe(0);
  }, 60_000);
});

describe('the build', () => {
  it('precompiles what the built server asks for with the default configuration', async () => {
    const dist = (path: string) => pathToFileURL(join(process.cwd(), 'dist', path)).href;
    expect(existsSync(join('dist', 'precompiled', 'validators')), 'run npm run build').toBe(true);
    const { buildApp } = await import(dist('app.js'));
    const { resolveConfig } = await import(dist('config.js'));
    const { compileStats: stats } = await import(dist('platform/validation.js'));
    const app = await buildApp(resolveConfig({ logLevel: 'error' }));
    try {
      for (const request of REQUESTS) await app.inject(request);
    } finally {
      await app.close();
    }
    expect(stats.validators.compiled).toBe(0);
    expect(stats.serializers.compiled).toBe(0);
    expect(stats.validators.precompiled).toBeGreaterThan(5);
    expect(stats.serializers.precompiled).toBeGreaterThan(5);
  }, 60_000);
});
