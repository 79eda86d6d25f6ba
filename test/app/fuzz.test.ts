import fc from 'fast-check';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { buildTestApp, type TestApp } from '../helpers/app.js';

/**
 * Property: whatever JSON (or non-JSON) arrives, every route answers 2xx or a 4xx in its own
 * group's envelope, never a 5xx, and the app stays healthy.
 */

type Shape = (body: unknown) => boolean;
const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const chatShape: Shape = (b) =>
  isObject(b) &&
  isObject(b.error) &&
  typeof b.error.message === 'string' &&
  'type' in b.error &&
  'param' in b.error &&
  'code' in b.error;
const messagesShape: Shape = (b) =>
  isObject(b) &&
  b.type === 'error' &&
  isObject(b.error) &&
  typeof b.error.type === 'string' &&
  typeof b.error.message === 'string' &&
  typeof b.request_id === 'string';
const videoShape: Shape = (b) =>
  isObject(b) &&
  Number.isInteger(b.code) &&
  b.code !== 0 &&
  typeof b.message === 'string' &&
  typeof b.request_id === 'string' &&
  !('data' in b);
const controlShape: Shape = (b) =>
  isObject(b) && isObject(b.error) && typeof b.error.message === 'string';

interface FuzzRoute {
  method: 'POST' | 'GET' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  shape: Shape;
  /** A valid body that the mutations start from. */
  valid: Record<string, unknown>;
}

const ROUTES: FuzzRoute[] = [
  {
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { authorization: 'Bearer fuzz' },
    shape: chatShape,
    valid: {
      model: 'chat-model',
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 5,
      temperature: 1,
      stop: ['x'],
      n: 1,
    },
  },
  {
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers: { 'x-api-key': 'fuzz', 'msgapi-version': '2023-06-01' },
    shape: messagesShape,
    valid: { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
  },
  ...Object.entries({
    text2video: { model_name: 'vid-v3', prompt: 'a cat <<<image_1>>>', duration: '5' },
    image2video: { model_name: 'vid-v1-6', image: 'https://x/y.png', prompt: 'a', duration: '5' },
    'motion-control': {
      model_name: 'vid-v2-6',
      image_url: 'https://x/y.png',
      video_url: 'https://x/v.mp4',
    },
    'omni-video': {
      prompt: 'see <<<video_1>>>',
      aspect_ratio: '16:9',
      video_list: [{ video_url: 'https://x/v.mp4' }],
      multi_shot: true,
      shot_type: 'customize',
      multi_prompt: [{ index: 1, prompt: 'p', duration: 5 }],
    },
    'multi-image2video': { image_list: [{ image: 'https://x/y.png' }], prompt: 'p' },
  }).map(([kind, valid]) => ({
    method: 'POST' as const,
    url: `/videogen/v1/videos/${kind}`,
    headers: { authorization: 'Bearer fuzz' },
    shape: videoShape,
    valid,
  })),
  {
    method: 'POST',
    url: '/v1/chat/completions',
    headers: { authorization: 'Bearer fuzz' },
    shape: chatShape,
    valid: {
      model: 'agent',
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'weather? answer in json' },
            { type: 'image_url', image_url: { url: 'https://x/y.png', detail: 'low' } },
          ],
        },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_1', type: 'function', function: { name: 'w', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'call_1', content: 'sunny' },
      ],
      tools: [{ type: 'function', function: { name: 'w', parameters: { type: 'object' } } }],
      tool_choice: 'auto',
      parallel_tool_calls: true,
      response_format: { type: 'json_object' },
      logprobs: true,
      top_logprobs: 2,
      reasoning_effort: 'low',
    },
  },
  {
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers: { 'x-api-key': 'fuzz', 'msgapi-version': '2023-06-01' },
    shape: messagesShape,
    valid: {
      model: 'agent',
      max_tokens: 2048,
      tools: [
        { name: 'w', input_schema: { type: 'object' }, cache_control: { type: 'ephemeral' } },
      ],
      tool_choice: { type: 'auto' },
      thinking: { type: 'enabled', budget_tokens: 1024 },
      output_config: { format: { type: 'json_schema', schema: { type: 'object' } } },
      cache_control: { type: 'ephemeral' },
      messages: [
        {
          role: 'user',
          content: [
            { type: 'text', text: 'weather?' },
            { type: 'image', source: { type: 'url', url: 'https://x/y.png' } },
            { type: 'document', source: { type: 'text', media_type: 'text/plain', data: 'doc' } },
          ],
        },
        { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 'w', input: {} }] },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sunny' }],
        },
      ],
    },
  },
  {
    method: 'POST',
    url: '/messages-api/v1/messages/count_tokens',
    headers: { 'x-api-key': 'fuzz', 'msgapi-version': '2023-06-01' },
    shape: messagesShape,
    valid: {
      model: 'm',
      system: [{ type: 'text', text: 'be brief', cache_control: { type: 'ephemeral', ttl: '1h' } }],
      messages: [{ role: 'user', content: [{ type: 'text', text: 'hi' }] }],
    },
  },
  {
    method: 'POST',
    url: '/_emulator/clock/advance',
    headers: {},
    shape: controlShape,
    valid: { ms: 1 },
  },
  {
    method: 'POST',
    url: '/_emulator/faults',
    headers: {},
    shape: controlShape,
    valid: { path: '/nowhere', status: 503, times: 1, kind: 'error', retry_after_s: 2 },
  },
  {
    method: 'POST',
    url: '/_emulator/replies',
    headers: {},
    shape: controlShape,
    valid: {
      match: { group: 'chat', body: { '$.messages[-1].content': 'hi' }, prompt_regex: 'h(i)' },
      reply: 'stub $1',
      priority: 2,
      times: 1,
    },
  },
  {
    method: 'POST',
    url: '/_emulator/journal/verify',
    headers: {},
    shape: controlShape,
    valid: { match: { group: 'chat', body: { '$.model': 'm' } }, count: { at_most: 3 } },
  },
  {
    method: 'POST',
    url: '/_emulator/tasks/1',
    headers: {},
    shape: controlShape,
    valid: { status: 'failed', message: 'x' },
  },
];

