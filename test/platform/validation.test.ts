import { describe, expect, it } from 'vitest';
import {
  AJV_SCHEMAS_PER_INSTANCE,
  compileValidator,
  lazySerializers,
} from '../../src/platform/validation.js';
import { buildTestApp } from '../helpers/app.js';

const gc = (globalThis as { gc?: () => void }).gc;

describe('validators and serializers compiled once per schema, for every app', () => {
  it('gives the same validator for the same schema object, one per coercion mode', () => {
    const schema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
    const strict = compileValidator(schema, false);
    expect(compileValidator(schema, false)).toBe(strict);
    const coercing = compileValidator(schema, true);
    expect(coercing).not.toBe(strict);
    // A body is not coerced; a query string is.
    expect(strict({ n: '5' })).toBe(false);
    expect(strict.errors?.[0]).toMatchObject({ instancePath: '/n', keyword: 'type' });
    const query = { n: '5' };
    expect(coercing(query)).toBe(true);
    expect(query).toEqual({ n: 5 });
    // Another object with the same content is compiled on its own.
    expect(compileValidator({ ...schema }, false)).not.toBe(strict);
  });

  it("keeps no more than one Ajv instance's worth of schemas once they are gone", async () => {
    expect(gc, 'vitest runs with --expose-gc').toBeDefined();
    const count = 3 * AJV_SCHEMAS_PER_INSTANCE;
    const refs = (() =>
      Array.from({ length: count }, (_, i) => {
        const schema = { type: 'object', properties: { [`f${i}`]: { type: 'string' } } };
        compileValidator(schema, false);
        return new WeakRef(schema);
      }))();
    // Collections a turn apart, until the bound holds or ten have run: what one collection
    // frees can hold the next thing to free, and a busy machine may need more than two.
    let alive = count;
    for (let i = 0; i < 10 && alive > AJV_SCHEMAS_PER_INSTANCE; i++) {
      await new Promise((r) => setTimeout(r, 0));
      gc?.();
      alive = refs.filter((r) => r.deref() !== undefined).length;
    }
    expect(alive).toBeLessThanOrEqual(AJV_SCHEMAS_PER_INSTANCE);
    // The earliest ones, compiled by instances since replaced, are all gone.
    expect(refs.slice(0, AJV_SCHEMAS_PER_INSTANCE).every((r) => r.deref() === undefined)).toBe(
      true,
    );
  });

  it('builds a response serializer once per schema, shared by apps; not when shared schemas differ', () => {
    const schema = {
      type: 'object',
      properties: { b: { type: 'string' }, a: { type: 'integer' } },
    };
    const route = { schema, method: 'GET', url: '/x', httpStatus: '200' };
    const first = lazySerializers()({}, undefined)(route);
    const second = lazySerializers()({}, undefined)(route);
    expect(first({ a: 1, b: 'x', extra: true })).toBe('{"b":"x","a":1}');
    expect(second({ a: 2, b: 'y' })).toBe('{"b":"y","a":2}');
    // With shared schemas of its own, an app compiles for itself (and resolves its $refs).
    const withRefs = lazySerializers()({ thing: { $id: 'thing', type: 'string' } }, undefined)({
      ...route,
      schema: { type: 'object', properties: { t: { $ref: 'thing#' } } },
    });
    expect(withRefs({ t: 'z' })).toBe('{"t":"z"}');
  });

  it("compiles a route once for two apps: the second app answers from the first one's work", async () => {
    const ask = {
      method: 'POST' as const,
      url: '/v1/chat/completions',
      headers: { authorization: 'Bearer k' },
      payload: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
    };
    const one = await buildTestApp();
    const two = await buildTestApp();
    try {
      const a = await one.inject(ask);
      const b = await two.inject(ask);
      expect(a.statusCode).toBe(200);
      expect(b.statusCode).toBe(200);
      expect(Object.keys(b.json())).toEqual(Object.keys(a.json()));
      const bad = await two.inject({ ...ask, payload: { model: 'm', messages: 'hi' } });
      expect(bad.statusCode).toBe(400);
      expect(bad.json().error.message).toContain('messages');
    } finally {
      await one.app.close();
      await two.app.close();
    }
  });
});
