import { describe, expect, it } from 'vitest';
import { assembleScanWasm } from '../../scripts/build-wasm.js';
import { PrefixScanner } from '../../src/platform/prefix-hash.js';
import { SCAN_WASM_BASE64 } from '../../src/platform/wasm/scan-wasm.js';
import {
  REMEMBERED_CHARS,
  REMEMBERED_TEXTS,
  type ScanState,
  WasmScanner,
} from '../../src/platform/wasm/scanner.js';

describe('scan.wat', () => {
  it('is what the committed module holds (run `npm run build:wasm` after editing it)', async () => {
    expect(await assembleScanWasm()).toBe(SCAN_WASM_BASE64);
  });
});

describe('PrefixScanner', () => {
  const keyOf = (scope: string, blocks: string[]) => {
    const scanner = new PrefixScanner(scope);
    for (const block of blocks) scanner.text(block);
    return scanner.key();
  };

  it('gives the same key to the same prefix and another key to any change', () => {
    const text = 'The rules of the house. '.repeat(2000);
    expect(keyOf('k|m', [text, 'more'])).toBe(keyOf('k|m', [text, 'more']));
    expect(keyOf('k|m', [text, 'more'])).not.toBe(keyOf('k|m', [text, 'mord']));
    expect(keyOf('k|m', [text])).not.toBe(keyOf('k2|m', [text]));
    expect(keyOf('k|m', ['ab', 'c'])).not.toBe(keyOf('k|m', ['a', 'bc']));
    const changed = `${text.slice(0, 20_000)}X${text.slice(20_001)}`;
    expect(keyOf('k|m', [changed])).not.toBe(keyOf('k|m', [text]));
  });

  it('counts the tokens it reads, framing included', () => {
    const scanner = new PrefixScanner('scope');
    scanner.frame(1, 3);
    scanner.text('Hello, world!');
    expect(scanner.tokens).toBe(9);
    expect(scanner.key()).toMatch(/^[0-9a-z]+\.[0-9a-z]+\.9$/);
  });
});

describe('WasmScanner, long texts', () => {
  const words = (n: number, seed: string) => `${seed} tokens and more. `.repeat(n);
  const word = (byte: number) =>
    (byte >= 48 && byte <= 57) || (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122);
  const space = (byte: number) => byte === 32;

  it('gives a remembered text the state and tokens a fresh scan gives, after any prefix', () => {
    const remembering = new WasmScanner(word, space);
    const text = words(8000, 'alpha');
    for (const [from, marker] of [
      [{ a: 1, b: 2, state: 0 }, 7],
      [{ a: 9, b: 4, state: 1 }, 7],
      [{ a: 1, b: 2, state: 0 }, 8],
    ] as Array<[ScanState, number]>) {
      for (let round = 0; round < 2; round++) {
        const fresh = new WasmScanner(word, space);
        const expected = { ...from };
        const tokens = fresh.feed(expected, text, marker);
        const got = { ...from };
        expect(remembering.feed(got, text, marker)).toBe(tokens);
        expect(got).toEqual(expected);
      }
    }
    expect(remembering.rememberedSize).toEqual({ texts: 1, chars: text.length });
  });

  it('keeps at most REMEMBERED_TEXTS texts and REMEMBERED_CHARS characters', () => {
    const scanner = new WasmScanner(word, space);
    for (let i = 0; i < REMEMBERED_TEXTS + 5; i++)
      scanner.feed({ a: 0, b: 0, state: 0 }, words(4000, `t${i}`));
    expect(scanner.rememberedSize.texts).toBe(REMEMBERED_TEXTS);
    const big = Math.floor(REMEMBERED_CHARS / 3);
    for (let i = 0; i < 4; i++) scanner.feed({ a: 0, b: 0, state: 0 }, `${i}`.repeat(big));
    expect(scanner.rememberedSize.chars).toBeLessThanOrEqual(REMEMBERED_CHARS);
    expect(scanner.rememberedSize.texts).toBeLessThanOrEqual(3);
  });

  it('forgets the least recently used text first: a text used again stays (found by an equal copy)', () => {
    const scanner = new WasmScanner(word, space);
    const texts = Array.from({ length: REMEMBERED_TEXTS }, (_, i) => words(4000, `t${i}`));
    for (const text of texts) scanner.feed({ a: 0, b: 0, state: 0 }, text);
    // The first text used again, as a new string of the same characters (as each request's is).
    scanner.feed({ a: 0, b: 0, state: 0 }, words(4000, 't0'));
    scanner.feed({ a: 0, b: 0, state: 0 }, words(4000, 'new'));
    expect(texts.map((text) => scanner.remembers(text))).toEqual([
      true,
      false,
      ...texts.slice(2).map(() => true),
    ]);
    expect(scanner.remembers(words(4000, 'new'))).toBe(true);
    expect(scanner.rememberedSize.texts).toBe(REMEMBERED_TEXTS);
  });
});
