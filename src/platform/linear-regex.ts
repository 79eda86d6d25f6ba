import { RE2JS } from 're2js';

/**
 * Regular expressions that clients write (a tool schema's `pattern`, a stub's `prompt_regex`),
 * run in linear time. JavaScript's engine backtracks: `^(a|a)*$` on 40 `a`s and a `!` takes
 * hours, and no syntactic checker (safe-regex2 looks for nested quantifiers only) finds every
 * such pattern. RE2 has no backtracking, so no pattern it runs can stall the process; it runs
 * neither lookaround nor backreferences, so a pattern with them is refused, naming the field.
 * The pattern is JavaScript's syntax (checked by `RegExp` first), translated for RE2.
 * @see https://ajv.js.org/security.html#redos-attack
 * @see https://github.com/google/re2/wiki/Syntax
 */

export class LinearRegexError extends Error {
  override name = 'LinearRegexError';
}

/** A match: the whole match, then each group (undefined when it took no part). */
export type RegexMatch = readonly (string | undefined)[];

export interface LinearRegex {
  /** Whether the pattern matches somewhere in `text`. */
  test(text: string): boolean;
  /** The first match with its groups, or null. */
  exec(text: string): RegexMatch | null;
  /** `/pattern/flags`: Ajv tells compiled patterns apart by it. */
  toString(): string;
}

/**
 * The largest program (RE2's instructions) a client pattern may compile to. RE2's time is
 * linear in the text but also grows with the program: `(?:[ab]{1000})` repeated 70 times (981
 * characters, 70 000 instructions) took 5 s on a 20 KB prompt. Real patterns compile to tens
 * (`^[a-z0-9_-]{3,16}$`: 33, a UUID's: about 60).
 */
export const MAX_PROGRAM_SIZE = 400;

const FLAGS: Record<string, number> = {
  i: RE2JS.CASE_INSENSITIVE,
  m: RE2JS.MULTILINE,
  s: RE2JS.DOTALL,
  u: 0, // RE2 reads code points already
};

/**
 * Compiles a JavaScript regular expression (flags from `imsu`) to run in linear time. Throws a
 * LinearRegexError saying why when it is not JavaScript, or uses what RE2 cannot run.
 */
export function linearRegex(pattern: string, flags = ''): LinearRegex {
  try {
    new RegExp(pattern, flags); // compiles only: checking the syntax cannot stall
  } catch (err) {
    throw new LinearRegexError((err as Error).message);
  }
  const shown = `/${pattern.length > 80 ? `${pattern.slice(0, 80)}...` : pattern}/`;
  let re: RE2JS;
  try {
    let bits = 0;
    for (const flag of flags) bits |= FLAGS[flag] ?? 0;
    re = RE2JS.compile(RE2JS.translateRegExp(pattern), bits);
  } catch (err) {
    throw new LinearRegexError(
      `${shown} cannot be run in linear time (lookaround and backreferences cannot; RE2 says: ${(err as Error).message})`,
    );
  }
  const source = `/${pattern}/${flags}`;
  const size = re.programSize();
  if (size > MAX_PROGRAM_SIZE) {
    throw new LinearRegexError(
      `${shown} compiles to ${size} instructions, more than the ${MAX_PROGRAM_SIZE} the emulator runs (large repetition counts cost that much on every character)`,
    );
  }
  return {
    toString: () => source,
    test: (text) => re.test(text),
    exec(text) {
      if (!re.test(text)) return null; // the fast path, without groups
      const matcher = re.matcher(text);
      if (!matcher.find()) return null;
      const groups: (string | undefined)[] = [];
      for (let i = 0; i <= matcher.groupCount(); i++) groups.push(matcher.group(i) ?? undefined);
      return groups;
    },
  };
}

/**
 * The same engine for Ajv (`code.regExp`), so a schema's `pattern` and `patternProperties`
 * are checked in linear time. `code` is only read by standalone code, which this engine's Ajv
 * never writes.
 */
export const ajvLinearRegExp = Object.assign(
  (pattern: string, flags: string) => linearRegex(pattern, flags),
  { code: 'linearRegex' },
);
