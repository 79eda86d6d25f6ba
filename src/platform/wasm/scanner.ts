import { SCAN_WASM_BASE64 } from './scan-wasm.js';

/**
 * The WebAssembly token scanner (scan.wat): counts tokens and hashes a text in one pass over its
 * UTF-8 bytes, several times faster than a JavaScript loop on long prompts. It holds no state
 * between calls: callers pass the running state in and read it back.
 */

/** The slice of the WebAssembly API used here (the project's TypeScript libs omit it). */
interface WasmApi {
  Module: new (bytes: Uint8Array) => object;
  Instance: new (module: object) => { exports: unknown };
}
const { Module, Instance } = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;

interface ScanExports {
  memory: { buffer: ArrayBuffer };
  reset(a: number, b: number, state: number): void;
  mix(value: number): void;
  hashA(): number;
  hashB(): number;
  state(): number;
  scan(length: number): number;
}

const TEXT_AT = 2048;
/** UTF-16 units encoded per call: at most 3 UTF-8 bytes each, within one 64 KiB page. */
const CHUNK_UNITS = 16_384;

/** Byte classes for scan.wat: 0 space, 1 word, 2 one token, 3 UTF-8 continuation byte. */
function byteClasses(wordByte: (byte: number) => boolean, spaceByte: (byte: number) => boolean) {
  const classes = new Uint8Array(256);
  for (let byte = 0; byte < 256; byte++) {
    if (byte < 0x80) classes[byte] = wordByte(byte) ? 1 : spaceByte(byte) ? 0 : 2;
    else classes[byte] = byte < 0xc0 ? 3 : 2;
  }
  return classes;
}

/**
 * The run table: for a state (bytes into the current word run, mod 4) and the word bits of 8
 * bytes (bit 0 first), the tokens that start and the state after: `tokens | next << 4`.
 */
function runTable() {
  const table = new Uint8Array(4 * 256);
  for (let state = 0; state < 4; state++) {
    for (let mask = 0; mask < 256; mask++) {
      let s = state;
      let tokens = 0;
      for (let bit = 0; bit < 8; bit++) {
        if (mask & (1 << bit)) {
          if (s === 0) tokens++;
          s = (s + 1) & 3;
        } else {
          s = 0;
        }
      }
      table[state * 256 + mask] = tokens | (s << 4);
    }
  }
  return table;
}

const module = new Module(Buffer.from(SCAN_WASM_BASE64, 'base64'));
const encoder = new TextEncoder();

export interface ScanState {
  a: number;
  b: number;
  state: number;
}

export class WasmScanner {
  private readonly exports: ScanExports;
  private readonly view: Uint8Array;

  constructor(wordByte: (byte: number) => boolean, spaceByte: (byte: number) => boolean) {
    this.exports = new Instance(module).exports as ScanExports;
    const memory = new Uint8Array(this.exports.memory.buffer);
    memory.set(byteClasses(wordByte, spaceByte), 0);
    memory.set(runTable(), 256);
    this.view = new Uint8Array(this.exports.memory.buffer, TEXT_AT, CHUNK_UNITS * 3);
  }

  /** Feeds `text` after `marker` (0 = none) into `from`; returns the tokens it holds. */
  feed(from: ScanState, text: string, marker = 0): number {
    const x = this.exports;
    x.reset(from.a, from.b, from.state);
    if (marker !== 0) x.mix(marker);
    let tokens = 0;
    for (let i = 0; i < text.length; ) {
      let end = Math.min(i + CHUNK_UNITS, text.length);
      const last = text.charCodeAt(end - 1);
      // Never split a surrogate pair: encodeInto would turn each half into U+FFFD.
      if (end < text.length && last >= 0xd800 && last <= 0xdbff) end--;
      const { written } = encoder.encodeInto(text.substring(i, end), this.view);
      tokens += x.scan(written);
      i = end;
    }
    from.a = x.hashA();
    from.b = x.hashB();
    from.state = x.state();
    return tokens;
  }
}
