import { Ajv } from 'ajv';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { imageTokens, UNSEEN_IMAGE_SIDE } from '../../src/chat/prompt.js';
import { logprobEntries, tokenLogprobs } from '../../src/chat/service.js';
import { splitTokens } from '../../src/platform/tokens.js';
import { generateReply } from '../../src/text/default-reply.js';
import { PDF_PAGE_TOKENS } from '../../src/text/media.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';
import { DOCS } from '../helpers/docs.js';
import { IMAGES } from '../helpers/images.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const SCHEMA = {
  type: 'object',
  properties: {
    title: { type: 'string' },
    year: { type: 'integer', minimum: 1900, maximum: 2100 },
    genre: { type: 'string', enum: ['drama', 'comedy'] },
    cast: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          name: { type: 'string' },
          born: { type: ['string', 'null'], format: 'date' },
        },
        required: ['name', 'born'],
        additionalProperties: false,
      },
    },
  },
  required: ['title', 'year', 'genre', 'cast'],
  additionalProperties: false,
};
const ask = (extra: object, content = 'Describe a film') =>
  t.chat({ model: 'm', messages: [{ role: 'user', content }], ...extra });

describe('response_format', () => {
  it('answers json_schema with JSON content valid against the schema, the same each time', async () => {
    const format = {
      type: 'json_schema',
      json_schema: { name: 'film', strict: true, schema: SCHEMA },
    };
    const body = (await ask({ response_format: format })).json();
    const content = body.choices[0].message.content;
    expect(
      new Ajv({ strict: false, validateFormats: false }).validate(SCHEMA, JSON.parse(content)),
    ).toBe(true);
    expect(body.choices[0].finish_reason).toBe('stop');
    expect((await ask({ response_format: format })).json().choices[0].message.content).toBe(
      content,
    );
  });

  it('answers json_object with a JSON object', async () => {
    const content = (
      await ask({ response_format: { type: 'json_object' } }, 'Answer in JSON please')
    ).json().choices[0].message.content;
    expect(JSON.parse(content)).toEqual({ answer: generateReply('Answer in JSON please', 0).text });
  });

  const error = (message: string, param: string | null, code: string | null = null) => ({
    error: { message, type: 'invalid_request_error', param, code },
  });
  it.each([
    [
      'json_object when no message says JSON',
      { response_format: { type: 'json_object' } },
      error(
        "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.",
        'messages',
      ),
    ],
    [
      'a strict schema without additionalProperties: false',
      {
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'x',
            strict: true,
            schema: { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
          },
        },
      },
      error(
        "Invalid schema for response_format 'x': In context=(), 'additionalProperties' is required to be supplied and to be false.",
        'response_format',
      ),
    ],
    [
      'a strict schema whose root is not an object',
      {
        response_format: {
          type: 'json_schema',
          json_schema: { name: 'x', strict: true, schema: { type: 'array', items: {} } },
        },
      },
      error(
        "Invalid schema for response_format 'x': schema must be a JSON Schema of 'type: \"object\"', got 'type: \"array\"'.",
        'response_format',
      ),
    ],
    [
      'a strict schema with an unsupported keyword',
      {
        response_format: {
          type: 'json_schema',
          json_schema: {
            name: 'x',
            strict: true,
            schema: {
              type: 'object',
              properties: { a: { allOf: [{ type: 'string' }] } },
              required: ['a'],
              additionalProperties: false,
            },
          },
        },
      },
      error(
        "Invalid schema for response_format 'x': In context=('properties', 'a'), 'allOf' is not permitted.",
        'response_format',
      ),
    ],
    [
      'a schema name outside the pattern',
      {
        response_format: { type: 'json_schema', json_schema: { name: 'my film', schema: SCHEMA } },
      },
      error(
        "Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        'response_format.json_schema.name',
        'invalid_value',
      ),
    ],
    [
      'an unknown response_format type',
      { response_format: { type: 'yaml' } },
      error(
        'Invalid value for \'response_format.type\': must be one of "text", "json_object", "json_schema".',
        'response_format.type',
        'invalid_value',
      ),
    ],
  ])('refuses %s', async (_label, extra, expected) => {
    const res = await ask(extra);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(expected);
  });
});

