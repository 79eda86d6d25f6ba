import { describe, expect, it } from 'vitest';
import {
  LinearRegexError,
  linearRegex,
  MAX_PROGRAM_SIZE,
} from '../../src/platform/linear-regex.js';

describe('linearRegex: JavaScript patterns run by RE2', () => {
  it('reads JavaScript syntax and flags as RegExp does', () => {
    const cases: Array<[string, string, string, boolean]> = [
      ['^\\d{4}-\\d{2}$', '', '2026-11', true],
      ['^[\\w.-]+$', '', 'a b', false],
      ['^(?<year>\\d{4})$', '', '2026', true],
      ['^\\u00e9+$', 'u', 'éé', true],
      ['hello', 'i', 'Say HELLO', true],
      ['^b$', '', 'a\nb', false],
      ['^b$', 'm', 'a\nb', true],
      ['a.b', '', 'a\nb', false],
      ['a.b', 's', 'a\nb', true],
    ];
    for (const [pattern, flags, text, expected] of cases) {
      expect(
        linearRegex(pattern, flags).test(text),
        `/${pattern}/${flags} on ${JSON.stringify(text)}`,
      ).toBe(new RegExp(pattern, flags).test(text));
      expect(linearRegex(pattern, flags).test(text)).toBe(expected);
    }
  });

  it('gives the first match with its groups, undefined for a group that took no part', () => {
    expect(linearRegex('(a)|(b)x(\\d)?').exec('zzbx')).toEqual(['bx', undefined, 'b', undefined]);
    expect(linearRegex('^\\[demo\\] echo (.+)$', 's').exec('[demo] echo hi\nthere')).toEqual([
      '[demo] echo hi\nthere',
      'hi\nthere',
    ]);
    expect(linearRegex('x').exec('abc')).toBeNull();
    expect(String(linearRegex('a+', 'i'))).toBe('/a+/i');
  });

  it('runs what backtracks for hours in linear time, and refuses what RE2 cannot run', () => {
    expect(linearRegex('^(a|a)*$').test(`${'a'.repeat(40)}!`)).toBe(false);
    expect(linearRegex('^(a+)+$').test('a'.repeat(10_000))).toBe(true);
    expect(() => linearRegex('(')).toThrow(LinearRegexError);
    expect(() => linearRegex('(')).toThrow(/^Invalid regular expression/);
    expect(() => linearRegex('^(\\w)\\1$')).toThrow(
      '/^(\\w)\\1$/ cannot be run in linear time (lookaround and backreferences cannot; RE2 says: error parsing regexp: invalid escape sequence: `\\1`)',
    );
    expect(() => linearRegex(`(?:[ab]{${MAX_PROGRAM_SIZE}})`)).toThrow(
      `/(?:[ab]{${MAX_PROGRAM_SIZE}})/ compiles to ${MAX_PROGRAM_SIZE + 2} instructions, more than the ${MAX_PROGRAM_SIZE} the emulator runs`,
    );
  });
});
