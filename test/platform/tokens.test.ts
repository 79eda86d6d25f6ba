import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  countTokens,
  countTokensScalar,
  splitTokens,
  truncateTokens,
  wasmScanner,
} from '../../src/platform/tokens.js';

describe('token counter', () => {
  it.each([
    ['', 0],
    ['   \n\t', 0],
    ['abcd', 1],
    ['abcde', 2],
    ['Hello there', 4],
    ['Hello, world!', 6],
    ['a_b1', 1],
    ['snake_case_name', 4],
    ['é', 1],
    ['日本語', 3],
    ['😀', 1],
    ['x😀y', 3],
    ['\ud800', 1],
    ['\ude00x', 2],
    ['\ud800\ud800', 2],
    ['{"a": 1}', 7],
  ])('counts %j as %i tokens', (text, expected) => {
    expect(countTokens(text)).toBe(expected);
  });

  it('splits into pieces that concatenate to the text, one per token', () => {
    const text = '  Hello, wonderful world!\n';
    const pieces = splitTokens(text);
    expect(pieces).toEqual(['  Hell', 'o', ',', ' wond', 'erfu', 'l', ' worl', 'd', '!\n']);
    expect(pieces.join('')).toBe(text);
    expect(pieces).toHaveLength(countTokens(text));
  });

  it('groups several tokens per piece when asked', () => {
    const text = '  Hello, wonderful world!\n';
    expect(splitTokens(text, 4)).toEqual(['  Hello, wond', 'erful world', '!\n']);
    expect(splitTokens(text, 4).join('')).toBe(text);
    expect(splitTokens('abcd efgh ', 2)).toEqual(['abcd efgh ']);
    expect(splitTokens('abcd efgh ijkl', 2)).toEqual(['abcd efgh', ' ijkl']);
  });

  it('keeps a whitespace-only text as one piece', () => {
    expect(splitTokens('  ')).toEqual(['  ']);
    expect(splitTokens('')).toEqual([]);
  });

  it('truncates at a token boundary', () => {
    expect(truncateTokens('Hello there', 3)).toEqual({
      text: 'Hello ther',
      tokens: 3,
      truncated: true,
    });
    expect(truncateTokens('Hello there', 4)).toEqual({
      text: 'Hello there',
      tokens: 4,
      truncated: false,
    });
    expect(truncateTokens('Hello there ', 4)).toEqual({
      text: 'Hello there ',
      tokens: 4,
      truncated: false,
    });
    expect(truncateTokens('Hello', 0)).toEqual({ text: '', tokens: 0, truncated: true });
  });

  it('counts a large text in one linear pass', () => {
    const text = 'lorem ipsum dolor sit amet, '.repeat(20_000);
    expect(countTokens(text)).toBe(20_000 * 9);
  });
});

describe('the WebAssembly counter', () => {
  const piece = fc.oneof(
    fc.constantFrom(
      ' ',
      '\n',
      '\t',
      '\r\n',
      '\u000b',
      '\f',
      '_',
      '-',
      '.',
      '!',
      '\u0000',
      '\u007f',
    ),
    fc.constantFrom(
      'é',
      'ß',
      '日本',
      '😀',
      '👍🏽',
      '\u00a0',
      '\u2028',
      '\ud83d',
      '\ude00',
      '\ud800x',
      'x\udc00',
    ),
    fc.stringMatching(/^[A-Za-z0-9_]{1,12}$/),
    fc.string({ maxLength: 20 }),
    fc.string({ unit: 'binary', maxLength: 20 }),
  );
  const text = fc.array(piece, { maxLength: 400 }).map((parts) => parts.join(''));

  it('counts exactly like the JavaScript counter, at any length and chunking', () => {
    fc.assert(
      fc.property(text, (t) => {
        expect(wasmScanner.feed({ a: 0, b: 0, state: 0 }, t)).toBe(countTokensScalar(t));
      }),
      { numRuns: 500 },
    );
    const long = `${'word🙂 '.repeat(20_000)}tail`;
    expect(wasmScanner.feed({ a: 0, b: 0, state: 0 }, long)).toBe(countTokensScalar(long));
    expect(countTokens(long)).toBe(20_000 * 2 + 1);
  });

  it('counts a word run across the scanner chunk boundary once per 4 characters', () => {
    const long = 'a'.repeat(16_383 + 8);
    expect(countTokens(long)).toBe(Math.ceil(long.length / 4));
  });
});