const deep = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

/** Hostile values: wrong types, huge strings, deep nesting, prototype keys. */
const hostileValue = fc.oneof(
  fc.jsonValue(),
  fc.constantFrom('', ' ', '\u0000', '💥'.repeat(1000), 'x'.repeat(300_000)),
  fc.constantFrom(-1, 0, 1e308, -1e308, 1.5, 2 ** 53, Number.MIN_VALUE),
  fc.integer({ min: 50, max: 3000 }).map((d) => JSON.parse(deep(d)) as unknown),
  fc.constant({ __proto__: { admin: true } }),
  fc.array(fc.jsonValue(), { maxLength: 50 }),
);

/** Bodies sent as raw text, so that `__proto__` keys and broken JSON reach the server. */
const rawBody = (valid: Record<string, unknown>) =>
  fc.oneof(
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc
      .tuple(fc.constantFrom(...Object.keys(valid), 'extra', 'messages', 'model'), hostileValue)
      .map(([key, value]) => JSON.stringify({ ...valid, [key]: value })),
    fc
      .tuple(
        fc.constantFrom(...Object.keys(valid)),
        fc.array(fc.constantFrom(...Object.keys(valid))),
      )
      .map(([drop]) => JSON.stringify({ ...valid, [drop]: undefined })),
    fc.constantFrom(
      '{"__proto__":{"x":1}}',
      `{"constructor":{"prototype":{"x":1}}}`,
      '{"a":',
      'null',
      '"string"',
      '[]',
      '',
      deep(20_000),
      `{"messages":${deep(5000)}}`,
    ),
    fc.string({ maxLength: 200 }),
  );

let t: TestApp;
beforeAll(async () => {
  t = await buildTestApp({ logLevel: 'silent' });
});
afterAll(() => t.app.close());
// A fuzzed fault rule or stub may match every request: each test starts clean.
afterEach(() => t.app.emulator.reset());

describe.each(ROUTES)('fuzzing $method $url', (route) => {
  it('never answers 5xx, and every 4xx is in the group shape', async () => {
    await fc.assert(
      fc.asyncProperty(rawBody(route.valid), async (payload) => {
        const res = await t.inject({
          method: route.method,
          url: route.url,
          headers: { ...route.headers, 'content-type': 'application/json' },
          payload,
        });
        expect(res.statusCode).toBeLessThan(500);
        if (res.statusCode >= 400) {
          expect(route.shape(res.json())).toBe(true);
        }
      }),
      { numRuns: 150 },
    );
    expect(({} as Record<string, unknown>).admin).toBeUndefined();
    expect((await t.inject({ url: '/_emulator/health' })).statusCode).toBe(200);
  });
});