describe('strict schema sizes', () => {
  const strictFormat = (schema: object) => ({
    response_format: { type: 'json_schema', json_schema: { name: 'x', strict: true, schema } },
  });
  const closed = (properties: Record<string, unknown>) => ({
    type: 'object',
    properties,
    required: Object.keys(properties),
    additionalProperties: false,
  });
  /** Objects nested `levels` deep, the root the first. */
  const nested = (levels: number): object =>
    levels === 1 ? closed({ leaf: { type: 'string' } }) : closed({ child: nested(levels - 1) });
  const refusal = (message: string) => ({
    error: {
      message: `Invalid schema for response_format 'x': ${message}`,
      type: 'invalid_request_error',
      param: 'response_format',
      code: null,
    },
  });

  it.each([
    ['nesting', nested(10), nested(11), '11 levels of nesting exceeds limit of 10.'],
    [
      'enum values',
      closed({
        a: { enum: Array.from({ length: 500 }, (_, i) => i) },
        b: { enum: Array.from({ length: 500 }, (_, i) => i) },
      }),
      closed({
        a: { enum: Array.from({ length: 500 }, (_, i) => i) },
        b: { enum: Array.from({ length: 501 }, (_, i) => i) },
      }),
      '1001 total enum values exceeds limit of 1000.',
    ],
    [
      'characters of names and values',
      closed({ a: { const: 'x'.repeat(120_000 - 1) } }),
      closed({ a: { const: 'x'.repeat(120_000) } }),
      '120001 total characters of property names, definition names, enum values and const values exceeds limit of 120000.',
    ],
    [
      'characters of a large string enum',
      closed({ a: { enum: Array.from({ length: 300 }, (_, i) => `${i}`.padEnd(50, '-')) } }),
      closed({
        a: {
          enum: Array.from(
            { length: 300 },
            (_, i) => `${i}`.padEnd(50, '-') + (i === 0 ? '+' : ''),
          ),
        },
      }),
      '15001 characters of the values of an enum of more than 250 string values exceeds limit of 15000.',
    ],
  ])('takes %s up to the limit and refuses one more', async (_label, within, over, message) => {
    const ok = await ask(strictFormat(within));
    expect(ok.statusCode, ok.body).toBe(200);
    const res = await ask(strictFormat(over));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(refusal(message));
  });

  it('counts nesting through arrays, definitions and unions, and not without strict', async () => {
    const deep = closed({ list: { type: 'array', items: nested(10) } });
    expect((await ask(strictFormat(deep))).json()).toEqual(
      refusal('11 levels of nesting exceeds limit of 10.'),
    );
    const viaDefs = { ...closed({ a: { $ref: '#/$defs/d' } }), $defs: { d: nested(10) } };
    expect((await ask(strictFormat(viaDefs))).json()).toEqual(
      refusal('11 levels of nesting exceeds limit of 10.'),
    );
    const viaUnion = closed({ a: { anyOf: [nested(10), { type: 'null' }] } });
    expect((await ask(strictFormat(viaUnion))).json()).toEqual(
      refusal('11 levels of nesting exceeds limit of 10.'),
    );
    const loose = {
      response_format: { type: 'json_schema', json_schema: { name: 'x', schema: nested(11) } },
    };
    expect((await ask(loose)).statusCode).toBe(200);
  });
});

