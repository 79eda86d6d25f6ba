import { isDeepStrictEqual } from 'node:util';
import { type Static, Type } from '@sinclair/typebox';
import type { GroupName } from '../platform/group.js';
import { type LinearRegex, linearRegex } from '../platform/linear-regex.js';
import { REDACTED } from '../platform/request.js';
import { Literals } from '../platform/schema-helpers.js';
import { isSecretName } from '../platform/secrets.js';

/**
 * The one `match` object stubs, fault rules and journal checks share (docs/stubs.md "Stubs"): which
 * requests a rule is for. Every field given must hold; an empty match takes every request.
 */
export const GROUPS = ['video', 'messages', 'chat'] as const;

export const requestMatchFields = {
  group: Type.Optional(Literals(GROUPS)),
  path: Type.Optional(
    Type.String({
      pattern: '^/',
      maxLength: 2048,
      description: 'the request path without its query: exact, or a prefix ending in *',
    }),
  ),
  method: Type.Optional(Type.String({ pattern: '^[A-Za-z]{1,16}$' })),
  model: Type.Optional(
    Type.String({ minLength: 1, maxLength: 256, description: 'the model (or Azure deployment)' }),
  ),
  key: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'the raw API key; only its fingerprint is kept, never the key',
    }),
  ),
  header: Type.Optional(
    Type.Record(Type.String({ pattern: "^[!#-'*+.^-z|~0-9A-Za-z-]{1,256}$" }), Type.String(), {
      maxProperties: 32,
      description: 'header name → exact value',
    }),
  ),
  body: Type.Optional(
    Type.Record(Type.String({ pattern: '^\\$', maxLength: 512 }), Type.Unknown(), {
      maxProperties: 32,
      description:
        'JSON path → value: `$.a.b`, `$["a b"]`, `$.list[0]`, `$.list[-1]` (last), `$.list[*]` (any)',
    }),
  ),
  prompt_regex: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 1000,
      description:
        'a regular expression the prompt (the last user text; a video task’s prompt) must match',
    }),
  ),
  turn: Type.Optional(Type.Integer({ minimum: 1, description: 'the nth user turn' })),
};

export const RequestMatchSchema = Type.Object(requestMatchFields, { additionalProperties: false });
export type RequestMatch = Static<typeof RequestMatchSchema>;

/** The request a match is tried on; what needs the body is read only when a rule asks. */
export interface MatchTarget {
  group: GroupName;
  method: string;
  /** The path without its query. */
  path: string;
  /** The key's fingerprint. */
  keyHash: string;
  headers: Record<string, string | string[] | undefined>;
  /** The parsed body (undefined before it is read, or for a request without one). */
  body: unknown;
  model(): string | undefined;
  prompt(): string | undefined;
  turn(): number | undefined;
  /**
   * What body matches may still compare for this request (or this journal query), in values
   * selected times the nodes of the value each is compared with; a path past it is not met.
   */
  work?: { left: number };
  /** The prompt characters `prompt_regex`es may still read for this request (REGEX_SCAN_CHARS). */
  scan?: { left: number };
}

/**
 * The prompt characters the regexes of the rules tried for one request read, at most (each
 * reads the whole prompt: 1000 rules on a 900 KB prompt took 15 s); a rule whose regex would
 * read past it is not met. A regex reads about 60 million characters a second.
 */
export const REGEX_SCAN_CHARS = 50_000_000;

/**
 * The most a request's body matches compare, over every rule tried (see MatchTarget.work):
 * 32 paths of 10 000 selected arrays, compared with a 190-number array, took one rule 1.8 s.
 */
export const MATCH_WORK = 1_000_000;

/** A fresh budget of MATCH_WORK. */
export const matchWork = () => ({ left: MATCH_WORK });
/** A fresh budget of REGEX_SCAN_CHARS. */
export const regexScan = () => ({ left: REGEX_SCAN_CHARS });

/** Who asks, for a stub: the session it must belong to, and the request it must match. */
export interface MatchContext {
  session: string;
  /** The request as a match sees it (made on first use). */
  target(): MatchTarget;
}

type Segment = string | number | '*';

export interface CompiledMatch {
  source: RequestMatch;
  group?: GroupName;
  path?: { value: string; prefix: boolean };
  method?: string;
  model?: string;
  keyHash?: string;
  /** Name, value; with a function, the value is a fingerprint and the header is read through it. */
  header?: Array<[string, string] | [string, string, (value: string) => string]>;
  /** Each path, with the value it must select and that value's JSON nodes (its cost to compare). */
  body?: Array<{ path: string; segments: Segment[]; value: unknown; nodes: number }>;
  prompt?: LinearRegex;
  turn?: number;
  /** It reads the body: it can be tried only once the body is parsed. */
  needsBody: boolean;
}

