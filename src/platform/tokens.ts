/**
 * The emulator's deterministic token counter (documented in docs/token-counter.md).
 *
 * A text is read left to right; whitespace is free and attaches to the token after it.
 * - A run of ASCII letters, digits and `_` costs one token per started 4 characters.
 * - Any other ASCII character (punctuation, symbols) is one token.
 * - Any non-ASCII character is one token (a surrogate pair counts once, a lone surrogate once).
 *
 * Short texts are counted here; long ones by the WebAssembly scanner (wasm/scan.wat), which
 * applies the same rules to UTF-8 bytes.
 */

import { WasmScanner } from './wasm/scanner.js';

/** Character classes of ASCII code units. */
export const CharClass = { Space: 0, Word: 1, Other: 2 } as const;
const Cls = CharClass;

/** The class of each ASCII code unit. */
export const ASCII_CLASS = new Uint8Array(128).fill(Cls.Other);
const ASCII = ASCII_CLASS;
for (let c = 0; c < 128; c++) {
  if (c === 32 || (c >= 9 && c <= 13)) ASCII[c] = Cls.Space;
  else if ((c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 95) {
    ASCII[c] = Cls.Word;
  }
}

export const WORD_CHARS_PER_TOKEN = 4;

/**
 * Calls `onToken(end)` with the end offset of each token, in order; returns the token count.
 * Stops early (returning the count so far) when `onToken` returns false.
 */
function scan(text: string, onToken?: (end: number) => boolean | undefined): number {
  const n = text.length;
  let count = 0;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c < 128) {
      const cls = ASCII[c];
      if (cls === Cls.Space) {
        i++;
        continue;
      }
      if (cls === Cls.Word) {
        let run = 0;
        while (i < n) {
          const d = text.charCodeAt(i);
          if (d >= 128 || ASCII[d] !== Cls.Word) break;
          i++;
          if (++run === WORD_CHARS_PER_TOKEN) {
            run = 0;
            count++;
            if (onToken && onToken(i) === false) return count;
          }
        }
        if (run > 0) {
          count++;
          if (onToken && onToken(i) === false) return count;
        }
        continue;
      }
      i++;
    } else {
      const pair = c >= 0xd800 && c <= 0xdbff && isLowSurrogate(text.charCodeAt(i + 1));
      i += pair ? 2 : 1;
    }
    count++;
    if (onToken && onToken(i) === false) return count;
  }
  return count;
}

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff;

/** Texts at least this long are counted by the WebAssembly scanner. */
const WASM_FROM = 256;

export const wasmScanner = new WasmScanner(
  (byte) => ASCII[byte] === Cls.Word,
  (byte) => ASCII[byte] === Cls.Space,
);

/** The JavaScript counter alone (tests compare it with the WebAssembly one). */
export const countTokensScalar = (text: string): number => scan(text);

export function countTokens(text: string): number {
  if (text.length < WASM_FROM) return scan(text);
  return wasmScanner.feed({ a: 0, b: 0, state: 0 }, text);
}

export interface Truncated {
  text: string;
  tokens: number;
  truncated: boolean;
}

/** The longest prefix of `text` holding at most `max` tokens. */
export function truncateTokens(text: string, max: number): Truncated {
  let end = 0;
  let tokens = 0;
  const total = scan(text, (e) => {
    if (tokens === max) return false;
    tokens++;
    end = e;
    return true;
  });
  if (total <= max && tokens === total) return { text, tokens, truncated: false };
  return { text: text.slice(0, end), tokens, truncated: true };
}

/**
 * Splits `text` into pieces of `perPiece` tokens (leading whitespace included), so that the
 * pieces concatenate to `text` exactly. Trailing whitespace joins the last piece.
 */
export function splitTokens(text: string, perPiece = 1): string[] {
  const pieces: string[] = [];
  let start = 0;
  let inPiece = 0;
  scan(text, (end) => {
    if (++inPiece === perPiece) {
      pieces.push(text.slice(start, end));
      start = end;
      inPiece = 0;
    }
    return true;
  });
  if (start < text.length) {
    if (pieces.length === 0 || inPiece > 0) pieces.push(text.slice(start));
    else pieces[pieces.length - 1] += text.slice(start);
  }
  return pieces;
}

/**
 * `text` cut to at most `max` UTF-16 units with `...` after it when it was longer, never between
 * the two halves of a surrogate pair (a lone half is JSON that strict parsers refuse).
 */
export function shorten(text: string, max: number): string {
  if (text.length <= max) return text;
  const code = text.charCodeAt(max - 1);
  const end = code >= 0xd800 && code <= 0xdbff ? max - 1 : max;
  return `${text.slice(0, end)}...`;
}
