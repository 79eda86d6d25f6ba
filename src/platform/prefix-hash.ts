import { wasmScanner } from './tokens.js';
import type { ScanState } from './wasm/scanner.js';

const BLOCK_MARK = 0x0b10c000;

/**
 * Reads a prompt once, left to right, counting tokens (the same rules as `countTokens`) and
 * hashing everything read so far, so that `key()` identifies the whole prefix. The hash is two
 * independent 32-bit multiplicative hashes (64 bits): collisions are negligible for an
 * emulator's cache, and no text is kept.
 */
export class PrefixScanner {
  private readonly at: ScanState = { a: 0x811c9dc5, b: 0x9747b28c, state: 0 };
  /** Tokens read so far. */
  tokens = 0;

  /** `scope` (e.g. key owner and model) seeds the hash; it costs no tokens. */
  constructor(scope: string) {
    wasmScanner.feed(this.at, scope, 0x5c09e);
  }

  /** Adds tokens that have no text (a message's role framing), marking the boundary. */
  frame(marker: number, tokens: number): void {
    wasmScanner.feed(this.at, '', marker);
    this.tokens += tokens;
  }

  /** Reads one text block. */
  text(text: string): void {
    this.tokens += wasmScanner.feed(this.at, text, BLOCK_MARK ^ text.length);
  }

  /** Reads a block that costs `tokens` whatever its text (an image's bytes, a PDF's). */
  blob(text: string, tokens: number): void {
    wasmScanner.feed(this.at, text, BLOCK_MARK ^ 0xb10b ^ text.length);
    this.tokens += tokens;
  }

  key(): string {
    return `${(this.at.a >>> 0).toString(36)}.${(this.at.b >>> 0).toString(36)}.${this.tokens}`;
  }
}