export class MatchError extends Error {
  override name = 'MatchError';
  /** The field at fault (`match.body.$.a[`), and what is wrong with it. */
  constructor(
    readonly field: string,
    readonly problem: string,
  ) {
    super(`${field}: ${problem}`);
  }
}

/** Parses the JSON path subset `$`, `.name`, `["name"]`, `[n]`, `[-n]`, `[*]`, `.*`. */
export function parseJsonPath(path: string): Segment[] {
  const segments: Segment[] = [];
  const syntax = /\.([A-Za-z_$][\w$-]*|\*)|\[(-?\d{1,9}|\*|'(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")\]/y;
  if (!path.startsWith('$')) throw new MatchError(path, 'must start with $');
  syntax.lastIndex = 1;
  while (syntax.lastIndex < path.length) {
    const at = syntax.lastIndex;
    const step = syntax.exec(path);
    if (!step) throw new MatchError(path, `is not a JSON path this emulator reads (at ${at})`);
    const [, name, bracket] = step;
    if (name !== undefined) segments.push(name);
    else if (bracket === '*') segments.push('*');
    else if (bracket?.startsWith("'") || bracket?.startsWith('"')) {
      segments.push(bracket.slice(1, -1).replace(/\\(.)/g, '$1'));
    } else segments.push(Number(bracket));
  }
  return segments;
}

/** The JSON nodes of a value (objects, arrays, and the values in them). */
function jsonNodes(value: unknown): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const node = stack.pop();
    count++;
    if (typeof node === 'object' && node !== null) {
      for (const item of Object.values(node)) stack.push(item);
    }
  }
  return count;
}

/**
 * The most values one path selects: a wildcard over a body's million-item array, tried by
 * every rule, held the event loop for seconds. Past it, the rest are not looked at.
 */
export const MAX_SELECTED = 10_000;

/** The values a path selects in `value` (several through `*`; at most MAX_SELECTED). */
export function selectPath(value: unknown, segments: readonly Segment[]): unknown[] {
  let current: unknown[] = [value];
  for (const segment of segments) {
    const next: unknown[] = [];
    for (const node of current) {
      if (next.length >= MAX_SELECTED) break;
      if (node === null || typeof node !== 'object') continue;
      if (segment === '*') {
        // one by one: a spread of a 200 000-item array overflows the stack
        if (Array.isArray(node)) {
          for (let i = 0; i < node.length && next.length < MAX_SELECTED; i++) next.push(node[i]);
        } else {
          for (const key in node) {
            if (next.length >= MAX_SELECTED) break;
            next.push((node as Record<string, unknown>)[key]);
          }
        }
      } else if (typeof segment === 'number') {
        if (!Array.isArray(node)) continue;
        const index = segment < 0 ? node.length + segment : segment;
        if (index >= 0 && index < node.length) next.push(node[index]);
      } else if (Object.hasOwn(node, segment)) {
        next.push((node as Record<string, unknown>)[segment]);
      }
    }
    current = next;
  }
  return current;
}

/**
 * A compiled regular expression for client text, run in linear time: a prompt is client input,
 * and a backtracking pattern could stall the process on it. Throws MatchError naming the field.
 */
export function safePattern(
  pattern: string,
  flags: string | undefined,
  field: string,
): LinearRegex {
  try {
    return linearRegex(pattern, flags);
  } catch (err) {
    throw new MatchError(field, (err as Error).message);
  }
}

/** Marks a credential already turned into its fingerprint (a match as stored). */
const FINGERPRINT = '\u0000fingerprint:';

/**
 * A match as it may be stored: its key, and the values of its credential headers, replaced by
 * their fingerprints, so that no store (the shared one included) ever holds a credential.
 */
export function storableMatch<M extends { key?: string; header?: Record<string, string> }>(
  match: M,
  hashKey: (key: string) => string,
): M {
  const { key, header } = match;
  const fingerprint = (value: string) =>
    value.startsWith(FINGERPRINT) ? value : `${FINGERPRINT}${hashKey(value)}`;
  const secretHeader = header !== undefined && Object.keys(header).some(isSecretName);
  if (key === undefined && !secretHeader) return match;
  const stored: M = { ...match };
  if (key !== undefined) stored.key = fingerprint(key);
  if (header !== undefined && secretHeader) {
    stored.header = Object.fromEntries(
      Object.entries(header).map(([name, value]) => [
        name,
        isSecretName(name) ? fingerprint(value) : value,
      ]),
    );
  }
  return stored;
}

