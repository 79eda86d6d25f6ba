import { Ajv } from 'ajv';
import { Ajv2020 } from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it, vi } from 'vitest';
import { regexes, z } from 'zod';
import {
  EXPANDED_NODES,
  generationProblem,
  schemaBudget,
  schemaInstance,
  schemaProblem,
  spendSchema,
  UnsatisfiableSchemaError,
} from '../../src/text/json-schema.js';
import { hintedKeywords, hintReader, MAX_HINT_CHARS } from '../../src/text/schema-hints.js';

/** An independent validator, so the test does not trust the module's own. */
const ajv = new Ajv({ strict: false });
addFormats.default(ajv);

type Schema = Record<string, unknown>;

const name = fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/);

const leaf: fc.Arbitrary<Schema> = fc.oneof(
  fc.record(
    {
      type: fc.constant('string'),
      minLength: fc.integer({ min: 0, max: 5 }),
      maxLength: fc.integer({ min: 5, max: 20 }),
    },
    { requiredKeys: ['type'] },
  ),
  fc.record({
    type: fc.constant('string'),
    format: fc.constantFrom('date-time', 'date', 'email', 'uuid', 'uri', 'ipv4', 'hostname'),
  }),
  fc.record({
    type: fc.constant('string'),
    pattern: fc.constantFrom('^[A-Z]{3}$', '^\\d{2,4}-[a-z]+$'),
  }),
  fc.record({
    enum: fc.uniqueArray(fc.oneof(fc.string({ maxLength: 8 }), fc.integer()), {
      minLength: 1,
      maxLength: 5,
    }),
  }),
  fc
    .tuple(fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: 0, max: 1000 }))
    .map(([min, span]) => ({ type: 'integer', minimum: min, maximum: min + span })),
  fc.record(
    { type: fc.constant('number'), minimum: fc.constant(0), exclusiveMaximum: fc.constant(1) },
    { requiredKeys: ['type'] },
  ),
  fc.constant({ type: 'boolean' }),
  fc.constant({ type: ['string', 'null'] }),
  fc.constant({ type: 'null' }),
);

const schema: fc.Arbitrary<Schema> = fc.letrec((tie) => ({
  node: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    tie('object'),
    tie('array'),
    tie('anyOf'),
  ),
  array: fc.record(
    {
      type: fc.constant('array'),
      items: tie('node'),
      minItems: fc.integer({ min: 0, max: 2 }),
      maxItems: fc.integer({ min: 2, max: 4 }),
    },
    { requiredKeys: ['type', 'items'] },
  ),
  anyOf: fc.array(tie('node'), { minLength: 1, maxLength: 3 }).map((anyOf) => ({ anyOf })),
  object: fc.dictionary(name, tie('node'), { maxKeys: 5 }).chain((properties) =>
    fc.record({
      type: fc.constant('object'),
      properties: fc.constant(properties),
      required: fc.subarray(Object.keys(properties)),
      additionalProperties: fc.constant(false),
    }),
  ),
})).object as fc.Arbitrary<Schema>;

/** The values made for a string pattern, one a seed, each matching it as JSON Schema reads it. */
async function expectPatternMade(pattern: string, seeds: number[]): Promise<void> {
  for (const seed of seeds) {
    const value = await schemaInstance({ type: 'string', pattern }, seed);
    expect(new RegExp(pattern, 'u').test(value as string), `${pattern}: ${value}`).toBe(true);
  }
}

