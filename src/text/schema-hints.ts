/**
 * Keywords a client library moved into a schema's `description`. Messages' structured output
 * takes few keywords, so the SDKs rewrite the others as text for the model to read, and check
 * the answer against the full schema themselves: a model that ignored the text would fail
 * their check (`rating: Too big`). The emulator reads the text back as keywords, as a model
 * obeys it, when it makes a value. Two forms exist:
 * - `@anthropic-ai/sdk` (and LangChain through it) appends `{minimum: 0, maximum: 10}`, each
 *   value as JSON, after a blank line;
 * - the Vercel AI SDK appends a line `minimum: 0; max items: 5; pattern: ^[A-Z]{3}$.`, names
 *   spelt out in words, strings as they are.
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/lib/transform-json-schema.ts
 * @see https://github.com/vercel/ai/blob/main/packages/anthropic/src/sanitize-json-schema.ts
 */

import { linearRegex, MAX_SCHEMA_PROGRAM_SIZE } from '../platform/linear-regex.js';

type Check = (value: unknown) => boolean;

const isNumber: Check = (v) => typeof v === 'number' && Number.isFinite(v);
const isCount: Check = (v) => Number.isSafeInteger(v) && (v as number) >= 0;
const isPrimitive = (v: unknown) =>
  v === null || ['string', 'number', 'boolean'].includes(typeof v);

/** A hinted pattern's length at most: a client's hints are short, and RE2 compiles each. */
const MAX_HINT_PATTERN_CHARS = 256;
/** Hinted patterns compiled for one schema at most (one costs RE2 up to tens of ms). */
const MAX_HINT_PATTERNS = 16;
/** Description characters one schema's hints are looked for in, at most. */
const MAX_HINT_READ_CHARS = 256 * 1024;

/** Whether the generator may use a pattern: one a schema's may be (RE2, bounded). */
function compiles(pattern: string): boolean {
  try {
    linearRegex(pattern, 'u', MAX_SCHEMA_PROGRAM_SIZE);
    return true;
  } catch {
    return false;
  }
}

/** The keywords read back, with the values each may take. */
const KEYWORDS: Record<string, Check> = {
  minimum: isNumber,
  maximum: isNumber,
  exclusiveMinimum: isNumber,
  exclusiveMaximum: isNumber,
  // A step under 1e-9 makes the generator's multiples overflow; a model would ignore it too.
  multipleOf: (v) => isNumber(v) && (v as number) >= 1e-9,
  minLength: isCount,
  maxLength: isCount,
  minItems: isCount,
  maxItems: isCount,
  minProperties: isCount,
  maxProperties: isCount,
  uniqueItems: (v) => typeof v === 'boolean',
  // Compiled too (see `compiles`), within the schema's budget of patterns.
  pattern: (v) => typeof v === 'string' && v.length <= MAX_HINT_PATTERN_CHARS,
  format: (v) => typeof v === 'string',
  enum: (v) => Array.isArray(v) && v.length > 0 && v.every(isPrimitive),
  const: isPrimitive,
};

/** `exclusive minimum` → `exclusiveMinimum`. */
const camel = (words: string) => words.replace(/ ([a-z])/g, (_, c: string) => c.toUpperCase());
const WORDS = Object.keys(KEYWORDS).map((k) => k.replace(/[A-Z]/g, (c) => ` ${c.toLowerCase()}`));
/** Where a Vercel line's entries start: `minimum: `, `; max items: `. */
const VERCEL_ENTRY = new RegExp(`(?:^|; )(${WORDS.join('|')}): `, 'g');
/** Values the Vercel form writes as they are, not as JSON. */
const RAW_STRINGS = new Set(['pattern', 'format']);

function jsonOf(text: string): { ok: boolean; value?: unknown } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

/**
 * Where a JSON value that starts at `start` must end: at the first `,` outside its strings and
 * brackets, or at the end of the text. One pass: a value is never parsed more than once.
 */
function valueEnd(text: string, start: number): number {
  let depth = 0;
  for (let i = start; i < text.length; i++) {
    const c = text[i];
    if (c === '"') {
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
    } else if (c === '[' || c === '{') depth++;
    else if (c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 0) return i;
  }
  return text.length;
}

const ENTRY_NAME = /([A-Za-z$]+): /y;