/** Compiles a match; `hashKey` turns a raw key into its fingerprint. Throws MatchError. */
export function compileMatch(
  match: RequestMatch,
  hashKey: (key: string) => string,
  prefix = 'match',
): CompiledMatch {
  const compiled: CompiledMatch = { source: match, needsBody: false };
  if (match.group !== undefined) compiled.group = match.group;
  if (match.path !== undefined) {
    const prefixed = match.path.endsWith('*');
    compiled.path = { value: prefixed ? match.path.slice(0, -1) : match.path, prefix: prefixed };
  }
  if (match.method !== undefined) compiled.method = match.method.toUpperCase();
  if (match.key !== undefined) {
    compiled.keyHash = match.key.startsWith(FINGERPRINT)
      ? match.key.slice(FINGERPRINT.length)
      : hashKey(match.key);
  }
  if (match.header !== undefined) {
    compiled.header = Object.entries(match.header).map(([name, value]) =>
      value.startsWith(FINGERPRINT)
        ? [name.toLowerCase(), value.slice(FINGERPRINT.length), hashKey]
        : [name.toLowerCase(), value],
    );
  }
  if (match.body !== undefined) {
    compiled.body = Object.entries(match.body).map(([path, value]) => {
      try {
        return { path, segments: parseJsonPath(path), value, nodes: jsonNodes(value) };
      } catch (err) {
        throw new MatchError(`${prefix}.body.${path}`, (err as MatchError).problem);
      }
    });
  }
  if (match.prompt_regex !== undefined) {
    compiled.prompt = safePattern(match.prompt_regex, undefined, `${prefix}.prompt_regex`);
  }
  if (match.model !== undefined) compiled.model = match.model;
  if (match.turn !== undefined) compiled.turn = match.turn;
  compiled.needsBody =
    match.model !== undefined ||
    match.body !== undefined ||
    match.prompt_regex !== undefined ||
    match.turn !== undefined;
  return compiled;
}

const headerValue = (value: string | string[] | undefined) =>
  typeof value === 'string' ? value : value?.join(', ');

/**
 * Charges one read of the prompt by a regex to a request's scan budget (see REGEX_SCAN_CHARS):
 * false when it would pass it, and the regex is then not run.
 */
export function scanWithin(scan: { left: number } | undefined, prompt: string): boolean {
  if (scan === undefined) return true;
  scan.left -= prompt.length;
  return scan.left >= 0;
}

/**
 * The fields of a match a request does not meet, in the order of the match (empty: it
 * matches). `prompt_regex` is checked last.
 */
export function mismatches(m: CompiledMatch, t: MatchTarget, firstOnly = false): string[] {
  const differ: string[] = [];
  if (m.group !== undefined && m.group !== t.group) differ.push('group');
  if (
    m.path !== undefined &&
    !(m.path.prefix ? t.path.startsWith(m.path.value) : t.path === m.path.value)
  ) {
    differ.push('path');
  }
  if (m.method !== undefined && m.method !== t.method) differ.push('method');
  if (m.keyHash !== undefined && m.keyHash !== t.keyHash) differ.push('key');
  if (m.header) {
    for (const [name, value, hashed] of m.header) {
      const actual = headerValue(t.headers[name]);
      const shown = hashed && actual !== undefined ? hashed(actual) : actual;
      if (shown !== value) differ.push(`header.${name}`);
    }
  }
  if (m.model !== undefined && t.model() !== m.model) differ.push('model');
  if (m.turn !== undefined && t.turn() !== m.turn) differ.push('turn');
  if (m.body) {
    for (const { path, segments, value, nodes } of m.body) {
      if (firstOnly && differ.length > 0) return differ;
      const selected = selectPath(t.body, segments);
      const work = t.work;
      if (work) work.left -= selected.length * nodes;
      if ((work && work.left < 0) || !selected.some((v) => isDeepStrictEqual(v, value))) {
        differ.push(`body.${path}`);
      }
    }
  }
  if (firstOnly && differ.length > 0) return differ;
  if (m.prompt) {
    const prompt = t.prompt();
    if (prompt === undefined || !scanWithin(t.scan, prompt) || !m.prompt.test(prompt)) {
      differ.push('prompt_regex');
    }
  }
  return differ;
}

/** Whether a request meets a match: it stops at the first field it does not. */
export function meets(m: CompiledMatch, t: MatchTarget): boolean {
  return mismatches(m, t, true).length === 0;
}

/** A match as shown: a key, or the value a credential header must have, is never echoed. */
export function shownMatch<M extends { key?: string; header?: Record<string, string> }>(
  match: M,
): M {
  const { key, header } = match;
  const secretHeader = header !== undefined && Object.keys(header).some(isSecretName);
  if (key === undefined && !secretHeader) return match;
  const shown: { key?: string; header?: Record<string, string> } = { ...match };
  if (key !== undefined) shown.key = REDACTED;
  if (secretHeader) {
    shown.header = Object.fromEntries(
      Object.entries(header).map(([name, value]) => [name, isSecretName(name) ? REDACTED : value]),
    );
  }
  return shown as M;
}
