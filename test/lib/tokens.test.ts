import { describe, expect, it } from 'vitest';
import { countTokens, splitTokens, truncateTokens } from '../../src/lib/tokens.js';

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
