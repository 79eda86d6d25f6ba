import secureJson from 'secure-json-parse';
import { fieldError, GatewayError, type PathSegment } from './errors.js';

/**
 * Reading a JSON request body, defensively. `JSON.parse` is fast but has two blind spots a
 * hostile body can use: it builds any nesting depth (31 MB of `[` kept the event loop busy
 * for seconds before failing), and it turns a number too large for a double (`1e309`) into
 * `Infinity`, which validators take for a number and `JSON.stringify` later writes as `null`.
 * So a parsed body is walked once, up to the depth limit, for both; and a body large enough
 * that parsing a hostile one would itself take long is first scanned for its depth.
 */

/** Deeper than any request upstream documents (nested tool schemas included). */
export const MAX_JSON_DEPTH = 256;

/**
 * Bodies longer than this are scanned for their depth before they are parsed. Up to it, the
 * worst (every character an open bracket) parses in about a millisecond here, and the walk of
 * the parsed value is several times cheaper than a scan of the text.
 */
export const SCAN_FROM_CHARS = 16 * 1024;

const QUOTE = 34;
const BACKSLASH = 92;
const OPEN_ARRAY = 91;
const OPEN_OBJECT = 123;
const CLOSE_ARRAY = 93;
const CLOSE_OBJECT = 125;

/**
 * The most values (objects, arrays, and the items and members after a comma) a body may hold.
 * Parsed, each costs tens of bytes and its share of the parse: 31 MB of `{},` (10 million
 * objects) took JSON.parse 5 s and 1 GB. A real request has far fewer: a conversation of
 * 100 000 messages has about 500 000.
 */
export const MAX_JSON_VALUES = 2_000_000;
const COMMA = 44;

/** What a parsed value costs the heap beside its characters, about (an empty object: 56). */
const VALUE_BYTES = 64;

/**
 * About the memory a JSON body takes while a request holds it: its text (the journal keeps
 * it) and the parsed copy of its characters, two bytes each at most, and tens of bytes a value.
 * 6 MB of `{},` parses to 2 million objects: its bytes alone would count a twentieth of it.
 */
export function heldWeight(text: string): number {
  const values = scan(text, Number.POSITIVE_INFINITY, Number.POSITIVE_INFINITY) as number;
  return 4 * text.length + VALUE_BYTES * values;
}

/**
 * What the text outside its strings is over (nesting depth, or the count of values), or the
 * count of its values (objects, arrays, and the items and members after a comma).
 */
function scan(text: string, maxDepth: number, maxValues: number): 'deep' | 'wide' | number {
  let depth = 0;
  let values = 0;
  const n = text.length;
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) i = endOfString(text, i);
    else if (c === COMMA) {
      if (++values > maxValues) return 'wide';
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > maxDepth) return 'deep';
      if (++values > maxValues) return 'wide';
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) depth--;
  }
  return values;
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

/** A parsed JSON object (not an array, not null). */
export const isJsonObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const PARSE_OPTIONS = { protoAction: 'error', constructorAction: 'error' } as const;

/**
 * Whether a text may hold a `__proto__` or `constructor` key: only then is it parsed by
 * secure-json-parse, whose two scans for them cost more than the parse itself on a large body.
 * A key spelled with escapes (`\u005f_proto__`) has a `\u`.
 */
const mayHoldPrototypeKeys = (text: string) =>
  text.includes('__proto__') || text.includes('constructor') || text.includes('\\u');

const tooDeepError = () =>
  new GatewayError(
    400,
    `Request body is not valid JSON: nesting is deeper than ${MAX_JSON_DEPTH} levels.`,
  );

/** What the walk found wrong: nesting past the limit, or the path of a number that overflowed. */
type Problem = 'deep' | PathSegment[];

/** Walks a parsed value to the depth limit; the first problem, or undefined. */
function problemIn(value: unknown, depth: number): Problem | undefined {
  if (depth > MAX_JSON_DEPTH) return 'deep';
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const problem = problemOf(value[i], depth);
      if (problem !== undefined) return problem === 'deep' ? problem : [i, ...problem];
    }
    return undefined;
  }
  for (const key in value as Record<string, unknown>) {
    const problem = problemOf((value as Record<string, unknown>)[key], depth);
    if (problem !== undefined) return problem === 'deep' ? problem : [key, ...problem];
  }
  return undefined;
}

function problemOf(item: unknown, depth: number): Problem | undefined {
  if (typeof item === 'object' && item !== null) return problemIn(item, depth + 1);
  if (typeof item === 'number' && !Number.isFinite(item)) return [];
  return undefined;
}

/**
 * Parses a request body: `__proto__` and `constructor` keys refused, nesting bounded, numbers
 * finite. Throws a 400 GatewayError that says what is wrong (and names the field of a number).
 */
export function parseJsonBody(text: string): unknown {
  if (text.length === 0) {
    throw new GatewayError(400, 'Request body is empty; a JSON object is required.');
  }
  if (text.length > SCAN_FROM_CHARS) {
    const over = scan(text, MAX_JSON_DEPTH, MAX_JSON_VALUES);
    if (over === 'deep') throw tooDeepError();
    if (over === 'wide') {
      throw new GatewayError(
        400,
        `Request body is not valid JSON: it holds more than ${MAX_JSON_VALUES} values (objects, arrays and list items).`,
      );
    }
  }
  let value: unknown;
  try {
    value = mayHoldPrototypeKeys(text)
      ? secureJson.parse(text, undefined, PARSE_OPTIONS)
      : JSON.parse(text);
  } catch (err) {
    throw new GatewayError(400, `Request body is not valid JSON: ${(err as Error).message}`);
  }
  const problem = problemOf(value, 0);
  if (problem === 'deep') throw tooDeepError();
  if (problem !== undefined) {
    throw fieldError(problem, 'must be a finite number (got a number too large)');
  }
  return value;
}
