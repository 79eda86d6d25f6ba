import secureJson from 'secure-json-parse';
import { fieldError, GatewayError } from './errors.js';

/**
 * Reading a JSON request body, defensively. `JSON.parse` is fast but has two blind spots a
 * hostile body can use: it builds any nesting depth (31 MB of `[` kept the event loop busy
 * for seconds before failing), and it turns a number too large for a double (`1e309`) into
 * `Infinity`, which validators take for a number and `JSON.stringify` later writes as `null`.
 * One pass over the text outside its strings finds both, before the parse.
 */

/** Deeper than any request upstream documents (nested tool schemas included). */
export const MAX_JSON_DEPTH = 256;

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_ARRAY = 91;
const OPEN_OBJECT = 123;
const CLOSE_ARRAY = 93;
const CLOSE_OBJECT = 125;
const LOWER_E = 101;
const UPPER_E = 69;
const MINUS = 45;
const PLUS = 43;
const ZERO = 48;
const NINE = 57;

/** Digits a number can have before it may not fit a double; exponents from here may not. */
const LONG_NUMBER = 300;
const LARGE_EXPONENT = 300;

export interface Scan {
  tooDeep: boolean;
  /** A number literal that may overflow to Infinity: the parse then checks every number. */
  hugeNumber: boolean;
}

/** Nesting depth and number sizes outside strings, in one pass; stops at the depth limit. */
export function scanJson(text: string, maxDepth = MAX_JSON_DEPTH): Scan {
  let depth = 0;
  let hugeNumber = false;
  let digits = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      i = endOfString(text, i);
      digits = 0;
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth) return { tooDeep: true, hugeNumber };
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--;
    } else if (c >= ZERO && c <= NINE) {
      if (++digits >= LONG_NUMBER) hugeNumber = true;
    } else if ((c === LOWER_E || c === UPPER_E) && digits > 0) {
      let j = i + 1;
      const sign = text.charCodeAt(j);
      if (sign === MINUS) continue; // underflows to 0, which is finite
      if (sign === PLUS) j++;
      let exponent = 0;
      for (let d = text.charCodeAt(j); d >= ZERO && d <= NINE; d = text.charCodeAt(++j)) {
        exponent = Math.min(exponent * 10 + (d - ZERO), 1e6);
      }
      if (exponent + digits >= LARGE_EXPONENT) hugeNumber = true;
      digits = 0;
      i = j - 1;
    } else if (c !== 46) {
      digits = 0; // anything but a decimal point ends a run of digits
    }
  }
  return { tooDeep: false, hugeNumber };
}

/** The index of the quote closing the string that opens at `start` (or the end of the text). */
function endOfString(text: string, start: number): number {
  let at = start;
  for (;;) {
    at = text.indexOf('"', at + 1);
    if (at === -1) return text.length;
    let slashes = 0;
    while (text.charCodeAt(at - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return at;
  }
}

const PARSE_OPTIONS = { protoAction: 'error', constructorAction: 'error' } as const;

/**
 * Whether a text may hold a `__proto__` or `constructor` key: only then is it parsed by
 * secure-json-parse, whose two scans for them cost more than the parse itself on a large body.
 * A key spelled with escapes (`\u005f_proto__`) has a `\u`.
 */
const mayHoldPrototypeKeys = (text: string) =>
  text.includes('__proto__') || text.includes('constructor') || text.includes('\\u');

/**
 * Parses a request body: `__proto__` and `constructor` keys refused, nesting bounded, numbers
 * finite. Throws a 400 GatewayError that says what is wrong (and names the field of a number).
 */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) {
    throw new GatewayError(400, 'Request body is empty; a JSON object is required.');
  }
  const scan = scanJson(text);
  if (scan.tooDeep) {
    throw new GatewayError(
      400,
      `Request body is not valid JSON: nesting is deeper than ${MAX_JSON_DEPTH} levels.`,
    );
  }
  let value: unknown;
  try {
    const reviver = scan.hugeNumber ? finiteOnly : undefined;
    value = mayHoldPrototypeKeys(text)
      ? secureJson.parse(text, reviver, PARSE_OPTIONS)
      : JSON.parse(text, reviver);
  } catch (err) {
    if (err instanceof GatewayError) throw err;
    throw new GatewayError(400, `Request body is not valid JSON: ${(err as Error).message}`);
  }
  return value;
}

function finiteOnly(key: string, value: unknown): unknown {
  if (typeof value === 'number' && !Number.isFinite(value)) {
    throw fieldError(key === '' ? [] : [key], 'must be a finite number (got a number too large)');
  }
  return value;
}
