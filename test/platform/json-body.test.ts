import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/platform/errors.js';
import {
  heldWeight,
  MAX_JSON_DEPTH,
  MAX_JSON_VALUES,
  parseJsonBody,
  SCAN_FROM_CHARS,
} from '../../src/platform/json-body.js';

/** The 400 a body is refused with: its message and the field it names, if any. */
const refusal = (text: string) => {
  try {
    parseJsonBody(text);
  } catch (err) {
    const error = err as GatewayError;
    return { message: error.message, path: error.options.issue?.path };
  }
  return undefined;
};

describe('parseJsonBody', () => {
  it('scans a long body for nesting outside its strings only (escaped quotes included)', () => {
    const pad = 'x'.repeat(SCAN_FROM_CHARS);
    const deep = `${'['.repeat(MAX_JSON_DEPTH - 1)}${']'.repeat(MAX_JSON_DEPTH - 1)}`;
    const within = `{"pad":"${pad}","deep":${deep}}`;
    expect(parseJsonBody(within)).toEqual(JSON.parse(within));
    expect(refusal(`{"pad":"${pad}","deep":[${deep}]}`)?.message).toMatch(/deeper than 256/);
    const inString = JSON.stringify({ text: `${'[{'.repeat(10_000)}\\"[[[` });
    expect(parseJsonBody(inString)).toEqual(JSON.parse(inString));
  });

  it('parses what JSON.parse parses, refusing prototype keys', () => {
    expect(parseJsonBody('{"a":[1,"x",{"b":null}],"c":1e308}')).toEqual({
      a: [1, 'x', { b: null }],
      c: 1e308,
    });
    expect(() => parseJsonBody('{"__proto__":{}}')).toThrow(GatewayError);
  });

  it('refuses prototype keys however they are spelled, and keeps the words elsewhere', () => {
    for (const text of [
      '{"a":{"__proto__":{"x":1}}}',
      '{"\\u005f_proto__":{}}',
      '{"a":[{"constructor":{"prototype":{}}}]}',
      '{"\\u0063onstructor":{"prototype":{}}}',
    ]) {
      expect(() => parseJsonBody(text), text).toThrow(GatewayError);
    }
    expect(
      parseJsonBody('{"text":"__proto__ and constructor","constructor":1,"u":"\\u0041"}'),
    ).toEqual({
      text: '__proto__ and constructor',
      constructor: 1,
      u: 'A',
    });
  });

  it('names the field of a number that overflowed, however deep', () => {
    const error = (() => {
      try {
        parseJsonBody('{"model":"m","max_tokens":1e309}');
      } catch (err) {
        return err as GatewayError;
      }
    })();
    expect(error?.options.issue).toEqual({
      path: ['max_tokens'],
      kind: 'value',
      problem: 'must be a finite number (got a number too large)',
    });
    expect(refusal('{"a":[1,{"b":[0,-1E+400]}]}')?.path).toEqual(['a', 1, 'b', 1]);
    expect(refusal(`[${'9'.repeat(400)}]`)?.path).toEqual([0]);
    expect(parseJsonBody('[1.5e308, 1e-400, "1e999"]')).toEqual([1.5e308, 0, '1e999']);
  });

  it('refuses nesting past the limit, in a small body and in one long enough to be scanned', () => {
    const message = `Request body is not valid JSON: nesting is deeper than ${MAX_JSON_DEPTH} levels.`;
    const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;
    expect(parseJsonBody(nested(MAX_JSON_DEPTH))).toBeInstanceOf(Array);
    expect(refusal(nested(MAX_JSON_DEPTH + 1))).toEqual({ message, path: undefined });
    const objects = `${'{"a":'.repeat(MAX_JSON_DEPTH + 1)}1${'}'.repeat(MAX_JSON_DEPTH + 1)}`;
    expect(refusal(objects)).toEqual({ message, path: undefined });
    // Long: refused by the scan before it is parsed, even though it is not valid JSON.
    const long = '['.repeat(SCAN_FROM_CHARS + 1);
    expect(refusal(long)).toEqual({ message, path: undefined });
    const padded = JSON.stringify({
      pad: 'x'.repeat(SCAN_FROM_CHARS),
      deep: JSON.parse(nested(MAX_JSON_DEPTH - 1)),
    });
    expect(parseJsonBody(padded)).toEqual(JSON.parse(padded));
  });

  it(`refuses a body of more than ${MAX_JSON_VALUES} values before parsing it; commas and brackets in strings do not count`, () => {
    // [{}, {}, ...]: the array and its objects are MAX_JSON_VALUES values, each comma one more.
    const objects = (count: number) => `[${'{},'.repeat(count - 1)}{}]`;
    const within = objects(MAX_JSON_VALUES / 2);
    expect((parseJsonBody(within) as unknown[]).length).toBe(MAX_JSON_VALUES / 2);
    expect(refusal(objects(MAX_JSON_VALUES / 2 + 1))).toEqual({
      message: `Request body is not valid JSON: it holds more than ${MAX_JSON_VALUES} values (objects, arrays and list items).`,
      path: undefined,
    });
    const quoted = JSON.stringify({ text: ',[{'.repeat(MAX_JSON_VALUES) });
    expect(parseJsonBody(quoted)).toEqual(JSON.parse(quoted));
  });
});

describe('heldWeight', () => {
  it('weighs a body as it is held parsed: 4 bytes a character and 64 a value', () => {
    expect(heldWeight('{"a":"xyz"}')).toBe(4 * 11 + 64 * 1);
    expect(heldWeight('[{},{},{}]')).toBe(4 * 10 + 64 * 6); // [ { { { and two commas
    expect(heldWeight('{"a":"[{,"}')).toBe(4 * 11 + 64 * 1); // what strings hold is no value
    // 6 MB of {}, is 2 million objects, about 20 times its characters in the heap: weighed so
    const objects = `[${'{},'.repeat(1_999_999)}{}]`;
    expect(heldWeight(objects) / objects.length).toBeGreaterThan(40);
  });
});