describe('fuzzing GET routes with hostile paths and query strings', () => {
  const text = fc.oneof(
    fc.string({ maxLength: 300 }),
    fc.constantFrom('0', '-1', '1e9', '9'.repeat(400), '%00', '..%2F..', '__proto__', ''),
  );
  const urls = fc.oneof(
    text.map((id) => `/videogen/v1/videos/text2video/${encodeURIComponent(id) || 'x'}`),
    fc
      .tuple(text, text)
      .map(
        ([num, size]) =>
          `/videogen/v1/videos/omni-video?pageNum=${encodeURIComponent(num)}&pageSize=${encodeURIComponent(size)}`,
      ),
    text.map((file) => `/media/videos/${encodeURIComponent(file)}`),
    text.map((q) => `/videogen/v1/videos/image2video?${q}`),
  );

  it('never answers 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(urls, async (url) => {
        const res = await t.inject({
          url,
          headers: { authorization: 'Bearer fuzz', range: 'bytes=0-9' },
        });
        expect(res.statusCode).toBeLessThan(500);
        if (res.statusCode >= 400 && url.startsWith('/videogen'))
          expect(videoShape(res.json())).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});

describe('fuzzing the JSON Schemas of tools and structured output', () => {
  /** Schemas that are legal JSON but hostile to a generator or a validator. */
  const hostileSchema = fc.oneof(
    fc.jsonValue(),
    fc.dictionary(
      fc.constantFrom(
        'type',
        'items',
        'properties',
        'minItems',
        'maxItems',
        'minLength',
        'maxLength',
        'pattern',
        'enum',
        '$ref',
        'anyOf',
        'required',
        'multipleOf',
        'minimum',
        'maximum',
        'format',
      ),
      fc.oneof(
        fc.jsonValue(),
        fc.constantFrom(1e9, -1, 0.5, 'string', 'array', 'object', '#', '#/x', '(a+)+$', []),
      ),
    ),
    fc.constantFrom(
      { type: 'array', items: { type: 'string' }, minItems: 1e9 },
      { type: 'array', items: {}, maxItems: 1e9 },
      { type: 'string', maxLength: 1e12 },
      { type: 'string', pattern: '^(a|a)*$' },
      { type: 'object', properties: { a: { $ref: '#' } }, required: ['a'] },
      { type: 'integer', minimum: 5, maximum: 4 },
      { type: 'number', multipleOf: 1e-300 },
      {
        $defs: { a: { type: 'array', items: { $ref: '#/$defs/a' }, minItems: 9 } },
        $ref: '#/$defs/a',
      },
      JSON.parse(`${'{"type":"array","items":'.repeat(40)}{}${',"minItems":3}'.repeat(40)}`),
    ),
  );
  const bodies = [
    (schema: unknown) => ({
      url: '/messages-api/v1/messages',
      headers: { 'x-api-key': 'fuzz', 'msgapi-version': '2023-06-01' },
      shape: messagesShape,
      payload: {
        model: 'm',
        max_tokens: 100,
        tools: [
          {
            name: 't',
            input_schema: { type: 'object', properties: { a: schema }, required: ['a'] },
          },
        ],
        tool_choice: { type: 'any' },
        messages: [{ role: 'user', content: 'go' }],
      },
    }),
    (schema: unknown) => ({
      url: '/messages-api/v1/messages',
      headers: { 'x-api-key': 'fuzz', 'msgapi-version': '2023-06-01' },
      shape: messagesShape,
      payload: {
        model: 'm',
        max_tokens: 100,
        output_config: { format: { type: 'json_schema', schema } },
        messages: [{ role: 'user', content: 'go' }],
      },
    }),
    (schema: unknown) => ({
      url: '/v1/chat/completions',
      headers: { authorization: 'Bearer fuzz' },
      shape: chatShape,
      payload: {
        model: 'm',
        tools: [{ type: 'function', function: { name: 't', parameters: schema } }],
        tool_choice: 'required',
        messages: [{ role: 'user', content: 'go' }],
      },
    }),
    (schema: unknown) => ({
      url: '/v1/chat/completions',
      headers: { authorization: 'Bearer fuzz' },
      shape: chatShape,
      payload: {
        model: 'm',
        response_format: { type: 'json_schema', json_schema: { name: 'x', schema } },
        messages: [{ role: 'user', content: 'go' }],
      },
    }),
  ];

  it('never answers 5xx, and every 4xx is in the group shape', async () => {
    await fc.assert(
      fc.asyncProperty(hostileSchema, fc.constantFrom(...bodies), async (schema, body) => {
        const { url, headers, shape, payload } = body(schema);
        const res = await t.inject({ method: 'POST', url, headers, payload });
        expect(res.statusCode).toBeLessThan(500);
        if (res.statusCode >= 400) expect(shape(res.json())).toBe(true);
      }),
      // Counterexamples found by earlier runs, always tried first.
      {
        numRuns: 400,
        examples: bodies.map((body) => [{ $ref: '#' }, body] as [unknown, typeof body]),
      },
    );
  });
});