describe('logprobs', () => {
  it('makes the entries one at a time, so a stream holds only the one it writes', () => {
    const text = 'ab '.repeat(16_000);
    const entries = logprobEntries(text, 20);
    const first = entries.next();
    expect(first.done).toBe(false);
    expect(first.value).toEqual(tokenLogprobs(text.slice(0, 30), 20)[0]);
    let rest = 0;
    for (const _ of entries) rest++;
    expect(rest + 1).toBe(splitTokens(text, 1).length);
  });

  it('gives one deterministic entry per token, with top_logprobs alternatives', async () => {
    const body = (await ask({ logprobs: true, top_logprobs: 2 })).json();
    const text = generateReply('Describe a film', 0).text;
    expect(body.choices[0].logprobs).toEqual({ content: tokenLogprobs(text, 2), refusal: null });
    const first = body.choices[0].logprobs.content[0];
    expect(first).toEqual({
      token: splitTokens(text, 1)[0],
      logprob: expect.any(Number),
      bytes: [...Buffer.from(splitTokens(text, 1)[0] as string)],
      top_logprobs: [
        { token: first.token, logprob: first.logprob, bytes: first.bytes },
        { token: expect.any(String), logprob: first.logprob - 2.5, bytes: expect.any(Array) },
      ],
    });
    expect(first.logprob).toBeLessThanOrEqual(0);
    expect(body.choices[0].logprobs.content.map((e: { token: string }) => e.token).join('')).toBe(
      text,
    );
  });

  it('streams one entry per content chunk', async () => {
    const frames = parseSse((await ask({ logprobs: true, stream: true })).body);
    const content = frames
      .slice(2, -2)
      .map((f) => (f.data as { choices: Array<{ logprobs: object }> }).choices[0]?.logprobs);
    expect(content).toEqual(
      tokenLogprobs(generateReply('Describe a film', 0).text, 0).map((entry) => ({
        content: [entry],
        refusal: null,
      })),
    );
    expect(
      (frames[1] as { data: { choices: Array<{ logprobs: object }> } }).data.choices[0]?.logprobs,
    ).toEqual({
      content: [],
      refusal: null,
    });
  });
});

describe('reasoning', () => {
  it('reports reasoning_tokens, by effort, inside completion_tokens', async () => {
    const usage = async (effort: string) => (await ask({ reasoning_effort: effort })).json().usage;
    const none = await usage('none');
    expect(none.completion_tokens_details.reasoning_tokens).toBe(0);
    const medium = await usage('medium');
    const high = await usage('high');
    expect(medium.completion_tokens_details.reasoning_tokens).toBeGreaterThan(0);
    expect(high.completion_tokens_details.reasoning_tokens).toBe(
      2 * medium.completion_tokens_details.reasoning_tokens,
    );
    expect(high.completion_tokens - high.completion_tokens_details.reasoning_tokens).toBe(
      none.completion_tokens,
    );
    for (const effort of ['minimal', 'low', 'xhigh', 'max']) {
      expect((await ask({ reasoning_effort: effort })).statusCode).toBe(200);
    }
  });

  it("takes each value a known reasoning model takes, and every value on a model the table does not know (a deployment's name)", async () => {
    const taken: Record<string, string[]> = {
      'o3-mini': ['low', 'medium', 'high'],
      'o4-mini-2025-04-16': ['low', 'medium', 'high'],
      'gpt-5-mini': ['minimal', 'low', 'medium', 'high'],
      'gpt-5-pro': ['high'],
      'gpt-5.1': ['none', 'low', 'medium', 'high'],
      'gpt-5.2-2025-12-11': ['none', 'low', 'medium', 'high', 'xhigh'],
      'gpt-5.1-codex-max': ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'],
      'my-deployment': ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'],
    };
    for (const [model, efforts] of Object.entries(taken)) {
      for (const effort of efforts) {
        const res = await t.chat({
          model,
          messages: [{ role: 'user', content: 'x' }],
          reasoning_effort: effort,
        });
        expect([model, effort, res.statusCode]).toEqual([model, effort, 200]);
      }
    }
  });

  it("reasons at the model's default effort when none is named: medium before GPT-5.1, high on gpt-5-pro, none on GPT-5.1 and later, on models that do not reason and on unknown names", async () => {
    const reasoning = async (model: string, effort?: string) =>
      (
        await t.chat({
          model,
          messages: [{ role: 'user', content: 'Describe a film' }],
          ...(effort === undefined ? {} : { reasoning_effort: effort }),
        })
      ).json().usage.completion_tokens_details.reasoning_tokens as number;
    const medium = await reasoning('gpt-5', 'medium');
    expect(medium).toBeGreaterThan(0);
    expect(await reasoning('gpt-5')).toBe(medium);
    expect(await reasoning('o3-mini')).toBe(medium);
    expect(await reasoning('gpt-5.1-codex-max')).toBe(medium);
    expect(await reasoning('gpt-5-pro')).toBe(await reasoning('gpt-5-pro', 'high'));
    expect(await reasoning('gpt-5-pro')).toBe(2 * medium);
    for (const model of ['gpt-5.1', 'gpt-5.2', 'gpt-4o', 'gpt-5-chat-latest', 'my-deployment']) {
      expect([model, await reasoning(model)]).toEqual([model, 0]);
    }
    expect(await reasoning('my-deployment', 'medium')).toBe(medium);
  });

  it('counts reasoning against max_completion_tokens', async () => {
    const body = (await ask({ reasoning_effort: 'high', max_completion_tokens: 50 })).json();
    expect(body.usage.completion_tokens).toBeLessThanOrEqual(50);
    expect(body.choices[0].finish_reason).toBe('length');
  });
});