describe('schemaInstance', () => {
  it('makes, for random schemas, values valid against them, the same for the same seed', async () => {
    await fc.assert(
      fc.asyncProperty(schema, fc.nat(), async (s, seed) => {
        const value = await schemaInstance(s, seed);
        expect(ajv.validate(s, value), JSON.stringify({ s, value, errors: ajv.errors })).toBe(true);
        expect(await schemaInstance(s, seed)).toEqual(value);
      }),
      { numRuns: 300 },
    );
  }, 90_000);

  it('makes, for random schemas with random hints in their descriptions, values valid against the schema as sent', async () => {
    // Hints as both SDKs write them, fitting the node or not: the schema as sent always wins.
    const hint = fc.oneof(
      fc.record(
        {
          minimum: fc.integer({ min: -50, max: 50 }),
          maximum: fc.integer({ min: -50, max: 50 }),
          multipleOf: fc.constantFrom(1, 2, 0.5),
          minLength: fc.nat(6),
          maxLength: fc.nat(12),
          minItems: fc.nat(3),
          maxItems: fc.nat(4),
          uniqueItems: fc.boolean(),
          pattern: fc.constantFrom('^[a-z]{2,5}$', '^[A-Z]{3}$', '^(a|b)+$'),
          format: fc.constantFrom('email', 'date', 'uuid'),
          enum: fc.array(fc.oneof(fc.string({ maxLength: 4 }), fc.integer(), fc.constant(null)), {
            minLength: 1,
            maxLength: 3,
          }),
        },
        { requiredKeys: [] },
      ),
    );
    const words = (k: string) => k.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`);
    const describe = (h: Record<string, unknown>, anthropic: boolean) =>
      anthropic
        ? `Field\n\n{${Object.entries(h)
            .map(([k, v]) => `${k}: ${JSON.stringify(v)}`)
            .join(', ')}}`
        : `Field\n${Object.entries(h)
            .map(([k, v]) => `${words(k)}: ${typeof v === 'string' ? v : JSON.stringify(v)}`)
            .join('; ')}.`;
    const hinted = (s: Schema, hints: Record<string, unknown>[], anthropic: boolean): Schema => {
      let i = 0;
      const walk = (node: Schema): Schema => {
        const out: Schema = { ...node };
        if (node.properties)
          out.properties = Object.fromEntries(
            Object.entries(node.properties as Record<string, Schema>).map(([k, v]) => [k, walk(v)]),
          );
        if (node.items) out.items = walk(node.items as Schema);
        if (node.anyOf) out.anyOf = (node.anyOf as Schema[]).map(walk);
        const h = hints[i++ % hints.length];
        if (h !== undefined && Object.keys(h).length > 0) out.description = describe(h, anthropic);
        return out;
      };
      return walk(s);
    };
    await fc.assert(
      fc.asyncProperty(
        schema,
        fc.array(hint, { minLength: 1, maxLength: 6 }),
        fc.boolean(),
        fc.nat(),
        async (base, hints, anthropic, seed) => {
          const s = hinted(base, hints, anthropic);
          const value = await schemaInstance(s, seed);
          expect(ajv.validate(s, value), JSON.stringify({ s, value, errors: ajv.errors })).toBe(
            true,
          );
        },
      ),
      { numRuns: 300 },
    );
  }, 90_000);

  it('answers a schema or refuses it the same whatever came before (no verdict depends on history)', async () => {
    // Met by a few seeds only, or by none: each seed's answer must not depend on the order.
    const hard = [
      { type: 'string', format: 'date', pattern: '^201' },
      { type: 'string', format: 'ipv4', pattern: '^10\\.' },
      { type: 'string', format: 'date', pattern: '^2024-' },
    ];
    const answers = async (seeds: number[]) => {
      vi.resetModules();
      const fresh = await import('../../src/text/json-schema.js');
      const out = new Map<string, unknown>();
      for (const seed of seeds) {
        for (const [i, s] of hard.entries()) {
          out.set(
            `${i}:${seed}`,
            await fresh.schemaInstance(structuredClone(s), seed).catch((e: Error) => e.message),
          );
        }
      }
      return out;
    };
    const seeds = Array.from({ length: 40 }, (_, i) => i * 7919 + 3);
    const forward = await answers(seeds);
    expect(await answers([...seeds].reverse())).toEqual(forward);
    for (const [i, s] of hard.entries()) {
      const mine = seeds.map((seed) => forward.get(`${i}:${seed}`));
      const refused = mine.filter((v) => v === 'no value satisfies this schema').length;
      expect(refused === 0 || refused === seeds.length).toBe(true); // all answered, or none
      for (const v of mine)
        if (typeof v !== 'string' || !v.startsWith('no value'))
          expect(ajv.validate(s, v)).toBe(true);
    }
  });

  it("makes zod's formats that carry a pattern, and an email within a length", async () => {
    const s = z.toJSONSchema(
      z.object({
        id: z.uuidv7(),
        at: z.iso.datetime({ precision: 3 }),
        day: z.iso.date(),
        ip: z.ipv4(),
        mail: z.email().max(12),
        long: z.string().email().min(30).max(40),
      }),
    ) as Schema;
    const check = new Ajv2020({ strict: false });
    addFormats.default(check);
    for (let seed = 0; seed < 20; seed++) {
      const value = await schemaInstance(s, seed);
      expect(check.validate(s, value), JSON.stringify({ value, errors: check.errors })).toBe(true);
    }
  });

  it('makes a pattern-only field beside a format-only one (an emoji beside a zod date-time)', async () => {
    const check = new Ajv2020({ strict: false });
    addFormats.default(check);
    check.addFormat('emoji', /./u);
    for (const fields of [
      { t: z.iso.datetime({ precision: 3 }), e: z.emoji() },
      { id: z.uuidv7(), e: z.emoji() },
    ]) {
      const s = z.toJSONSchema(z.object(fields)) as Schema;
      for (let seed = 0; seed < 10; seed++) {
        const value = await schemaInstance(s, seed);
        expect(check.validate(s, value), JSON.stringify({ value, errors: check.errors })).toBe(
          true,
        );
      }
    }
  });

  it("meets zod's startsWith, includes and endsWith together (patterns in allOf), and leaves other allOf patterns to Ajv", async () => {
    const s = z.toJSONSchema(
      z.object({ s: z.string().startsWith('a.b').includes('mid').endsWith('yz') }),
    ) as Schema;
    expect((s.properties as Record<string, Schema>).s?.allOf).toHaveLength(3);
    const check = new Ajv2020({ strict: false });
    for (let seed = 0; seed < 10; seed++) {
      const value = (await schemaInstance(s, seed)) as { s: string };
      expect(value.s.startsWith('a.b') && value.s.includes('mid') && value.s.endsWith('yz')).toBe(
        true,
      );
      expect(check.validate(s, value)).toBe(true);
    }
    // not literal: refused or met, never answered with a value that misses one
    const both = { type: 'string', allOf: [{ pattern: '^[a-c]{2}' }, { pattern: 'x$' }] };
    const value = await schemaInstance(both, 1).catch((e: Error) => e.message);
    expect(value === 'no value satisfies this schema' || ajv.validate(both, value)).toBe(true);
  });

  it('makes patterns that spell characters as \\uXXXX, \\u{...} and \\xHH, syntax characters included', async () => {
    for (const pattern of [
      '^[\\u00C0-\\u017F]+$',
      '^\\u00A3\\d+$',
      '^\\u{1F600}+$',
      '^[\\u4e00-\\u9fff]{2,4}$',
      '^\\x41\\u002E\\u005B\\x2d$',
      '^[\\x30-\\x39\\u002D]{3}$',
      '^\\\\u0041$',
    ]) {
      await expectPatternMade(pattern, [0, 1, 2, 3, 4]);
    }
  });

  it('follows a $ref to an $anchor (#name) as Ajv does', async () => {
    const s = {
      type: 'object',
      properties: {
        a: { $ref: '#addr' },
        list: { type: 'array', items: { $ref: '#item' }, minItems: 1 },
      },
      required: ['a', 'list'],
      $defs: {
        A: { $anchor: 'addr', type: 'string', pattern: '^A[0-9]$' },
        I: { $anchor: 'item', type: 'integer', minimum: 5, maximum: 6 },
      },
    };
    const check = new Ajv2020({ strict: false });
    for (let seed = 0; seed < 5; seed++) {
      const value = await schemaInstance(s, seed);
      expect(check.validate(s, value), JSON.stringify(value)).toBe(true);
    }
  });

  it("makes ajv-formats' own formats (url, iso-time, iso-date-time, json-pointer-uri-fragment)", async () => {
    for (const format of ['url', 'iso-time', 'iso-date-time', 'json-pointer-uri-fragment']) {
      const s = { type: 'string', format };
      for (let seed = 0; seed < 5; seed++) {
        const value = await schemaInstance(s, seed);
        expect(ajv.validate(s, value), `${format}: ${value}`).toBe(true);
      }
    }
  });

  it('checks the keywords of drafts 2019-09 and 2020-12 (minContains, unevaluatedProperties, dependentRequired) as well as draft-07 tuples', async () => {
    const check = new Ajv2020({ strict: false });
    const cases: Schema[] = [
      {
        type: 'object',
        properties: {
          tags: {
            type: 'array',
            items: { enum: ['urgent', 'bug', 'ui'] },
            contains: { const: 'urgent' },
            minContains: 1,
            maxContains: 1,
            minItems: 2,
          },
        },
        required: ['tags'],
      },
      {
        type: 'object',
        properties: { a: { type: 'string' }, b: { type: 'string' } },
        required: ['a'],
        minProperties: 2,
        unevaluatedProperties: false,
      },
      {
        type: 'object',
        properties: { a: { type: 'string' }, b: { type: 'string' } },
        required: ['a'],
        dependentRequired: { a: ['b'] },
      },
      {
        type: 'object',
        properties: { a: { type: 'string' } },
        required: ['a'],
        dependentSchemas: { a: { properties: { n: { const: 1 } }, required: ['n'] } },
      },
    ];
    for (const s of cases) {
      for (let seed = 0; seed < 10; seed++) {
        const value = await schemaInstance(s, seed).catch((e: Error) => e.message);
        if (value === 'no value satisfies this schema') continue;
        expect(check.validate(s, value), JSON.stringify({ s, value })).toBe(true);
      }
    }
    // Every seed refused would be a satisfiable schema refused.
    const answered = await Promise.all(
      cases.map((s) =>
        schemaInstance(s, 1).then(
          () => true,
          () => false,
        ),
      ),
    );
    expect(answered).toEqual([true, true, true, true]);
    const tuple = {
      type: 'array',
      items: [{ type: 'string' }, { type: 'integer' }],
      additionalItems: false,
      minItems: 2,
    };
    const value = await schemaInstance(tuple, 2);
    expect(ajv.validate(tuple, value)).toBe(true);
  });

  it('refuses an $id that is not a string in its own words (Ajv fails on it with a TypeError)', () => {
    for (const $id of [1, true, {}]) {
      expect(schemaProblem({ type: 'object', $id })).toBe(
        'a keyword has a value of the wrong type (an $id must be a string)',
      );
    }
  });

  it('keeps answering once schemas of more than 16 MiB have been compiled (its Ajv is renewed)', async () => {
    const first = { type: 'object', properties: { n: { type: 'integer', minimum: 7 } } };
    const before = await schemaInstance(first, 3);
    const wide = 'x'.repeat(1024 * 1024);
    for (let i = 0; i < 17; i++) schemaProblem({ enum: [`${wide}${i}`] });
    expect(await schemaInstance(structuredClone(first), 3)).toEqual(before);
    expect(ajv.validate(first, before)).toBe(true);
  });

  it('reads schemas that name their dialect, $defs and $ref included', async () => {
    const s = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      properties: { list: { type: 'array', items: { $ref: '#/$defs/item' }, minItems: 1 } },
      required: ['list'],
      additionalProperties: false,
      $defs: {
        item: {
          type: 'object',
          properties: { id: { type: 'string', format: 'uuid' } },
          required: ['id'],
          additionalProperties: false,
        },
      },
    };
    const value = (await schemaInstance(s, 7)) as { list: Array<{ id: string }> };
    expect(value.list.length).toBeGreaterThan(0);
    expect(value.list[0]?.id).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('makes tuples written either way: 2020-12 prefixItems (zod 4) and draft-07 array items', async () => {
    const zod4 = z.toJSONSchema(
      z.object({
        pair: z.tuple([z.string(), z.number()]),
        rest: z.tuple([z.boolean()], z.string()),
        list: z.array(z.string()),
      }),
    ) as Schema;
    expect((zod4.properties as Record<string, Schema>).pair).toEqual({
      type: 'array',
      prefixItems: [{ type: 'string' }, { type: 'number' }],
      items: false,
      minItems: 2,
      maxItems: 2,
    });
    const { $schema: _, ...zod4Plain } = zod4;
    const draft2020 = new Ajv2020({ strict: false });
    const draft7 = {
      type: 'object',
      properties: {
        t: {
          type: 'array',
          items: [{ type: 'string' }, { type: 'integer' }],
          additionalItems: false,
          minItems: 2,
        },
      },
      required: ['t'],
    };
    for (let seed = 0; seed < 20; seed++) {
      const value = (await schemaInstance(zod4, seed)) as { pair: unknown[] };
      expect(draft2020.validate(zod4Plain, value), JSON.stringify(value)).toBe(true);
      expect(value.pair).toHaveLength(2);
      const old = (await schemaInstance(draft7, seed)) as { t: unknown[] };
      expect(ajv.validate(draft7, old), JSON.stringify(old)).toBe(true);
      expect(Array.isArray(old.t)).toBe(true);
    }
  });

  it("says nothing on the console of a client's unknown format (the log level decides what is said)", async () => {
    const warn = vi.spyOn(console, 'warn').mockImplementation(() => {});
    const log = vi.spyOn(console, 'log').mockImplementation(() => {});
    try {
      expect(typeof (await schemaInstance({ type: 'string', format: 'no-such-format' }, 1))).toBe(
        'string',
      );
      expect([warn.mock.calls, log.mock.calls]).toEqual([[], []]);
    } finally {
      warn.mockRestore();
      log.mockRestore();
    }
  });

  it('refuses a schema nothing satisfies, and names what is wrong with a broken one', async () => {
    await expect(schemaInstance({ type: 'integer', minimum: 5, maximum: 4 }, 1)).rejects.toThrow(
      UnsatisfiableSchemaError,
    );
    expect(schemaProblem({ type: 'objekt' })).toMatch(/schema is invalid/);
    expect(
      schemaProblem({ type: 'object', properties: { a: { type: 'string' } } }),
    ).toBeUndefined();
  });

  it('keeps the keywords of deeply nested values (found by the property test)', async () => {
    let schema: object = {
      type: 'object',
      properties: { d: { type: 'integer', minimum: -713, maximum: -359 } },
      required: ['d'],
      additionalProperties: false,
    };
    for (let i = 0; i < 8; i++) {
      schema = { type: 'array', items: schema, minItems: 1 };
    }
    const ajv = new Ajv({ strict: false });
    for (const seed of [0, 1, 2, 3])
      expect(ajv.validate(schema, await schemaInstance(schema, seed))).toBe(true);
  });

  it('says so when a schema nests too deep, rather than calling it too large', () => {
    let schema: object = { type: 'string' };
    for (let i = 0; i < 100; i++) schema = { type: 'object', properties: { a: schema } };
    expect(generationProblem(schema)).toBe(
      'it nests deeper than 64 levels, more than the emulator makes values for',
    );
  });

  it('refuses a $ref that refers back to itself without end (found by fuzzing: a 500)', async () => {
    for (let i = 0; i < 2; i++) {
      await expect(schemaInstance({ $ref: '#' }, 1)).rejects.toThrow(
        new UnsatisfiableSchemaError('its $ref refers back to itself without end'),
      );
    }
  });
});

const num = (bounds: object, key: string, fallback: number) =>
  (bounds as Record<string, number>)[key] ?? fallback;

describe('hostile schemas (found by an adversarial run)', () => {
  const NODE = {
    type: 'object',
    properties: { c: { type: 'array', items: { $ref: '#/$defs/n' }, minItems: 1 } },
    required: ['c'],
  };

  it('refuses a node that requires a list of itself, without following it to the depth limit', async () => {
    // Followed to maxDepth, 3^65 nodes: minutes of a blocked loop, then out of memory.
    for (const minItems of [1, 3]) {
      const schema = {
        type: 'object',
        $defs: { n: { ...NODE, properties: { c: { ...NODE.properties.c, minItems } } } },
        properties: { root: { $ref: '#/$defs/n' } },
        required: ['root'],
      };
      // and again, with any seed, without trying again
      for (const seed of [1, 2]) {
        await expect(schemaInstance(schema, seed)).rejects.toThrow(
          new UnsatisfiableSchemaError('no value satisfies this schema'),
        );
      }
    }
  });

  it('still makes values for a recursive schema a finite value satisfies', async () => {
    const schema = {
      type: 'object',
      $defs: {
        n: {
          type: 'object',
          properties: {
            v: { type: 'integer' },
            c: { type: 'array', items: { $ref: '#/$defs/n' } },
          },
          required: ['v'],
        },
      },
      properties: { root: { $ref: '#/$defs/n' } },
      required: ['root'],
    };
    for (const seed of [1, 2, 3])
      expect(ajv.validate(schema, await schemaInstance(schema, seed))).toBe(true);
  });

  it('checks patterns in linear time, and lookaround and backreferences within a time bound', async () => {
    const string = (x: object) => ({ type: 'object', properties: { x }, required: ['x'] });
    // ^(a|a)*$ tried on 40 a's and a "!" by a backtracking engine: hours.
    await expect(
      schemaInstance(
        string({ type: 'string', allOf: [{ pattern: '^a{40}!$' }, { pattern: '^(a|a)*$' }] }),
        1,
      ),
    ).rejects.toThrow(new UnsatisfiableSchemaError('no value satisfies this schema'));
    for (const pattern of ['^(a|a)*$', '^(a+)+$', '^[0-9]{3}-[a-z]{2}$', '^[A-Z][a-z]+$']) {
      const schema = string({ type: 'string', pattern });
      const value = (await schemaInstance(schema, 3)) as { x: string };
      expect(new RegExp(pattern, 'u').test(value.x), pattern).toBe(true);
    }
    // linear, but 2000 instructions a character: refused as too large a program, compiled
    // (within twice the limit by the estimate) or not (past it)
    expect(generationProblem(string({ type: 'string', pattern: '^[ab]{1000}[cd]{999}$' }))).toBe(
      'a pattern: /^[ab]{1000}[cd]{999}$/ compiles to 2003 instructions, more than the 2000 the emulator runs (large repetition counts cost that much on every character)',
    );
    // zod's IPv6 (710 instructions, checked against the values the emulator makes): answered
    for (const seed of [1, 2, 3]) {
      const ipv6 = string({ type: 'string', format: 'ipv6', pattern: regexes.ipv6.source });
      const value = (await schemaInstance(ipv6, seed)) as { x: string };
      expect(regexes.ipv6.test(value.x), value.x).toBe(true);
    }
    const huge = '\\p{L}{1000}'.repeat(60); // 60 000 instructions: 70 ms and tens of MB to compile
    expect(generationProblem(string({ type: 'string', pattern: huge }))).toBe(
      `a pattern: /${huge.slice(0, 80)}.../ compiles to about 60000 instructions, more than the 2000 the emulator runs (large repetition counts cost that much on every character)`,
    );
    // lookaround and backreferences, which RE2 cannot run: JavaScript's engine, time-bounded
    for (const pattern of ['^(?=.*\\d).{8,}$', '^(?!x)[a-z]{3}$', '^[a-z]+(?=\\d)\\d+$']) {
      const schema = string({ type: 'string', pattern });
      expect(schemaProblem(schema)).toBeUndefined();
      expect(generationProblem(schema)).toBeUndefined();
      const value = (await schemaInstance(schema, 1)) as { x: string };
      expect(new RegExp(pattern, 'u').test(value.x), `${pattern}: ${value.x}`).toBe(true);
    }
    // (the generator cannot make a backreference's repeat: such a value comes from elsewhere)
    const repeated = string({
      type: 'string',
      pattern: '^(\\w)\\1-(?<y>\\d)\\k<y>$',
      enum: ['aa-11', 'ab-12'],
    });
    expect(await schemaInstance(repeated, 1)).toEqual({ x: 'aa-11' });
    expect(
      generationProblem({
        type: 'object',
        patternProperties: { '^(\\w)\\1$': { type: 'string' } },
      }),
    ).toBeUndefined();
  });

  it('counts a schema before compiling it: one over 2000 nodes, or a request over 5000, is refused', () => {
    const wide = (n: number, tag: string) => ({
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: n }, (_, k) => [`${tag}${k}`, { type: 'string' }]),
      ),
    });
    const over = wide(999, 'over'); // 3 + 2 × 999 = 2001 nodes
    expect(schemaProblem(over)).toBeUndefined();
    expect(generationProblem(over)).toBe(
      'it has more than 2000 JSON nodes (a pattern counting one more per 200 instructions it compiles to, 100 more with lookaround or a backreference), more than the emulator checks in one schema',
    );
    expect(generationProblem(wide(998, 'at'))).toBeUndefined(); // 1999
    expect(spendSchema(schemaBudget(), over)).toBe(
      'it has more than 2000 JSON nodes (a pattern counting one more per 200 instructions it compiles to, 100 more with lookaround or a backreference), more than the emulator checks in one schema',
    );
    const budget = schemaBudget();
    for (let i = 0; i < 2; i++) expect(spendSchema(budget, wide(998, `b${i}`))).toBeUndefined();
    expect(spendSchema(budget, wide(499, 'c'))).toBeUndefined(); // 1001
    expect(budget.left).toBe(1);
    expect(spendSchema(budget, { type: 'string', enum: [1, 2] })).toBe(
      "the request's schemas have more than 5000 JSON nodes in all, more than the emulator checks in one request",
    );
    // A pattern weighs one node more per 200 instructions, before anything is compiled: 3 + 5.
    const weighed = schemaBudget();
    spendSchema(weighed, { type: 'string', pattern: '^[ab]{999}$' });
    expect(weighed.left).toBe(5000 - 8);
    spendSchema(weighed, { type: 'object', patternProperties: { '^[ab]{999}$': {} } });
    expect(weighed.left).toBe(5000 - 8 - 9); // 4 nodes + 5
    // and one read from a description (either form) one more for its compiling: 3 + 1 + 5
    spendSchema(weighed, { type: 'string', description: 'Code\n\n{pattern: "^[ab]{999}$"}' });
    expect(weighed.left).toBe(5000 - 8 - 9 - 9);
    spendSchema(weighed, { type: 'string', description: 'Code\npattern: ^[ab]{999}$.' });
    expect(weighed.left).toBe(5000 - 8 - 9 - 9 - 9);
    spendSchema(weighed, { type: 'string', description: 'A pattern: no hint.' });
    expect(weighed.left).toBe(5000 - 8 - 9 - 9 - 9 - 3);
    // one only a backtracking engine runs (lookaround), 100 more: 3 + 100
    spendSchema(weighed, { type: 'string', pattern: '^(?=.*\\d).+$' });
    expect(weighed.left).toBe(5000 - 8 - 9 - 9 - 9 - 3 - 103);
    // keywords that cost Ajv more than a node: contains 6 more, propertyNames 2, format 1
    const left = weighed.left;
    spendSchema(weighed, { contains: { const: 1 }, propertyNames: {}, format: 'x', toString: 1 });
    expect(weighed.left).toBe(left - (6 + 2 + 1 + 6)); // 6 nodes, toString none more
    // so 300 distinct patterns near the limit are refused as a schema too large to compile
    const many = {
      type: 'object',
      properties: Object.fromEntries(
        Array.from({ length: 300 }, (_, k) => [
          `p${k}`,
          { type: 'string', pattern: `^${k}[ab]{1000}[cd]{990}$` },
        ]),
      ),
    };
    expect(spendSchema(schemaBudget(), many)).toMatch(/^it has more than 2000 JSON nodes/);
  });

  it('follows a $ref through the schema own keys only: #/__proto__ points at nothing', async () => {
    const pointing = (ref: string) => ({
      type: 'object',
      properties: { a: { $ref: ref } },
      required: ['a'],
      $defs: { x: { type: 'integer', minimum: 3, maximum: 3 }, 'a/b c': { const: 'y' } },
    });
    for (const ref of ['#/__proto__', '#/constructor', '#/$defs/x/hasOwnProperty', '#/$defs/z']) {
      expect(schemaProblem(pointing(ref)), ref).toBe(`can't resolve reference ${ref} from id #`);
      await expect(schemaInstance(pointing(ref), 1)).rejects.toThrow(
        new UnsatisfiableSchemaError(`can't resolve reference ${ref} from id #`),
      );
    }
    // pointers as URI fragments: ~1 for a slash, percent-encoding
    expect(await schemaInstance(pointing('#/$defs/x'), 1)).toEqual({ a: 3 });
    expect(await schemaInstance(pointing('#/$defs/a~1b%20c'), 1)).toEqual({ a: 'y' });
  });

  it(`refuses a schema whose $refs expand it past ${EXPANDED_NODES} nodes (Ajv checks every path)`, async () => {
    // anyOf of two $refs to the next, chained: 2^depth paths; 23 deep (2 KB) ran out of memory
    const chain = (depth: number, ref: (i: number) => string, anchored = false) => {
      const defs: Record<string, unknown> = {};
      for (let i = 0; i < depth; i++) {
        defs[`d${i}`] = {
          ...(anchored ? { $anchor: `a${i}` } : {}),
          anyOf: [{ $ref: ref(i + 1) }, { $ref: ref(i + 1) }],
        };
      }
      defs[`d${depth}`] = anchored ? { $anchor: `a${depth}`, type: 'string' } : false;
      return {
        type: 'object',
        properties: { a: { $ref: ref(0) } },
        required: ['a'],
        definitions: defs,
      };
    };
    const message = `its $refs expand it to more than ${EXPANDED_NODES} nodes, more than the emulator checks a value against`;
    const pointer = (i: number) => `#/definitions/d${i}`;
    for (const depth of [15, 23, 60]) {
      expect(generationProblem(chain(depth, pointer))).toBe(message);
    }
    expect(generationProblem(chain(40, (i) => `#a${i}`, true))).toBe(message);
    // within it: checked, and found to have no value (its leaf is `false`)
    await expect(schemaInstance(chain(13, pointer), 1)).rejects.toThrow(
      new UnsatisfiableSchemaError('no value satisfies this schema'),
    );
    // definitions count where a $ref reaches them, once each path: a chain of 450 is 450 deep
    const defs = Object.fromEntries(
      Array.from({ length: 451 }, (_, i) => [
        `a${i}`,
        i < 450 ? { $ref: `#/$defs/a${i + 1}` } : { type: 'string' },
      ]),
    );
    const linked = { type: 'object', properties: { x: { $ref: '#/$defs/a0' } }, $defs: defs };
    expect(generationProblem(linked)).toBeUndefined();
    // a recursive schema is bounded by its values, not by this
    const tree = {
      type: 'object',
      properties: { name: { type: 'string' }, kids: { type: 'array', items: { $ref: '#' } } },
      required: ['name'],
    };
    expect(generationProblem(tree)).toBeUndefined();
  });

  it('bounds the values a contains makes as a list length is (minContains 1e6 made as many)', async () => {
    const contains = (bounds: object) => ({
      type: 'array',
      contains: { type: 'string' },
      items: { type: ['string', 'integer'] },
      ...bounds,
    });
    expect(generationProblem(contains({ minContains: 1e6 }))).toBe(
      'its values are too large to generate (more than 100000 JSON nodes or characters)',
    );
    for (const bounds of [{ maxContains: 1e9 }, { minContains: 5 }, {}]) {
      const value = (await schemaInstance(contains(bounds), 1)) as unknown[];
      // (draft-07, which Ajv reads, has contains but no counts: at least one is checked)
      expect(value.some((item) => typeof item === 'string')).toBe(true);
      expect(value.length).toBeLessThanOrEqual(Math.max(3, num(bounds, 'minContains', 0)));
    }
  });

  it('compiles a definition referred to many times once, not once a reference (Ajv inlineRefs)', async () => {
    const schema = {
      type: 'object',
      $defs: { a: { anyOf: Array.from({ length: 200 }, (_, k) => ({ minimum: k })) } },
      properties: {
        x: { anyOf: Array.from({ length: 200 }, () => ({ $ref: '#/$defs/a' })) },
      },
      required: ['x'],
    }; // 14 s of compiling when inlined 200 times
    expect(schemaProblem(schema)).toBeUndefined();
    // (the test's own validator would take those 14 s too: it does not inline either)
    const own = new Ajv({ strict: false, inlineRefs: false });
    expect(own.validate(schema, await schemaInstance(schema, 1))).toBe(true);
  });

  it('follows only local $refs, and never hands the generator a name pattern', async () => {
    const byId = {
      type: 'object',
      $defs: { n: { $id: 'urn:n', type: 'object', properties: { p: { $ref: 'urn:n' } } } },
      properties: { root: { $ref: 'urn:n' } },
    };
    expect(generationProblem(byId)).toBe(
      'it has a $ref within an $id inside the schema, which the emulator does not follow',
    );
    const rootId = {
      $id: 'https://example.com/n',
      type: 'object',
      properties: { p: { $ref: 'https://example.com/n' } },
    };
    expect(generationProblem(rootId)).toBe(
      'its $ref "https://example.com/n" is not a local reference (#/...), the only kind the emulator follows',
    );
    // The generator would try the name on ^(a|a)*$ with a backtracking engine: hours.
    const name = `${'a'.repeat(40)}!`;
    const schema = {
      type: 'object',
      properties: { [name]: { type: 'string' } },
      required: [name],
      patternProperties: { '^(a|a)*$': { type: 'integer' } },
      propertyNames: { pattern: '^(a|a)*!?$' },
    };
    const value = (await schemaInstance(schema, 1)) as Record<string, unknown>;
    // (not checked by the test's own Ajv, whose engine backtracks: the module's own proved it)
    expect(typeof value[name]).toBe('string');
    for (const key of Object.keys(value)) expect(key === name || /^a*!?$/.test(key)).toBe(true);
  });

  it('makes the names an object needs when patternProperties or propertyNames govern them (minProperties, required names the properties do not define)', async () => {
    const schemas: Schema[] = [
      {
        type: 'object',
        patternProperties: { '^x_[a-z]+$': { type: 'string' } },
        additionalProperties: false,
        minProperties: 2,
      },
      {
        type: 'object',
        propertyNames: { pattern: '^[A-Z]{3}$' },
        additionalProperties: { type: 'integer' },
        minProperties: 2,
      },
      { type: 'object', propertyNames: { enum: ['a', 'b', 'c'] }, minProperties: 2 },
      { type: 'object', propertyNames: { format: 'email' }, minProperties: 1 },
      {
        type: 'object',
        propertyNames: { maxLength: 3 },
        patternProperties: { '^[a-z]+$': { type: 'boolean' } },
        additionalProperties: false,
        minProperties: 2,
      },
      {
        type: 'object',
        properties: {
          labels: {
            type: 'object',
            patternProperties: { '^[a-z]{2}-[A-Z]{2}$': { type: 'string', minLength: 1 } },
            additionalProperties: false,
            minProperties: 2,
          },
        },
        required: ['labels'],
      },
      {
        type: 'array',
        items: { type: 'object', propertyNames: { pattern: '^k' }, minProperties: 1 },
        minItems: 2,
      },
    ];
    for (const schema of schemas) {
      for (const seed of [1, 2, 3]) {
        const value = await schemaInstance(schema, seed);
        expect([schema, ajv.validate(schema, value)]).toEqual([schema, true]);
      }
    }
    // a required name the properties leave to a pattern gets that pattern's schema
    const required = {
      type: 'object',
      patternProperties: { '^n\\d+$': { type: 'integer', minimum: 5 } },
      additionalProperties: false,
      required: ['n1', 'n22'],
    };
    const value = (await schemaInstance(required, 1)) as Record<string, unknown>;
    expect(Object.keys(value)).toEqual(['n1', 'n22']);
    expect(ajv.validate(required, value)).toBe(true);
    // a name meets every pattern it matches, a name in `properties` included
    for (const schema of [
      {
        type: 'object',
        properties: { abc: { type: 'string' } },
        patternProperties: { '^a': { const: 'fixed-value' } },
        required: ['abc'],
      },
      {
        type: 'object',
        patternProperties: { '^a': { type: 'string' }, b$: { type: 'string', minLength: 30 } },
        required: ['ab'],
        additionalProperties: false,
      },
      {
        type: 'object',
        patternProperties: {
          ...Object.fromEntries(
            Array.from({ length: 60 }, (_, i) => [`^zz${i}$`, { type: 'integer' }]),
          ),
          '^r_': { const: 'Z' },
        },
        required: Array.from({ length: 40 }, (_, i) => `r_${i}`),
      },
    ]) {
      expect(ajv.validate(schema, await schemaInstance(schema, 1))).toBe(true);
    }
    expect(
      await schemaInstance(
        {
          type: 'object',
          properties: { abc: { type: 'string' } },
          patternProperties: { '^a': { const: 'fixed-value' } },
          required: ['abc'],
        },
        1,
      ),
    ).toEqual({ abc: 'fixed-value' });
    // what no object satisfies is still refused
    await expect(
      schemaInstance({ type: 'object', propertyNames: { enum: ['a'] }, minProperties: 2 }, 1),
    ).rejects.toThrow(new UnsatisfiableSchemaError('no value satisfies this schema'));
  });

  it('checks a format on at most 4096 characters: a longer string is not of it', async () => {
    // ajv-formats' url check on 60 KB took 24 s
    const schema = {
      type: 'object',
      properties: { u: { type: 'string', format: 'url', const: `http://${':'.repeat(60_000)}!` } },
      required: ['u'],
    };
    await expect(schemaInstance(schema, 1)).rejects.toThrow(
      new UnsatisfiableSchemaError('no value satisfies this schema'),
    );
    const ok = {
      type: 'object',
      properties: { u: { type: 'string', format: 'email' } },
      required: ['u'],
    };
    expect(ajv.validate(ok, await schemaInstance(ok, 1))).toBe(true);
  });

  it('lets two schemas use the same $id (another key, another session): Ajv keeps none of them', async () => {
    for (let i = 0; i < 3; i++) {
      const schema = {
        $id: 'http://example.com/s.json',
        type: 'object',
        properties: { [`field${i}`]: { type: 'integer' } },
        required: [`field${i}`],
      };
      expect(schemaProblem(schema)).toBeUndefined();
      expect(Object.keys((await schemaInstance(schema, 1)) as object)).toEqual([`field${i}`]);
    }
  });
});

