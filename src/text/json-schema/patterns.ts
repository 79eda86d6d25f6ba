import { joinSurrogateEscapes, shortPropertyName } from '../../platform/linear-regex.js';
import { isNode, type Node } from '../schema-nodes.js';
import { num } from './limits.js';

/** The widest numbers the generator is asked for: across ±1.7e308 it makes Infinity. */
const WIDEST = 1e12;

/** The range the generator makes numbers in when a schema gives no bound: ±1000. */
const GENERATOR_RANGE = 1000;

/**
 * Bounds past ±WIDEST brought to it in the generator's copy, when the range keeps room: a value
 * within them is within the schema's (Ajv still checks it against the schema as sent). A range
 * open at one end and wholly outside the generator's own (`minimum: 1000000`, which it would
 * meet with its default maximum of 1000) gets the other end, as far again from zero.
 */
export function narrowRange(copy: Node): void {
  const low = Math.max(num(copy.minimum, -Infinity), num(copy.exclusiveMinimum, -Infinity));
  const high = Math.min(num(copy.maximum, Infinity), num(copy.exclusiveMaximum, Infinity));
  if (high > -WIDEST) {
    if (num(copy.minimum, 0) < -WIDEST) copy.minimum = -WIDEST;
    if (num(copy.exclusiveMinimum, 0) < -WIDEST) copy.exclusiveMinimum = -WIDEST;
  }
  if (low < WIDEST) {
    if (num(copy.maximum, 0) > WIDEST) copy.maximum = WIDEST;
    if (num(copy.exclusiveMaximum, 0) > WIDEST) copy.exclusiveMaximum = WIDEST;
  }
  if (high === Infinity && low >= GENERATOR_RANGE) {
    copy.maximum = Math.min(low + Math.max(GENERATOR_RANGE, low), Number.MAX_VALUE);
  }
  if (low === -Infinity && high <= -GENERATOR_RANGE) {
    copy.minimum = Math.max(high + Math.min(-GENERATOR_RANGE, high), -Number.MAX_VALUE);
  }
}

/**
 * Characters of a Unicode property the generator makes, all of them in the property: it reads
 * `\\p{Lu}` as a `p`, so `^\\p{Lu}\\p{Ll}+$` is made from `^[A-Z][a-z]+$` instead (Ajv checks the
 * value against the pattern as sent). By the names RE2 reads (see shortPropertyName: the long
 * names of categories come to these); properties not named here are left as they are.
 * @see https://developer.mozilla.org/en-US/docs/Web/JavaScript/Reference/Regular_expressions/Unicode_character_class_escape
 */
const PROPERTY_CHARACTERS: Record<string, string> = {
  L: 'a-zA-Z',
  Alphabetic: 'a-zA-Z',
  Alpha: 'a-zA-Z',
  Latin: 'a-zA-Z',
  Lu: 'A-Z',
  Uppercase: 'A-Z',
  Ll: 'a-z',
  Lowercase: 'a-z',
  N: '0-9',
  Nd: '0-9',
  P: '.,!?',
  Po: '.,!?',
  Zs: ' ',
  White_Space: ' ',
  ASCII: ' -~',
  Any: ' -~',
};

/** Characters a pattern escapes to mean themselves (`\\.`), in a class or out of one. */
const SYNTAX_CHARACTERS = new Set('\\^$.|?*+()[]{}/-');

/**
 * The length of a code-point escape at `i` (`\\u00e9`, `\\u{1F600}`, `\\x41`) and the code
 * point it spells, or undefined when there is none there.
 */
function codePointEscape(pattern: string, i: number): { cp: number; length: number } | undefined {
  const kind = pattern[i + 1];
  const hex = (text: string) =>
    /^[0-9a-fA-F]+$/.test(text) ? Number.parseInt(text, 16) : Number.NaN;
  let cp = Number.NaN;
  let length = 0;
  if (kind === 'x') {
    cp = hex(pattern.slice(i + 2, i + 4));
    length = 4;
  } else if (kind === 'u' && pattern[i + 2] === '{') {
    const close = pattern.indexOf('}', i);
    if (close > 0 && close - i <= 9) {
      cp = hex(pattern.slice(i + 3, close));
      length = close + 1 - i;
    }
  } else if (kind === 'u') {
    cp = hex(pattern.slice(i + 2, i + 6));
    length = 6;
  }
  return Number.isNaN(cp) || cp > 0x10ffff ? undefined : { cp, length };
}

