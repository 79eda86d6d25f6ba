import { RE2JS } from 're2js';
import { describe, expect, it, vi } from 'vitest';
import { regexes } from 'zod';
import {
  ajvLinearRegExp,
  BACKTRACKING_MAX_CHARS,
  BACKTRACKING_TIMEOUT_MS,
  estimatedProgramSize,
  GROUPS_WORK,
  LinearRegexError,
  linearRegex,
  MAX_PROGRAM_SIZE,
  MAX_SCHEMA_PROGRAM_SIZE,
  schemaRegex,
  withBacktracking,
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
      // Unicode properties by JavaScript's names, which RE2 spells otherwise
      ['^\\p{Uppercase_Letter}\\p{Ll}+$', 'u', 'Émile', true],
      ['^\\p{gc=Lu}$', 'u', 'é', false],
      ['^\\p{Script=Greek}+$', 'u', 'αβγ', true],
      ['^\\p{sc=Greek}+$', 'u', 'abc', false],
      ['^\\P{Letter}+$', 'u', '12 !', true],
      ['^[\\p{Decimal_Number}_]+$', 'u', '٣4_', true],
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

  it('estimates the program from the text close to what RE2 compiles, for real patterns (zod writes them)', () => {
    const patterns = [
      ...Object.values(regexes)
        .filter((value): value is RegExp => value instanceof RegExp)
        .map((re) => re.source),
      '^(?<year>\\d{4})-(?<m>\\d\\d)$',
      '\\u{1F600}+',
      '^\\p{Lu}\\p{Ll}*$',
      '[\\]a]{3}',
      '(?:apple|apricot|banana)',
      'a{2,}b{0,}c*?d+?',
    ];
    let compared = 0;
    for (const pattern of patterns) {
      let size: number;
      try {
        size = RE2JS.compile(RE2JS.translateRegExp(pattern)).programSize();
      } catch {
        continue; // lookaround: RE2 refuses it anyway
      }
      const estimate = estimatedProgramSize(pattern);
      // over by 60% at most (within the slack of 2), under by half at most; a few more for
      // the smallest (RE2 adds its start and match)
      expect(estimate, pattern).toBeLessThanOrEqual(1.6 * size + 4);
      expect(estimate, pattern).toBeGreaterThanOrEqual(size / 2 - 4);
      compared++;
    }
    expect(compared).toBeGreaterThan(40);
    // unclosed escapes and names read to the end, counts kept finite
    expect(estimatedProgramSize('\\u{12')).toBe(4);
    expect(estimatedProgramSize(`(?:a{${'9'.repeat(400)}}){9}`)).toBe(1e9);
  });

  it('refuses a pattern past twice its limit by the estimate without compiling it', () => {
    const compile = vi.spyOn(RE2JS, 'compile');
    try {
      const huge = '\\p{L}{1000}'.repeat(60);
      expect(() => linearRegex(huge, 'u')).toThrow(
        `/${huge.slice(0, 80)}.../ compiles to about 60000 instructions, more than the ${MAX_PROGRAM_SIZE} the emulator runs`,
      );
      expect(compile).not.toHaveBeenCalled();
      expect(() => linearRegex('[ab]{500}')).toThrow(/compiles to 502 instructions/);
      expect(compile).toHaveBeenCalledTimes(1);
    } finally {
      compile.mockRestore();
    }
  });

  it(`lets schema patterns (which check values the emulator made) compile to ${MAX_SCHEMA_PROGRAM_SIZE}, each once`, () => {
    const ipv6 = regexes.ipv6.source; // 710 instructions
    expect(() => linearRegex(ipv6, 'u')).toThrow(LinearRegexError);
    const regex = ajvLinearRegExp(ipv6, 'u');
    expect(regex.test('2001:db8::1')).toBe(true);
    expect(regex.test('2001:db8::g')).toBe(false);
    expect(ajvLinearRegExp(ipv6, 'u')).toBe(regex);
    expect(ajvLinearRegExp(ipv6, '')).not.toBe(regex);
    expect(() => ajvLinearRegExp('[ab]{1000}[cd]{1000}', 'u')).toThrow(
      `compiles to 2002 instructions, more than the ${MAX_SCHEMA_PROGRAM_SIZE} the emulator runs`,
    );
  });

  it(`reads groups within ${GROUPS_WORK} characters × instructions; past it a match has none`, () => {
    const echo = linearRegex('^echo (.+)$', 's');
    const within = `echo ${'a'.repeat(100_000)}`;
    expect(echo.exec(within)?.[1]).toBe('a'.repeat(100_000));
    const costly = linearRegex('^(?:.{0,190})*(b)$');
    const long = `${'a'.repeat(GROUPS_WORK / 300)}b`; // 400 instructions: 9 µs a character
    expect(costly.test(long)).toBe(true);
    expect(costly.exec(long)).toEqual(['']);
    expect(costly.exec('aab')).toEqual(['aab', 'b']);
  });

  it('refuses a named backreference, which RE2 would read as the letters k<name>', () => {
    expect(() => linearRegex('^(?<y>a)\\k<y>$')).toThrow(
      expect.objectContaining({ kind: 'unsupported' }),
    );
  });
});