describe('keywords a client moved into a description', () => {
  it.each([
    ['{minimum: 0, maximum: 10}', { minimum: 0, maximum: 10 }],
    [
      'A score.\n\n{minimum: 1, enum: ["a, b: c", "d"], pattern: "^x, y: z$"}',
      { minimum: 1, enum: ['a, b: c', 'd'], pattern: '^x, y: z$' },
    ],
    [
      'minimum: 0; exclusive maximum: 10; multiple of: 0.5.',
      { minimum: 0, exclusiveMaximum: 10, multipleOf: 0.5 },
    ],
    [
      'Codes\nmin items: 1; max items: 5; unique items: true.',
      { minItems: 1, maxItems: 5, uniqueItems: true },
    ],
    ['pattern: ^[A-Z]{3}$; min length: 3.', { pattern: '^[A-Z]{3}$', minLength: 3 }],
    // Not hints: prose, values of the wrong kind, a pattern the emulator would not run.
    ['The minimum: zero.', {}],
    ['{maxItems: -1, minimum: "0", const: {"a": 1}}', {}],
    ['pattern: (a+)+\\1.', {}],
    ['Just text {with braces}', {}],
    ['{minimum: 0, }', {}],
    ['{minimum: 0,maximum: 2}', {}],
    ['{enum: ["a\\", b: \\"c", "d"], minimum: 2}', { enum: ['a", b: "c', 'd'], minimum: 2 }],
  ])('reads %j', (description, expected) => {
    expect(hintedKeywords(description)).toEqual(expected);
  });

  it('makes values within them (the keywords the schema has win), valid against the schema as sent', async () => {
    const schema = {
      type: 'object',
      properties: {
        rating: { type: 'number', description: 'minimum: 0; maximum: 10.' },
        count: { type: 'integer', minimum: 5, description: '{minimum: 0, maximum: 7}' },
        tags: {
          type: 'array',
          items: { type: 'string', description: '{enum: ["x", "y"]}' },
          description: 'min items: 2; max items: 3.',
        },
      },
      required: ['rating', 'count', 'tags'],
      additionalProperties: false,
    };
    for (let seed = 0; seed < 20; seed++) {
      const value = (await schemaInstance(schema, seed)) as {
        rating: number;
        count: number;
        tags: string[];
      };
      expect(ajv.validate(schema, value)).toBe(true);
      expect(value.rating).toBeGreaterThanOrEqual(0);
      expect(value.rating).toBeLessThanOrEqual(10);
      expect(value.count).toBeGreaterThanOrEqual(5);
      expect(value.count).toBeLessThanOrEqual(7);
      expect(value.tags.length).toBeGreaterThanOrEqual(2);
      expect(value.tags.length).toBeLessThanOrEqual(3);
      for (const tag of value.tags) expect(['x', 'y']).toContain(tag);
    }
  });

  it(`reads no hint longer than ${MAX_HINT_CHARS} characters, and parses each value once`, () => {
    const hostile = `{a: "${', b: '.repeat(200_000)}}`;
    expect(hintedKeywords(hostile)).toEqual({});
    expect(hintedKeywords(`{minimum: 1, enum: ["${'x'.repeat(MAX_HINT_CHARS)}"]}`)).toEqual({});
    // The longest hint read, each `, b: ` a place a value might end: one parse, not one each.
    const parse = vi.spyOn(JSON, 'parse');
    try {
      const longest = `{a: "${', b: '.repeat((MAX_HINT_CHARS - 8) / 5)}}`.slice(0, MAX_HINT_CHARS);
      expect(hintedKeywords(longest)).toEqual({});
      expect(parse).toHaveBeenCalledTimes(1);
      parse.mockClear();
      const nested = `{enum: [${'[, b: '.repeat(500)}}`;
      expect(hintedKeywords(nested)).toEqual({});
      expect(parse).toHaveBeenCalledTimes(1);
    } finally {
      parse.mockRestore();
    }
  });

  it('reads no keyword an object has by inheritance, and compiles at most 16 hinted patterns per schema', () => {
    expect(hintedKeywords('{hasOwnProperty: "minimum", toString: "x", constructor: 2}')).toEqual(
      {},
    );
    const read = hintReader();
    const nodes = Array.from({ length: 20 }, (_, i) =>
      read({ type: 'string', description: `{pattern: "^a{${i + 1}}$"}` }),
    );
    expect(nodes.filter((node) => 'pattern' in node)).toHaveLength(16);
    // And at most 256 KiB of descriptions: a node past it is taken as it is.
    const wide = hintReader();
    const long = { type: 'integer', description: `${'x'.repeat(200 * 1024)}\n\n{minimum: 1}` };
    const hinted = wide(long);
    expect(hinted).toMatchObject({ minimum: 1 });
    const past = { ...long };
    expect(wide(past)).toBe(past);
    expect(wide(long)).toBe(hinted); // a node reached again is not read again
    expect(nodes[0]).toEqual({
      pattern: '^a{1}$',
      type: 'string',
      description: '{pattern: "^a{1}$"}',
    });
  });

  it('makes finite numbers for the full float64 range, hinted or not (JSON would write null)', async () => {
    const max = 1.7976931348623157e308;
    const direct = {
      type: 'object',
      properties: { n: { type: 'number', minimum: -max, maximum: max } },
      required: ['n'],
      additionalProperties: false,
    };
    const hinted = {
      type: 'object',
      properties: {
        n: { type: 'integer', description: `Count\n\n{minimum: ${-max}, maximum: ${max}}` },
      },
      required: ['n'],
      additionalProperties: false,
    };
    for (const schema of [direct, hinted]) {
      for (let seed = 0; seed < 5; seed++) {
        const value = (await schemaInstance(schema, seed)) as { n: number };
        expect(Number.isFinite(value.n)).toBe(true);
        expect(ajv.validate(schema, JSON.parse(JSON.stringify(value)))).toBe(true);
      }
    }
  });

  it('makes values zod itself accepts for its string formats, lookaheads and all', async () => {
    const formats = {
      hostname: z.hostname(),
      duration: z.iso.duration(),
      emoji: z.emoji(),
      jwt: z.jwt(),
      rfcEmail: z.email({ pattern: z.regexes.rfc5322Email }),
      unicodeEmail: z.email({ pattern: z.regexes.unicodeEmail }),
      ipv6: z.ipv6(),
      cidrv6: z.cidrv6(),
      offset: z.iso.datetime({ offset: true }),
      timestamp: z.int().min(1_000_000_000),
      name: z.string().regex(/^\p{Lu}\p{Ll}+$/u),
    };
    const tool = z.object(formats);
    const schema = z.toJSONSchema(tool);
    for (const seed of [1, 2, 3]) {
      const value = await schemaInstance(schema, seed);
      const parsed = tool.safeParse(value);
      expect(parsed.success, JSON.stringify(parsed.error?.issues)).toBe(true);
    }
  });

  it('makes numbers for a range open at one end and past the generator own ±1000', async () => {
    for (const range of [
      { minimum: 1000 },
      { exclusiveMinimum: 1000 },
      { minimum: 1_000_000_000 }, // a Unix time
      { maximum: -1e6 },
      { exclusiveMinimum: 1e300 },
      { minimum: 9007199254740000 },
      { maximum: -1.7e308 },
    ]) {
      for (const type of ['number', 'integer']) {
        const schema = { type, ...range };
        const value = await schemaInstance(schema, 1);
        expect(ajv.validate(schema, value), JSON.stringify(schema)).toBe(true);
        expect(Number.isFinite(value)).toBe(true);
      }
    }
  });

  it('makes strings for patterns with Unicode properties (the generator reads \\p{Lu} as a p)', async () => {
    for (const pattern of [
      '^\\p{Lu}\\p{Ll}+$',
      '^[\\p{L}\\p{N}_]{3,10}$',
      '^\\p{L}+(?: \\p{L}+)*$',
      '^[^\\p{L}]+$',
      '^\\p{Uppercase_Letter}{2}-\\p{Nd}{4}$',
    ]) {
      await expectPatternMade(pattern, [1, 2, 3]);
    }
  });

  it('falls back to the schema as sent when the hints cannot be met together', async () => {
    const schema = { type: 'integer', maximum: 3, description: '{minimum: 10}' };
    const value = await schemaInstance(schema, 1);
    expect(ajv.validate(schema, value)).toBe(true);
  });
});

