import { Ajv } from 'ajv';
import addFormats from 'ajv-formats';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { readSaid } from '../../src/text/believable.js';
import { schemaInstance } from '../../src/text/json-schema.js';

const ajv = new Ajv({ strict: false });
addFormats.default(ajv);

type Schema = Record<string, unknown>;
const closed = (properties: Record<string, Schema>, required = Object.keys(properties)) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});
/** The value made for a schema from a prompt (seed 1), proven against the schema. */
async function made(schema: Schema, prompt: string, seed = 1): Promise<unknown> {
  const value = await schemaInstance(schema, seed, undefined, () => readSaid(prompt));
  expect(ajv.validate(schema, value), JSON.stringify(ajv.errors)).toBe(true);
  return value;
}

describe('readSaid', () => {
  it('reads names, places, quoted text, numbers with their neighbours, addresses and dates', () => {
    expect(
      readSaid(
        'Please book "Chez Marie" in Lyon for Bob Smith and 2 guests on 2026-12-24; mail bob@example.org, see https://example.org/menu. Alice is 30.',
      ),
    ).toEqual({
      names: ['Chez Marie', 'Lyon', 'Bob Smith', 'Alice'],
      places: ['Lyon'],
      quoted: ['Chez Marie'],
      numbers: [
        { value: 2, near: ['bob', 'smith', 'and', 'guests', 'on', 'mail'] },
        { value: 30, near: ['see', 'alice', 'is'] },
      ],
      emails: ['bob@example.org'],
      urls: ['https://example.org/menu'],
      dates: ['2026-12-24'],
      text: 'Please book "Chez Marie" in Lyon for Bob Smith and 2 guests on 2026-12-24; mail bob@example.org, see https://example.org/menu. Alice is 30.',
    });
  });

  it('passes over words that start a question or an order, and words in capitals', () => {
    expect(readSaid('What is the weather in Paris? Tell me, NOW.').names).toEqual(['Paris']);
    expect(readSaid('Write a JSON summary.').names).toEqual([]);
  });

  it('reads numbers with thousands separators and decimals, not the digits of dates or URLs', () => {
    expect(
      readSaid('Budget 1,250.50 for 3 nights from 2026-01-02 at https://x.io/7').numbers,
    ).toEqual([
      { value: 1250.5, near: ['budget', 'for', 'nights'] },
      { value: 3, near: ['budget', 'for', 'nights', 'from', 'at'] },
    ]);
  });
});