/**
 * A pattern as the generator can make text for it: it reads `\\p{Lu}` as a `p` and `\\u00e9`
 * as `u00e9`, so each `\\p{...}` named in PROPERTY_CHARACTERS is spelt out (`^[A-Z][a-z]+$`
 * for `^\\p{Lu}\\p{Ll}+$`), and each `\\u00e9`, `\\u{1F600}` and `\\x41` written as its
 * character (escaped where it is syntax; one beyond the BMP only outside a class, as a group of
 * its two UTF-16 units). Ajv checks the value against the pattern as sent.
 */
export function generatorPattern(given: string): string {
  const pattern = joinSurrogateEscapes(given);
  let out = '';
  let inClass = false;
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (c === '\\') {
      const close = pattern[i + 1] === 'p' && pattern[i + 2] === '{' ? pattern.indexOf('}', i) : -1;
      const name = close > 0 ? shortPropertyName(pattern.slice(i + 3, close)) : '';
      const chars = Object.hasOwn(PROPERTY_CHARACTERS, name)
        ? PROPERTY_CHARACTERS[name]
        : undefined;
      const spelled = close > 0 ? undefined : codePointEscape(pattern, i);
      if (close > 0 && chars !== undefined) {
        out += inClass ? chars : `[${chars}]`;
        i = close;
      } else if (spelled && !(inClass && spelled.cp > 0xffff)) {
        const char = String.fromCodePoint(spelled.cp);
        out += SYNTAX_CHARACTERS.has(char)
          ? `\\${char}`
          : spelled.cp > 0xffff
            ? `(?:${char})`
            : char;
        i += spelled.length - 1;
      } else {
        out += pattern.slice(i, i + 2);
        i++;
      }
      continue;
    }
    if (c === '[') inClass = true;
    else if (c === ']') inClass = false;
    out += c;
  }
  return out;
}

/** A pattern of literal text (`\\.` spells a `.`), as zod writes `startsWith`/`endsWith`/`includes`. */
const LITERAL = String.raw`(?:[^\\^$.|?*+()[\]{}]|\\[\\^$.|?*+()[\]{}/-])+`;
const PREFIX = new RegExp(`^\\^(${LITERAL})(?:\\.\\*)?$`);
const SUFFIX = new RegExp(`^(?:\\.\\*)?(${LITERAL})\\$$`);
const INFIX = new RegExp(`^(?:\\.\\*)?(${LITERAL})(?:\\.\\*)?$`);

/**
 * The generator meets one `pattern` of a string, not those of its `allOf`: zod writes
 * `startsWith("ab").endsWith("yz")` as `allOf: [{pattern: "^ab.*"}, {pattern: ".*yz$"}]`. When
 * every pattern of a node and its `allOf` is such a literal start, end or part, the copy gets
 * one pattern that has them all (`^ab.*yz$`), in place of those branches; others are left.
 */
export function foldPatterns(copy: Node): void {
  const branches = copy.allOf as unknown[];
  const folded = branches.filter(
    (b): b is Node => isNode(b) && typeof b.pattern === 'string' && Object.keys(b).length === 1,
  );
  if (folded.length === 0) return;
  const patterns = folded.map((b) => b.pattern as string);
  if (typeof copy.pattern === 'string') patterns.push(copy.pattern);
  let prefix: string | undefined;
  let suffix: string | undefined;
  const parts: string[] = [];
  for (const pattern of patterns) {
    const start = PREFIX.exec(pattern)?.[1];
    const end = start === undefined ? SUFFIX.exec(pattern)?.[1] : undefined;
    const part = start === undefined && end === undefined ? INFIX.exec(pattern)?.[1] : undefined;
    if (start !== undefined && prefix === undefined) prefix = start;
    else if (end !== undefined && suffix === undefined) suffix = end;
    else if (part !== undefined) parts.push(part);
    else return;
  }
  copy.pattern = `^${[prefix ?? '', ...parts, suffix ?? ''].join('.*')}$`;
  const left = branches.filter((b) => !folded.includes(b as Node));
  if (left.length > 0) copy.allOf = left;
  else delete copy.allOf;
}
