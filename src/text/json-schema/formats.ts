import { DATA_KEYWORDS, isNode, type Node } from '../schema-nodes.js';
import { GENERATED_LENGTH, num } from './limits.js';
import { namesWanted } from './names.js';

/** The `format` formatForGenerator set aside, per generator's copy (`made`: its pattern too). */
const setAside = new WeakMap<Node, { format: string; made?: boolean }>();

/**
 * The generator makes a `format` from its own list and ignores a `pattern` or a length beside
 * it: zod's `uuidv7()` (a UUID format and a version-7 pattern) came out a version-4 UUID, an
 * email cut to its `maxLength` is no address. With a pattern, the generator's copy is made from
 * the pattern alone (zod's patterns spell their format out; Ajv still checks both) unless the
 * generator cannot make the pattern's characters; an email
 * with a length, from a pattern of an address of that length. True when it set one aside.
 */
export function formatForGenerator(copy: Node): boolean {
  if (typeof copy.format !== 'string') return false;
  // (a pattern that still holds a `\\p{...}` the generator cannot spell, zod's `emoji()`'s
  // `\\p{Extended_Pictographic}`, is met by the format's value, not by the pattern's text)
  if (typeof copy.pattern === 'string' && !copy.pattern.includes('\\p{')) {
    setAside.set(copy, { format: copy.format });
    delete copy.format;
    return true;
  }
  if (copy.format !== 'email' || !('maxLength' in copy || 'minLength' in copy)) return false;
  // local@domain.com: the letters of the two names share what the length leaves them.
  const most = num(copy.maxLength, GENERATED_LENGTH) - 5;
  const least = Math.max(2, num(copy.minLength, 0) - 5);
  if (most < least) return false;
  const half = (n: number) => Math.ceil(n / 2);
  setAside.set(copy, { format: copy.format, made: true });
  copy.pattern = `^[a-z]{${half(least)},${half(most)}}@[a-z]{${least - half(least)},${most - half(most)}}\\.com$`;
  delete copy.format;
  return true;
}

/**
 * The copy as the generator would have it with its formats (`{format: "date", pattern: "^201"}`
 * is met by a date, seldom by the pattern's text).
 */
export function withFormats(copy: Node): Node {
  const clone = (value: unknown): unknown => {
    if (Array.isArray(value)) return value.map(clone);
    if (!isNode(value)) return value;
    const out: Node = {};
    for (const key of Object.keys(value)) {
      out[key] = DATA_KEYWORDS.has(key) ? value[key] : clone(value[key]);
    }
    const want = namesWanted.get(value);
    if (want) namesWanted.set(out, want);
    const aside = setAside.get(value);
    if (aside) {
      out.format = aside.format;
      if (aside.made) delete out.pattern;
    }
    return out;
  };
  return clone(copy) as Node;
}