describe('believable values', () => {
  it('takes a name and an age the prompt says ("Alice is 30.")', async () => {
    const person = closed({ name: { type: 'string' }, age: { type: 'number' } });
    expect(await made(person, 'Alice is 30.')).toEqual({ name: 'Alice', age: 30 });
    expect(
      await made(closed({ name: { type: 'string' }, age: { type: 'integer' } }), 'Alice is 30.'),
    ).toEqual({ name: 'Alice', age: 30 });
  });

  it('takes the place a question names for a city ("weather in Paris")', async () => {
    const weather = closed({ city: { type: 'string' } });
    expect(await made(weather, 'What is the weather in Paris?')).toEqual({ city: 'Paris' });
  });

  it('gives each field a value of its kind, from the prompt first', async () => {
    const booking = closed({
      email: { type: 'string' },
      user_id: { type: 'string' },
      start_time: { type: 'string' },
      city_name: { type: 'string' },
      restaurant: { type: 'string' },
      guests: { type: 'integer' },
      date: { type: 'string' },
      notes: { type: 'string' },
      query: { type: 'string' },
    });
    const prompt = 'Book a table at "Chez Marie" in Lyon for Bob Smith and 4 guests on 2026-12-24.';
    const value = (await made(booking, prompt)) as Record<string, unknown>;
    expect(value).toMatchObject({
      email: 'bob.smith@example.com',
      city_name: 'Lyon',
      restaurant: 'Chez Marie',
      guests: 4,
      date: '2026-12-24',
      query: prompt,
    });
    expect(value.user_id).toMatch(/^user_\d{4}$/);
    expect(value.start_time).toMatch(/^\d{2}:\d{2}$/);
    expect(value.notes).toMatch(/^[A-Z][a-z ]+\.$/);
  });

  it('makes modest values when the prompt says nothing: non-empty words, numbers within a small non-negative range', async () => {
    const item = closed({
      title: { type: 'string' },
      label: { type: 'string' },
      price: { type: 'number' },
      quantity: { type: 'integer' },
      rating: { type: 'integer' },
      tags: { type: 'array', items: { type: 'string' }, minItems: 2, maxItems: 2 },
    });
    const value = (await made(item, 'Add an item.')) as Record<string, unknown>;
    expect(value.title).toMatch(/^[A-Z][a-z]+( [A-Z][a-z]+)*$/);
    expect(value.label).not.toBe('');
    expect(value.price).toBeGreaterThanOrEqual(5);
    expect(value.price).toBeLessThanOrEqual(500);
    expect(value.quantity).toBeGreaterThanOrEqual(1);
    expect(value.quantity).toBeLessThanOrEqual(10);
    expect(value.rating).toBeGreaterThanOrEqual(1);
    expect(value.rating).toBeLessThanOrEqual(5);
    const tags = value.tags as string[];
    expect(new Set(tags).size).toBe(2);
  });

  it('lets the schema win: enums, patterns, formats, bounds and lengths', async () => {
    const strict = closed({
      name: { type: 'string', enum: ['x', 'y'] },
      city: { type: 'string', pattern: '^[A-Z]{3}$' },
      email: { type: 'string', format: 'email' },
      age: { type: 'integer', minimum: 40, maximum: 50 },
      title: { type: 'string', maxLength: 3 },
      nickname: { type: 'string', minLength: 12 },
    });
    const value = (await made(strict, 'Alice is 30 and lives in Paris.')) as Record<
      string,
      unknown
    >;
    expect(['x', 'y']).toContain(value.name);
    expect(value.city).toMatch(/^[A-Z]{3}$/);
    expect(value.age).toBeGreaterThanOrEqual(40);
    expect(value.age).toBeLessThanOrEqual(50);
    expect((value.title as string).length).toBeLessThanOrEqual(3);
    expect((value.nickname as string).length).toBeGreaterThanOrEqual(12);
  });

  it('keeps to the bounds an SDK moved into a description', async () => {
    // @anthropic-ai/sdk writes `{minimum: 0, maximum: 10}` after a blank line.
    const hinted = closed({
      name: { type: 'string' },
      age: { type: 'number', description: 'Age\n\n{minimum: 0, maximum: 10}' },
    });
    const value = (await made(hinted, 'Alice is 30.')) as { name: string; age: number };
    expect(value.name).toBe('Alice');
    expect(value.age).toBeGreaterThanOrEqual(0);
    expect(value.age).toBeLessThanOrEqual(10);
  });

  it('is the same for the same prompt and seed, and follows $ref, anyOf and nullable types', async () => {
    const schema = {
      type: 'object',
      $defs: { person: closed({ name: { type: 'string' }, age: { type: 'integer' } }) },
      properties: {
        owner: { $ref: '#/$defs/person' },
        city: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        country: { type: ['string', 'null'] },
      },
      required: ['owner', 'city', 'country'],
      additionalProperties: false,
    };
    const prompt = 'Alice is 30 and lives in Paris, France.';
    const value = (await made(schema, prompt)) as Record<string, unknown>;
    expect(value.owner).toEqual({ name: 'Alice', age: 30 });
    for (const key of ['city', 'country'] as const) {
      if (value[key] !== null) expect(['Paris', 'France']).toContain(value[key]);
    }
    expect(await made(schema, prompt)).toEqual(value);
  });

  it('for random schemas and prompts: values valid against the schema, no required free string empty', async () => {
    const fieldName = fc.oneof(
      fc.constantFrom('name', 'city', 'age', 'email', 'count', 'title', 'price', 'id', 'date'),
      fc.constantFrom('first_name', 'user_id', 'description', 'query', 'tags', 'score', 'url'),
      fc.stringMatching(/^[a-z][a-z0-9_]{0,11}$/),
    );
    const free = fc.record(
      {
        type: fc.constant('string'),
        minLength: fc.integer({ min: 0, max: 5 }),
        maxLength: fc.integer({ min: 5, max: 40 }),
      },
      { requiredKeys: ['type'] },
    );
    const leaf: fc.Arbitrary<Schema> = fc.oneof(
      free,
      fc.record({ type: fc.constant('string'), format: fc.constantFrom('email', 'date', 'uri') }),
      fc.record({ type: fc.constant('string'), pattern: fc.constantFrom('^[A-Z]{3}$', '^a+$') }),
      fc.record({
        enum: fc.uniqueArray(fc.string({ maxLength: 6 }), { minLength: 1, maxLength: 4 }),
      }),
      fc
        .tuple(fc.integer({ min: -1000, max: 1000 }), fc.integer({ min: 0, max: 1000 }))
        .map(([min, span]) => ({ type: 'integer', minimum: min, maximum: min + span })),
      fc.record(
        {
          type: fc.constantFrom('number', 'integer'),
          minimum: fc.integer({ min: -5, max: 50 }),
          exclusiveMaximum: fc.integer({ min: 51, max: 60 }),
          multipleOf: fc.constantFrom(1, 2),
        },
        { requiredKeys: ['type'] },
      ),
      fc.constant({ type: 'boolean' }),
      fc.constant({ type: ['string', 'null'] }),
    );
    const schema = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: 'small' }, leaf, tie('object'), tie('array')),
      array: fc.record({
        type: fc.constant('array'),
        items: tie('node'),
        minItems: fc.integer({ min: 0, max: 2 }),
        maxItems: fc.integer({ min: 2, max: 3 }),
      }),
      object: fc
        .dictionary(fieldName, tie('node'), { maxKeys: 6 })
        .map((properties) => closed(properties as Record<string, Schema>)),
    })).object as fc.Arbitrary<Schema>;
    const prompt = fc.oneof(
      fc.constantFrom(
        'Alice is 30.',
        'What is the weather in Paris?',
        'Book 3 rooms for Bob Smith in "Hotel Azur" from 2026-05-01, email bob@example.org.',
        '',
      ),
      fc.string({ maxLength: 80 }),
    );
    /** Every required property whose schema is a free string (no enum, pattern or format). */
    const emptyFree = (s: Schema, v: unknown): string[] => {
      if (Array.isArray(v) && s.items)
        return v.flatMap((item) => emptyFree(s.items as Schema, item));
      if (!v || typeof v !== 'object' || !s.properties) return [];
      return Object.entries(s.properties as Record<string, Schema>).flatMap(([key, sub]) => {
        const item = (v as Record<string, unknown>)[key];
        if (sub.type === 'string' && !sub.format && !sub.pattern && item === '') return [key];
        return emptyFree(sub, item);
      });
    };
    await fc.assert(
      fc.asyncProperty(schema, prompt, fc.nat(), async (s, p, seed) => {
        const value = await schemaInstance(s, seed, undefined, () => readSaid(p));
        expect(ajv.validate(s, value), JSON.stringify({ s, p, value, errors: ajv.errors })).toBe(
          true,
        );
        expect(emptyFree(s, value), JSON.stringify({ s, p, value })).toEqual([]);
      }),
      { numRuns: 300 },
    );
  }, 90_000);
});