describe('recursive schemas', () => {
  it('answer a tree with a smaller tree (shorter lists) instead of refusing it as too large', async () => {
    const tree = {
      type: 'object',
      properties: {
        name: { type: 'string' },
        children: { type: 'array', items: { $ref: '#' } },
      },
      required: ['name', 'children'],
      additionalProperties: false,
    };
    expect(generationProblem(tree)).toBeUndefined();
    const sizes = new Set<number>();
    for (let seed = 0; seed < 10; seed++) {
      const value = await schemaInstance(tree, seed);
      expect(ajv.validate(tree, value)).toBe(true);
      sizes.add(JSON.stringify(value).length);
    }
    expect(sizes.size).toBeGreaterThan(1); // trees, not always the empty one
  });

  it('keep a list its minItems even when lists are shortened', async () => {
    const schema = {
      $defs: {
        node: {
          type: 'object',
          properties: { kids: { type: 'array', items: { $ref: '#/$defs/node' } } },
          required: ['kids'],
          additionalProperties: false,
        },
      },
      type: 'array',
      minItems: 2,
      items: { $ref: '#/$defs/node' },
    };
    const value = (await schemaInstance(schema, 3)) as unknown[];
    expect(ajv.validate(schema, value)).toBe(true);
    expect(value.length).toBeGreaterThanOrEqual(2);
  });
});