describe('schemaRegex: schema patterns, backtracking ones within a time bound', () => {
  it('runs lookaround and backreferences with JavaScript semantics', () => {
    const hostname = schemaRegex(regexes.hostname.source, 'u');
    expect(hostname.test('alpha.example.dev')).toBe(true);
    expect(hostname.test(`${'a'.repeat(254)}.dev`)).toBe(false); // its lookahead: 253 at most
    const named = schemaRegex('^(?<y>\\d{2})-\\k<y>$', 'u');
    expect([named.test('12-12'), named.test('12-13')]).toEqual([true, false]);
    expect(schemaRegex('^(\\w)\\1$', 'u').exec('aa')?.slice(0, 2)).toEqual(['aa', 'a']);
    expect(String(named)).toBe('/^(?<y>\\d{2})-\\k<y>$/u');
  });

  it(`gives up on a check after ${BACKTRACKING_TIMEOUT_MS} ms, and on every check once the request's budget is spent`, () => {
    const evil = schemaRegex('^(?=(a|a)*$)a+$', 'u');
    const started = performance.now();
    expect(evil.test(`${'a'.repeat(40)}!`)).toBe(false); // hours for a backtracking engine
    expect(performance.now() - started).toBeLessThan(5000);
    expect(evil.test('aaa')).toBe(true); // the pattern itself is not marked: the next check runs
    const budget = { leftMs: 25 };
    const { timedOut } = withBacktracking(budget, () => {
      expect(evil.test(`${'a'.repeat(40)}!`)).toBe(false);
      expect(evil.test(`${'a'.repeat(40)}!`)).toBe(false);
      expect(evil.test(`${'a'.repeat(40)}!`)).toBe(false);
      expect(budget.leftMs).toBeLessThan(1);
      expect(evil.test('aaa')).toBe(false); // this request's budget is spent
    });
    expect(timedOut).toBe(true);
    expect(withBacktracking({ leftMs: 25 }, () => evil.test('aaa'))).toEqual({
      result: true,
      timedOut: false,
    });
    expect(evil.test('aaa')).toBe(true); // another request's is not
    const fine = schemaRegex('^(?=a)a+$', 'u');
    expect(fine.test('a'.repeat(BACKTRACKING_MAX_CHARS))).toBe(true);
    expect(fine.test('a'.repeat(BACKTRACKING_MAX_CHARS + 1))).toBe(false);
  });

  it('sends to the backtracking engine only what its text shows needs it', () => {
    // a repeat count RE2 refuses is no reason to backtrack: refused, as its weight assumed
    expect(() => schemaRegex('^(?:a|a)*$|bX{1001}', 'u')).toThrow(
      expect.objectContaining({ kind: 'size' }),
    );
    expect(schemaRegex('^\\p{Extended_Pictographic}(?=x)', 'u').test('😀x')).toBe(true);
  });

  it('reads a pattern only Annex B takes (a lone ], as zod RFC 5322 email has) without u', () => {
    expect(() => new RegExp(regexes.rfc5322Email.source, 'u')).toThrow();
    const email = schemaRegex(regexes.rfc5322Email.source, 'u');
    expect(email.test('ada@example.com')).toBe(true);
    expect(email.test('not an email')).toBe(false);
    // still refused: not JavaScript at all, or too large
    expect(() => schemaRegex('(', 'u')).toThrow(expect.objectContaining({ kind: 'syntax' }));
    expect(() => schemaRegex('(?=a)[ab]{1000}[cd]{1000}', 'u')).toThrow(
      expect.objectContaining({ kind: 'size' }),
    );
  });
});