describe('images, audio and files', () => {
  const parts = (...extra: object[]) => [{ type: 'text', text: 'look' }, ...extra];
  const promptTokens = async (content: unknown) =>
    (await t.chat({ model: 'm', messages: [{ role: 'user', content }] })).json().usage
      .prompt_tokens as number;
  const base = () => promptTokens(parts());
  const dataUrl = (mime: string, data: string) => `data:${mime};base64,${data}`;

  it('count images with the tile formula: 85 per image at low detail, 85 + 170 per tile else', async () => {
    const plain = await base();
    const png = { type: 'image_url', image_url: { url: dataUrl('image/png', IMAGES.png320) } };
    expect((await promptTokens(parts(png))) - plain).toBe(85 + 170);
    const low = {
      type: 'image_url',
      image_url: { url: dataUrl('image/png', IMAGES.png320), detail: 'low' },
    };
    expect((await promptTokens(parts(low))) - plain).toBe(85);
    const jpeg = {
      type: 'image_url',
      image_url: { url: dataUrl('image/jpeg', IMAGES.jpeg640x360) },
    };
    expect((await promptTokens(parts(jpeg))) - plain).toBe(85 + 170 * 2);
    const remote = { type: 'image_url', image_url: { url: 'https://example.com/cat.webp' } };
    expect((await promptTokens(parts(remote))) - plain).toBe(
      imageTokens(UNSEEN_IMAGE_SIDE, UNSEEN_IMAGE_SIDE, 'auto'),
    );
    expect(imageTokens(1024, 1024, 'high')).toBe(765);
    expect(imageTokens(2048, 4096, 'high')).toBe(1105);
  });

  it('count audio as audio tokens and PDF files by their pages', async () => {
    const plain = await base();
    const audio = Buffer.alloc(32_000).toString('base64');
    const res = await t.chat({
      model: 'm',
      messages: [
        {
          role: 'user',
          content: parts({ type: 'input_audio', input_audio: { data: audio, format: 'wav' } }),
        },
      ],
    });
    expect(res.json().usage.prompt_tokens_details.audio_tokens).toBe(10);
    expect(res.json().usage.prompt_tokens - plain).toBe(10);
    const file = {
      type: 'file',
      file: { filename: 'a.pdf', file_data: dataUrl('application/pdf', DOCS.twoPages) },
    };
    expect((await promptTokens(parts(file))) - plain).toBe(2 * PDF_PAGE_TOKENS);
  });

  it('put images in the cached prefix', async () => {
    const content = [
      { type: 'text', text: 'abcd '.repeat(1200) },
      { type: 'image_url', image_url: { url: dataUrl('image/png', IMAGES.png320) } },
    ];
    const messages = [
      { role: 'user', content },
      { role: 'user', content: 'and?' },
    ];
    await t.chat({ model: 'm', messages });
    const cached = (await t.chat({ model: 'm', messages })).json().usage.prompt_tokens_details
      .cached_tokens;
    expect(cached).toBe(Math.floor((3 + 1200 + 255) / 128) * 128);
    const other = [
      {
        role: 'user',
        content: [
          content[0],
          { type: 'image_url', image_url: { url: dataUrl('image/jpeg', IMAGES.jpeg640x360) } },
        ],
      },
      { role: 'user', content: 'and?' },
    ];
    expect(
      (await t.chat({ model: 'm', messages: other })).json().usage.prompt_tokens_details
        .cached_tokens,
    ).toBe(0);
  });

  it.each([
    [
      'an image of another format',
      { type: 'image_url', image_url: { url: `data:image/bmp;base64,${IMAGES.png320}` } },
      {
        message:
          "You uploaded an unsupported image. Please make sure your image has of one the following formats: ['png', 'jpeg', 'gif', 'webp'].",
        type: 'invalid_request_error',
        param: null,
        code: 'invalid_image_format',
      },
    ],
    [
      'an image URL that is none',
      { type: 'image_url', image_url: { url: 'ftp:/x' } },
      {
        message:
          "Invalid 'messages[0].content[1].image_url.url'. Expected a valid URL, but got a value with an invalid format.",
        type: 'invalid_request_error',
        param: 'messages[0].content[1].image_url.url',
        code: 'invalid_value',
      },
    ],
    [
      'a file that is not a PDF',
      { type: 'file', file: { file_data: Buffer.from('hello').toString('base64') } },
      {
        message: "Invalid value for 'messages[0].content[1].file.file_data': must be a Base64 PDF.",
        type: 'invalid_request_error',
        param: 'messages[0].content[1].file.file_data',
        code: 'invalid_value',
      },
    ],
  ])('refuse %s', async (_label, part, error) => {
    const res = await t.chat({ model: 'm', messages: [{ role: 'user', content: parts(part) }] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error });
  });
});

