import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { STRICT_FORMATS, strictProblem } from '../../src/messages/strict-schema.js';
import { buildTestApp, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const QUESTION = [{ role: 'user', content: 'Plan it' }];
/** An object structured outputs take: every property required, closed. */
const closed = (properties: Record<string, unknown>, extra: object = {}) => ({
  type: 'object',
  properties,
  required: Object.keys(properties),
  additionalProperties: false,
  ...extra,
});
const withFormat = (schema: object, extra: object = {}) =>
  t.messages({
    model: 'm',
    max_tokens: 512,
    output_config: { format: { type: 'json_schema', schema } },
    messages: QUESTION,
    ...extra,
  });
const tool = (name: string, input_schema: object, strict = true) => ({
  name,
  input_schema,
  ...(strict ? { strict: true } : {}),
});
const withTools = (tools: object[]) =>
  t.messages({ model: 'm', max_tokens: 512, tools, messages: QUESTION });
const refusal = (message: string) => ({ type: 'invalid_request_error', message });

const REFUSED: Array<[string, object, string]> = [
  [
    'numerical constraints',
    closed({ n: { type: 'integer', maximum: 9, minimum: 1 } }),
    "For 'integer' type, properties maximum, minimum are not supported",
  ],
  [
    'one numerical constraint',
    closed({ n: { type: 'number', multipleOf: 0.5 } }),
    "For 'number' type, property 'multipleOf' is not supported",
  ],
  [
    'string lengths',
    closed({ s: { type: 'string', minLength: 1, maxLength: 5 } }),
    "For 'string' type, properties minLength, maxLength are not supported",
  ],
  [
    'a minItems other than 0 or 1',
    closed({ a: { type: 'array', items: { type: 'string' }, minItems: 2 } }),
    "For 'array' type, 'minItems' values other than 0 or 1 are not supported (got: [2])",
  ],
  [
    'maxItems',
    closed({ a: { type: 'array', items: { type: 'string' }, maxItems: 3 } }),
    "For 'array' type, property 'maxItems' is not supported",
  ],
  [
    'an object without additionalProperties',
    { type: 'object', properties: { a: { type: 'string' } }, required: ['a'] },
    "For 'object' type, 'additionalProperties' must be explicitly set to false",
  ],
  [
    'additionalProperties: true, nested',
    closed({ inner: { type: 'object', properties: {}, additionalProperties: true } }),
    "For 'object' type, 'additionalProperties: true' is not supported. Please set 'additionalProperties' to false",
  ],
  [
    'an additionalProperties schema',
    closed({ map: { type: 'object', additionalProperties: { type: 'string' } } }),
    "For 'object' type, 'additionalProperties: object' is not supported. Please set 'additionalProperties' to false",
  ],
  [
    'a format outside the list',
    closed({ ip: { type: 'string', format: 'ipvanyaddress' } }),
    "For 'string' type, format 'ipvanyaddress' is not supported",
  ],
  [
    'a self-referencing definition',
    {
      ...closed({ root: { $ref: '#/$defs/__schema0' } }),
      $defs: {
        __schema0: closed({ children: { type: 'array', items: { $ref: '#/$defs/__schema0' } } }),
      },
    },
    'Circular reference detected in schema definitions: __schema0 -> __schema0. Self-referencing or mutually-referencing definitions are not supported.',
  ],
  [
    'mutually-referencing definitions',
    {
      ...closed({ a: { $ref: '#/definitions/A' } }),
      definitions: {
        A: closed({ b: { $ref: '#/definitions/B' } }),
        B: closed({ a: { $ref: '#/definitions/A' } }),
      },
    },
    'Circular reference detected in schema definitions: A -> B -> A. Self-referencing or mutually-referencing definitions are not supported.',
  ],
  [
    'a reference to the root',
    closed({ next: { anyOf: [{ $ref: '#' }, { type: 'null' }] } }),
    'Circular reference detected in schema definitions: # -> #. Self-referencing or mutually-referencing definitions are not supported.',
  ],
];

describe('structured outputs refuse what upstream refuses in a schema', () => {
  it.each(REFUSED)('%s, in output_config.format', async (_label, schema, message) => {
    const res = await withFormat(schema);
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual(refusal(`output_config.format.schema: ${message}`));
  });

  it.each(REFUSED)(
    '%s, in a strict tool (and not in a tool that is not strict)',
    async (_label, schema, message) => {
      const res = await withTools([
        tool('ok', closed({ a: { type: 'string' } })),
        tool('plan', schema),
      ]);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toEqual(refusal(`tools.1.custom: ${message}`));
      if (!message.startsWith('Circular')) {
        expect((await withTools([tool('plan', schema, false)])).statusCode).toBe(200);
      }
    },
  );

  it('refuses them in the beta spelling output_format too, naming it', async () => {
    const res = await t.messages({
      model: 'm',
      max_tokens: 512,
      output_format: { type: 'json_schema', schema: REFUSED[0]?.[1] },
      messages: QUESTION,
    });
    expect(res.json().error).toEqual(refusal(`output_format.schema: ${REFUSED[0]?.[2]}`));
  });

  it('takes what they allow: the listed formats, minItems 0 and 1, enums, nullable unions, $defs without a cycle', async () => {
    const formats = Object.fromEntries(
      [...STRICT_FORMATS].map((format) => [format.replace(/-/g, '_'), { type: 'string', format }]),
    );
    const schema = {
      ...closed({
        ...formats,
        tags: { type: 'array', items: { type: 'string', enum: ['a', 'b'] }, minItems: 1 },
        none: { type: 'array', items: { type: 'integer' }, minItems: 0 },
        note: { type: ['string', 'null'] },
        owner: { $ref: '#/$defs/person' },
      }),
      $defs: { person: closed({ name: { type: 'string' } }) },
    };
    const res = await withFormat(schema);
    expect(res.statusCode, res.body).toBe(200);
    expect((await withTools([tool('plan', schema)])).statusCode).toBe(200);
  });

  it('refuses oneOf, allOf or anyOf at the top of any tool input_schema, strict or not', async () => {
    for (const strict of [true, false]) {
      const res = await withTools([
        tool('plan', { type: 'object', anyOf: [closed({ a: { type: 'string' } })] }, strict),
      ]);
      expect(res.statusCode).toBe(400);
      expect(res.json().error).toEqual(
        refusal(
          'tools.0.custom.input_schema: input_schema does not support oneOf, allOf, or anyOf at the top level',
        ),
      );
    }
  });
});

describe('structured outputs, hostile schemas', () => {
  it('answer a chain of thousands of definitions with a 400, not a stack overflow', async () => {
    const n = 6000;
    const $defs: Record<string, object> = {};
    for (let i = 0; i < n; i++)
      $defs[`d${i}`] = i === n - 1 ? { type: 'string' } : { $ref: `#/$defs/d${i + 1}` };
    const schema = { ...closed({ r: { $ref: '#/$defs/d0' } }), $defs };
    for (const extra of [
      { output_config: { format: { type: 'json_schema', schema } } },
      { output_format: { type: 'json_schema', schema } },
    ]) {
      const res = await t.messages({ model: 'm', max_tokens: 64, messages: QUESTION, ...extra });
      expect(res.statusCode).toBe(400);
      expect(res.json().error.message).toMatch(/more than 2000 JSON nodes/);
    }
  });

  it('find a cycle at the end of a long chain of definitions', async () => {
    const chain = (n: number) => {
      const $defs: Record<string, object> = {};
      for (let i = 0; i < n; i++) $defs[`d${i}`] = { $ref: `#/$defs/d${(i + 1) % n}` };
      return { ...closed({ r: { $ref: '#/$defs/d0' } }), $defs };
    };
    const res = await withFormat(chain(600));
    expect(res.statusCode).toBe(400);
    expect(res.json().error.message).toMatch(
      /^output_config\.format\.schema: Circular reference detected in schema definitions: d0 -> d1 -> .* -> d599 -> d0\./,
    );
    // past what a request may hold, the search itself keeps to its own stack
    expect(strictProblem(chain(50_000))).toMatch(/-> d49999 -> d0\. Self-referencing/);
  });

  it('read an escaped surrogate pair as the one character it is (no lone half in a value)', async () => {
    const schema = closed({ s: { type: 'string', pattern: '^\\uD83D\\uDE00$' } });
    const res = await withFormat(schema);
    expect(res.statusCode, res.body).toBe(200);
    expect(JSON.parse(res.json().content[0].text)).toEqual({ s: '😀' });
    // in a class the generator cannot make it: refused, never answered with half of it
    const inClass = await withFormat(
      closed({ s: { type: 'string', pattern: '^[\\uD83D\\uDE00]$' } }),
    );
    if (inClass.statusCode === 200) {
      expect(JSON.parse(inClass.json().content[0].text)).toEqual({ s: '😀' });
    } else {
      expect(inClass.json().error.message).toMatch(/no value satisfies this schema/);
    }
  });
});

describe("structured outputs' limits over a request", () => {
  const strictTools = (n: number) =>
    Array.from({ length: n }, (_, i) => tool(`t${i}`, closed({ a: { type: 'string' } })));

  it('take 20 strict tools, and any number of tools that are not strict beside them', async () => {
    const loose = Array.from({ length: 30 }, (_, i) =>
      tool(`loose${i}`, { type: 'object' }, false),
    );
    expect((await withTools([...strictTools(20), ...loose])).statusCode).toBe(200);
    const res = await withTools(strictTools(21));
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual(
      refusal('Too many strict tools (21). The maximum number of strict tools supported is 20.'),
    );
  });

  /** An object of `n` properties, none required. */
  const optional = (n: number, type: unknown = 'string') => ({
    type: 'object',
    properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type }])),
    additionalProperties: false,
  });

  it('take 24 optional parameters across strict tools and the output schema, not 25', async () => {
    const ok = await withFormat(optional(12), { tools: [tool('a', optional(12))] });
    expect(ok.statusCode, ok.body).toBe(200);
    const res = await withFormat(optional(13), { tools: [tool('a', optional(12))] });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual(
      refusal(
        'Schemas contains too many optional parameters (25), which would make grammar compilation inefficient. Reduce the number of optional parameters in your tool schemas (limit: 24).',
      ),
    );
    // a tool that is not strict counts for nothing
    expect(
      (await withFormat(optional(24), { tools: [tool('a', optional(30), false)] })).statusCode,
    ).toBe(200);
  });

  it('take 16 union-typed parameters (type arrays or anyOf), not 17', async () => {
    const unions = (n: number) =>
      closed(
        Object.fromEntries(
          Array.from({ length: n }, (_, i) => [
            `u${i}`,
            i % 2
              ? { type: ['string', 'null'] }
              : { anyOf: [{ type: 'string' }, { type: 'integer' }] },
          ]),
        ),
      );
    expect((await withFormat(unions(16))).statusCode).toBe(200);
    const res = await withFormat(unions(10), { tools: [tool('a', unions(7))] });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toEqual(
      refusal(
        'Schemas contains too many parameters with union types (17 parameters with type arrays or anyOf). This causes exponential compilation cost. Reduce the number of nullable or union-typed parameters (limit: 16 parameters with unions).',
      ),
    );
  });
});
