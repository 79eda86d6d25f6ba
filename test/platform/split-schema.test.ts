import { execFileSync } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { ChatCompletionRequestSchema } from '../../src/chat/schemas.js';
import { MessagesRequestSchema } from '../../src/messages/schemas.js';
import {
  SHARED_FROM_CHARS,
  SPLIT_FROM_CHARS,
  splitLargeSubschemas,
} from '../../src/platform/split-schema.js';
import { normalizeError, precompileValidator } from '../../src/platform/validation.js';

/** Every function of Ajv's standalone code, by its length in characters. */
const functionLengths = (code: string) =>
  code.split(/(?=function validate\d+\()/).map((part) => part.length);

/**
 * The bytecode length of every function of Ajv's standalone code, as V8 compiles it (all at
 * once, `--no-lazy`) in a node of its own: what V8's limit on optimized functions is about.
 */
function bytecodeLengths(code: string): number[] {
  const file = join(mkdtempSync(join(tmpdir(), 'validator-')), 'validator.cjs');
  writeFileSync(file, code);
  const out = execFileSync(
    process.execPath,
    ['--no-lazy', '--print-bytecode', '--print-bytecode-filter=validate*', file],
    {
      env: { ...process.env, NODE_PATH: join(process.cwd(), 'node_modules') },
      encoding: 'utf8',
      maxBuffer: 1 << 30,
    },
  );
  return [...out.matchAll(/^Bytecode length: (\d+)$/gm)].map((m) => Number(m[1]));
}

/** The verdict and the refusal (as the API words it) of a validator for a body. */
function outcome(validate: ((data: unknown) => boolean) & { errors?: unknown }, body: unknown) {
  const copy = structuredClone(body);
  if (validate(copy)) return { valid: true };
  const error = normalizeError({ validation: validate.errors });
  return { valid: false, message: error.message, issue: error.options.issue };
}

const CHAT_BODIES: unknown[] = [
  { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
  {
    model: 'm',
    messages: [
      { role: 'system', content: 'be brief' },
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      {
        role: 'assistant',
        content: null,
        tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: '{}' } }],
      },
      { role: 'tool', tool_call_id: 'c1', content: 'done' },
    ],
    tools: [{ type: 'function', function: { name: 'f', parameters: { type: 'object' } } }],
    tool_choice: { type: 'function', function: { name: 'f' } },
    response_format: { type: 'json_schema', json_schema: { name: 'x', schema: {} } },
  },
  { model: 'm', messages: [{ role: 'wizard', content: 'hi' }] },
  { model: 'm', messages: [{ role: 'user' }] },
  { model: 'm', messages: [{ role: 'user', content: [{ type: 'image_url' }] }] },
  { model: 'm', messages: [{ role: 'user', content: 'hi' }], tool_choice: 'sometimes' },
  { model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: 9 },
  { model: 'm', messages: [{ role: 'user', content: 'hi' }], surprise: true },
  { model: 7, messages: [] },
  'not an object',
];

const MESSAGES_BODIES: unknown[] = [
  { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
  {
    model: 'm',
    max_tokens: 5,
    system: [{ type: 'text', text: 's', cache_control: { type: 'ephemeral' } }],
    tools: [{ name: 't', input_schema: { type: 'object' } }],
    messages: [
      { role: 'user', content: [{ type: 'text', text: 'hi' }] },
      { role: 'assistant', content: [{ type: 'tool_use', id: 'toolu_1', name: 't', input: {} }] },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' }] },
    ],
  },
  { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: [{ type: 'video' }] }] },
  { model: 'm', max_tokens: 5, messages: [{ role: 'robot', content: 'hi' }] },
  { model: 'm', max_tokens: 'five', messages: [{ role: 'user', content: 'hi' }] },
  { model: 'm', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }], thinking: {} },
  { max_tokens: 5, messages: [] },
];

describe('large subschemas split into functions of their own', () => {
  it('leaves a small schema as it is', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } } };
    expect(splitLargeSubschemas(schema)).toBe(schema);
  });

  it('moves a smaller subschema held several times (not once) to one shared definition', () => {
    const cache = {
      anyOf: [
        {
          type: 'object',
          properties: { type: { const: 'ephemeral' }, ttl: { enum: ['5m', '1h'] } },
        },
        { type: 'null' },
      ],
    };
    expect(JSON.stringify(cache).length).toBeGreaterThanOrEqual(SHARED_FROM_CHARS);
    expect(JSON.stringify(cache).length).toBeLessThan(SPLIT_FROM_CHARS);
    const branch = (tag: string) => ({
      type: 'object',
      properties: { type: { const: tag }, cache_control: structuredClone(cache) },
    });
    const once = { type: 'object', properties: { only: cache } };
    expect(splitLargeSubschemas(once)).toBe(once);
    const schema = { oneOf: [branch('a'), branch('b')] };
    const ref = { $ref: '#/$defs/split0' };
    expect(splitLargeSubschemas(schema)).toEqual({
      oneOf: [
        { type: 'object', properties: { type: { const: 'a' }, cache_control: ref } },
        { type: 'object', properties: { type: { const: 'b' }, cache_control: ref } },
      ],
      $defs: { split0: cache },
    });
  });

  it('moves large subschemas to $defs, each once, leaving union branches in place', () => {
    // Large as a whole, each of its fields small.
    const fields = Math.ceil(SPLIT_FROM_CHARS / 20);
    const big = {
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: fields }, (_, i) => [`f${i}`, { type: 'string' }]),
      ),
    };
    const schema = {
      type: 'object',
      properties: { a: big, b: big, c: { anyOf: [big, { type: 'null' }] } },
    };
    expect(splitLargeSubschemas(schema)).toEqual({
      type: 'object',
      properties: {
        a: { $ref: '#/$defs/split0' },
        b: { $ref: '#/$defs/split0' },
        c: { $ref: '#/$defs/split1' },
      },
      $defs: { split0: big, split1: { anyOf: [big, { type: 'null' }] } },
    });
  });

  for (const [name, schema, bodies] of [
    ['chat', ChatCompletionRequestSchema, CHAT_BODIES],
    ['messages', MessagesRequestSchema, MESSAGES_BODIES],
  ] as const) {
    it(`validates ${name} requests as the whole schema does, refusals worded the same`, () => {
      const options = { strict: false, discriminator: true, verbose: true, validateSchema: false };
      const whole = new Ajv(options).compile(schema);
      const split = new Ajv({ ...options, inlineRefs: false }).compile(
        splitLargeSubschemas(schema),
      );
      for (const body of bodies)
        expect(outcome(split, body), JSON.stringify(body)).toEqual(outcome(whole, body));
    });

    it(`compiles the ${name} request validator into functions V8 will optimize`, () => {
      // V8 optimizes no function of more than 60 KiB of bytecode (--max-optimized-bytecode-size);
      // the chat validator was one function of ~490 000 characters, the messages one ~180 000.
      const { code } = precompileValidator(schema, false);
      expect(functionLengths(code).length).toBeGreaterThan(5);
      const lengths = bytecodeLengths(code);
      expect(lengths.length).toBeGreaterThan(5);
      expect(Math.max(...lengths)).toBeLessThan(60 * 1024);
    });
  }
});