describe('other current parameters', () => {
  it('accepts them, echoing service_tier', async () => {
    const res = await ask({
      service_tier: 'auto',
      verbosity: 'low',
      prediction: { type: 'content', content: 'a draft' },
      modalities: ['text'],
      store: false,
      metadata: { run: '1' },
      user: 'u1',
      safety_identifier: 'hashed-user',
      prompt_cache_key: 'k1',
      prompt_cache_retention: '24h',
      seed: 42,
      web_search_options: { search_context_size: 'low' },
      stream_options: null,
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().service_tier).toBe('default');
    expect((await ask({ service_tier: 'flex' })).json().service_tier).toBe('flex');
    expect((await ask({})).json().service_tier).toBeUndefined();
  });

  it('serves fast mode (service_tier "fast") as priority, and says so', async () => {
    expect((await ask({ service_tier: 'fast' })).json().service_tier).toBe('priority');
    const streamed = parseSse((await ask({ service_tier: 'fast', stream: true })).body);
    expect(streamed[1]?.data).toMatchObject({ service_tier: 'priority' });
  });

  it('takes the newer fields, each closed list checked', async () => {
    const text = (breakpoint: object) => ({
      role: 'user',
      content: [{ type: 'text', text: 'Hi', prompt_cache_breakpoint: breakpoint }],
    });
    const res = await ask({
      messages: [text({ mode: 'explicit', ttl: '12h' })],
      prompt_cache_options: { mode: 'explicit', ttl: '30m' },
      moderation: { model: 'omni-moderation-latest', policy: { input: { mode: 'block' } } },
      web_search_options: {
        search_context_size: 'high',
        user_location: { type: 'approximate', approximate: { city: 'Oslo' } },
      },
    });
    expect(res.statusCode).toBe(200);
    for (const [extra, param, values] of [
      [
        { messages: [text({ mode: 'implicit' })] },
        'messages[0].content[0].prompt_cache_breakpoint.mode',
        '"explicit"',
      ],
      [{ prompt_cache_options: { ttl: '1h' } }, 'prompt_cache_options.ttl', '"30m"'],
      [
        { moderation: { model: 'm', policy: { output: { mode: 'warn' } } } },
        'moderation.policy.output.mode',
        '"score", "block"',
      ],
      [
        { audio: { voice: 'alloy', format: 'ogg' } },
        'audio.format',
        '"wav", "aac", "mp3", "flac", "opus", "pcm16"',
      ],
    ] as const) {
      const refused = await ask(extra);
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error).toMatchObject({ param, code: 'invalid_value' });
      expect(refused.json().error.message).toContain(values);
    }
  });
});