/** `{minimum: 0, enum: ["a", "b"]}`: entries of a name and a JSON value (which may hold `, `). */
function anthropicForm(block: string): Record<string, unknown> | undefined {
  const body = block.slice(1, -1);
  const found: Record<string, unknown> = {};
  let at = 0;
  for (;;) {
    ENTRY_NAME.lastIndex = at;
    const name = ENTRY_NAME.exec(body);
    if (!name?.[1]) return undefined;
    const end = valueEnd(body, ENTRY_NAME.lastIndex);
    const parsed = jsonOf(body.slice(ENTRY_NAME.lastIndex, end));
    if (!parsed.ok) return undefined;
    found[name[1]] = parsed.value;
    if (end === body.length) return found;
    if (body[end + 1] !== ' ') return undefined;
    at = end + 2;
  }
}

/** `minimum: 0; max items: 5; pattern: ^a$.` */
function vercelForm(line: string): Record<string, unknown> | undefined {
  const text = line.slice(0, -1);
  const starts = [...text.matchAll(VERCEL_ENTRY)];
  if (starts[0]?.index !== 0) return undefined;
  const found: Record<string, unknown> = {};
  starts.forEach((match, i) => {
    const key = camel(match[1] as string);
    const value = text.slice((match.index ?? 0) + match[0].length, starts[i + 1]?.index);
    if (RAW_STRINGS.has(key)) found[key] = value;
    else {
      const parsed = jsonOf(value);
      if (parsed.ok) found[key] = parsed.value;
    }
  });
  return found;
}

/**
 * The longest hint read: a client's are a few keywords (an enum of a few hundred characters at
 * most); a longer block at the end of a description is prose, not a hint.
 */
export const MAX_HINT_CHARS = 4096;

/** The keywords a description holds as text, of the values each may take; none compiled. */
function readHints(description: string): Record<string, unknown> {
  const trimmed = description.trimEnd();
  let hint: string | undefined;
  let read: (hint: string) => Record<string, unknown> | undefined = anthropicForm;
  if (trimmed.endsWith('}')) {
    const after = trimmed.lastIndexOf('\n\n{');
    if (after >= 0) hint = trimmed.slice(after + 2);
    else if (trimmed.startsWith('{')) hint = trimmed;
  } else if (trimmed.endsWith('.')) {
    hint = trimmed.slice(trimmed.lastIndexOf('\n') + 1);
    read = vercelForm;
  }
  const found = hint !== undefined && hint.length <= MAX_HINT_CHARS ? read(hint) : undefined;
  const kept: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(found ?? {})) {
    if (Object.hasOwn(KEYWORDS, key) && KEYWORDS[key]?.(value)) kept[key] = value;
  }
  return kept;
}

/**
 * The pattern a description holds as text, not compiled yet, or undefined: a schema's size is
 * weighed with it before anything is compiled.
 */
export function hintedPattern(description: string): string | undefined {
  if (!description.includes('pattern')) return undefined;
  const { pattern } = readHints(description);
  return typeof pattern === 'string' ? pattern : undefined;
}

/**
 * The keywords a description holds as text, checked; empty when it holds none. `mayCompile`
 * says whether a pattern may still be compiled (the schema's budget).
 */
export function hintedKeywords(
  description: string,
  mayCompile: () => boolean = () => true,
): Record<string, unknown> {
  const kept = readHints(description);
  if (typeof kept.pattern === 'string' && !(mayCompile() && compiles(kept.pattern))) {
    delete kept.pattern;
  }
  return kept;
}

/**
 * For one schema: the node with the keywords its description holds (its own keywords win), or
 * the node itself when it holds none; each node read once however often it is reached (through
 * `$ref`s). Within one budget for the schema (the description text looked at, the patterns
 * compiled), past which nodes are taken as they are.
 */
export function hintReader(): <T extends Record<string, unknown>>(node: T) => T {
  let chars = 0;
  let patterns = 0;
  const read = new Map<object, object>();
  const readOnce = <T extends Record<string, unknown>>(node: T): T => {
    if (typeof node.description !== 'string') return node;
    chars += node.description.length;
    if (chars > MAX_HINT_READ_CHARS) return node;
    const hints = hintedKeywords(node.description, () => ++patterns <= MAX_HINT_PATTERNS);
    for (const key of Object.keys(node)) delete hints[key];
    return Object.keys(hints).length === 0 ? node : { ...hints, ...node };
  };
  return (node) => {
    let hinted = read.get(node) as typeof node | undefined;
    if (hinted === undefined) {
      hinted = readOnce(node);
      read.set(node, hinted);
    }
    return hinted;
  };
}
