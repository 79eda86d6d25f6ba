import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/platform/errors.js';
import { MAX_JSON_DEPTH, parseJsonBody, scanJson } from '../../src/platform/json-body.js';

describe('scanJson', () => {
  it('counts nesting outside strings only', () => {
    const deep = `${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}`;
    expect(scanJson(deep)).toEqual({ tooDeep: false, hugeNumber: false });
    expect(scanJson(`[${deep}]`)).toEqual({ tooDeep: true, hugeNumber: false });
    const inString = JSON.stringify({ text: `${'[{'.repeat(10_000)}\\"[[[` });
    expect(scanJson(inString)).toEqual({ tooDeep: false, hugeNumber: false });
  });

  it('flags numbers that may overflow a double, not those that cannot', () => {
    for (const text of ['1e309', '{"a":[1E+400]}', `[${'9'.repeat(400)}]`, '[1.5e308]']) {
      expect(scanJson(text).hugeNumber, text).toBe(true);
    }
    for (const text of ['1e30', '[1e-400]', '{"e":"1e999"}', '[true,false,null]', '[123.456e2]']) {
      expect(scanJson(text).hugeNumber, text).toBe(false);
    }
  });
});

describe('parseJsonBody', () => {
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

  it('names the field of a number that overflowed', () => {
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
    expect(parseJsonBody('[1.5e308]')).toEqual([1.5e308]); // flagged, checked, finite
  });
});
