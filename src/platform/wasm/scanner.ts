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

/**
 * Texts at least this long have their scan remembered: a long system prompt comes back with
 * every turn of an agent, and finding it again costs a comparison (V8 hashes a string this
 * long by its length) instead of encoding and scanning it. At most REMEMBERED_TEXTS texts and
 * REMEMBERED_CHARS characters in all are kept, the least recently used forgotten first.
 */
const REMEMBER_FROM = 64 * 1024;
export const REMEMBERED_TEXTS = 16;
export const REMEMBERED_CHARS = 4 * 1024 * 1024;

/** One scan of a text: the state and marker it started from, what it left, its tokens. */
interface Scan {
  from: ScanState;
  marker: number;
  to: ScanState;
  tokens: number;
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

  /**
   * Each remembered text's scans, and when it was last used: its place in the map never
   * changes, since every look-up of a long text compares it whole with the key (moving it last
   * on each use took two look-ups more).
   */
  private readonly remembered = new Map<string, { scans: Scan[]; used: number }>();
  private rememberedChars = 0;
  /** Uses so far: the least recently used text has the lowest `used`. */
  private uses = 0;

  /** Feeds `text` after `marker` (0 = none) into `from`; returns the tokens it holds. */
  feed(from: ScanState, text: string, marker = 0): number {
    if (text.length < REMEMBER_FROM) return this.scan(from, text, marker);
    const entry = this.remembered.get(text);
    const known = entry?.scans.find(
      (s) =>
        s.marker === marker &&
        s.from.a === from.a &&
        s.from.b === from.b &&
        s.from.state === from.state,
    );
    if (entry && known) {
      entry.used = ++this.uses;
      Object.assign(from, known.to);
      return known.tokens;
    }
    const start = { ...from };
    const tokens = this.scan(from, text, marker);
    this.remember(text, entry, { from: start, marker, to: { ...from }, tokens });
    return tokens;
  }

  /** Texts remembered now, and their characters (for the tests of the bounds). */
  get rememberedSize(): { texts: number; chars: number } {
    return { texts: this.remembered.size, chars: this.rememberedChars };
  }

  /** Whether a text's scans are remembered (for the tests of which text is forgotten). */
  remembers(text: string): boolean {
    return this.remembered.has(text);
  }

  private remember(
    text: string,
    entry: { scans: Scan[]; used: number } | undefined,
    scan: Scan,
  ): void {
    if (entry) {
      // The same text after another prefix: a few states are kept per text.
      if (entry.scans.length >= 4) entry.scans.shift();
      entry.scans.push(scan);
      entry.used = ++this.uses;
      return;
    }
    if (text.length > REMEMBERED_CHARS) return;
    this.remembered.set(text, { scans: [scan], used: ++this.uses });
    this.rememberedChars += text.length;
    while (this.remembered.size > REMEMBERED_TEXTS || this.rememberedChars > REMEMBERED_CHARS) {
      this.forgetLeastUsed();
    }
  }

  /** Forgets the least recently used text (found by its own key: no comparison of contents). */
  private forgetLeastUsed(): void {
    let oldest: string | undefined;
    let oldestUse = Number.POSITIVE_INFINITY;
    for (const [key, { used }] of this.remembered) {
      if (used < oldestUse) {
        oldest = key;
        oldestUse = used;
      }
    }
    if (oldest === undefined) return;
    this.remembered.delete(oldest);
    this.rememberedChars -= oldest.length;
  }

  private scan(from: ScanState, text: string, marker: number): number {
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
