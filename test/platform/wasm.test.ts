import { describe, expect, it } from 'vitest';
import { assembleScanWasm } from '../../scripts/build-wasm.js';
import { PrefixScanner } from '../../src/platform/prefix-hash.js';
import { SCAN_WASM_BASE64 } from '../../src/platform/wasm/scan-wasm.js';

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
