import vm from 'node:vm';
import { RE2JS } from 're2js';
import { Lru } from './lru.js';

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
  constructor(
    message: string,
    /** What is wrong: not JavaScript, a feature RE2 does not run, or too large a program. */
    readonly kind: 'syntax' | 'unsupported' | 'size' = 'syntax',
  ) {
    super(message);
  }
}

/** A match: the whole match, then each group (undefined when it took no part). */
export type RegexMatch = readonly (string | undefined)[];

export interface LinearRegex {
  /** Whether the pattern matches somewhere in `text`. */
  test(text: string): boolean;
  /** The first match with its groups, or null (`['']` when reading them would cost too much). */
  exec(text: string): RegexMatch | null;
  /** `/pattern/flags`: Ajv tells compiled patterns apart by it. */
  toString(): string;
}

/**
 * The largest program (RE2's instructions) a client pattern run on prompts may compile to.
 * RE2's time is linear in the text but also grows with the program: `(?:[ab]{1000})` repeated
 * 70 times (981 characters, 70 000 instructions) took 5 s on a 20 KB prompt. Real patterns
 * compile to tens (`^[a-z0-9_-]{3,16}$`: 33, a UUID's: about 60).
 */
export const MAX_PROGRAM_SIZE = 400;

/**
 * The largest program a JSON Schema `pattern` may compile to. It only ever checks values the
 * emulator made (short strings), not a client's text, so it may be larger: zod writes an IPv6
 * address's as 710 instructions, an ISO currency's as 506.
 */
export const MAX_SCHEMA_PROGRAM_SIZE = 2000;

/**
 * Past twice its limit by this estimate, a pattern is refused before RE2 compiles it:
 * compiling costs about a microsecond an instruction, and RE2 compiles up to 1.4 million
 * (`\\p{L}{1000}` 60 times: 660 characters, 70 ms and tens of MB). Twice, as the estimate may
 * run over (by half at most on zod's patterns).
 */
const ESTIMATE_SLACK = 2;

const LARGEST = 1e9;
const COUNTED = /\{(\d+)(,(\d*))?\}/y;

/**
 * About the instructions RE2 compiles a JavaScript pattern (checked by `RegExp` already) to,
 * read from its text in one pass, without compiling it: RE2's parser's own estimate (a class
 * or a character is one, a group two more, `x{m,n}` n times x and n - m more).
 * @see https://github.com/google/re2/blob/main/re2/parse.cc (RepetitionWalker, ComputeSize)
 */
export function estimatedProgramSize(pattern: string): number {
  const outer: { total: number; last: number }[] = [];
  /** The size of the current group so far, and of its last item (what a quantifier repeats). */
  let total = 0;
  let last = 0;
  const item = (size: number) => {
    total += size;
    last = size;
  };
  const repeat = (grown: number) => {
    const size = Math.min(grown, LARGEST); // past RE2's limits anyway: kept finite
    total += size - last;
    last = size;
  };
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i];
    if (c === '\\') {
      const next = pattern[i + 1];
      const braced = (next === 'u' || next === 'p' || next === 'P') && pattern[i + 2] === '{';
      const named = next === 'k' && pattern[i + 2] === '<';
      const close = braced ? pattern.indexOf('}', i) : named ? pattern.indexOf('>', i) : -1;
      i = close < 0 ? i + 2 : close + 1;
      item(1);
    } else if (c === '[') {
      for (i++; i < pattern.length && pattern[i] !== ']'; i++) if (pattern[i] === '\\') i++;
      i++;
      item(1);
    } else if (c === '(') {
      outer.push({ total, last });
      total = 0;
      last = 0;
      i++;
      if (pattern[i] === '?') {
        // (?: (?= (?! (?<= (?<! skip their marks; (?<name> its name.
        const lookbehind =
          pattern[i + 1] === '<' && (pattern[i + 2] === '=' || pattern[i + 2] === '!');
        const close = pattern[i + 1] === '<' && !lookbehind ? pattern.indexOf('>', i) : -1;
        i = close >= 0 ? close + 1 : i + (lookbehind ? 3 : 2);
      }
    } else if (c === ')') {
      const group = total + 2;
      ({ total, last } = outer.pop() ?? { total: 0, last: 0 });
      item(group);
      i++;
    } else if (c === '|') {
      total += 1;
      last = 0;
      i++;
    } else if (c === '*' || c === '+' || c === '?') {
      repeat(last + (c === '*' ? 2 : 1));
      i += pattern[i + 1] === '?' ? 2 : 1;
    } else {
      COUNTED.lastIndex = i;
      const count = c === '{' ? COUNTED.exec(pattern) : null;
      if (count) {
        const min = Math.min(Number(count[1]), LARGEST);
        const max =
          count[2] === undefined ? min : count[3] === '' ? -1 : Math.min(Number(count[3]), LARGEST);
        repeat(max === -1 ? (min === 0 ? 2 + last : 1 + min * last) : max * last + (max - min));
        i = COUNTED.lastIndex + (pattern[COUNTED.lastIndex] === '?' ? 1 : 0);
      } else {
        item(1);
        i++;
      }
    }
  }
  return total;
}

/**
 * The most characters times instructions whose groups `exec` reads: about 250 ms for the
 * costliest pattern, a 650 KB prompt for the shipped echo rule. Past it a match has no groups.
 */
export const GROUPS_WORK = 10_000_000;

const FLAGS: Record<string, number> = {
  i: RE2JS.CASE_INSENSITIVE,
  m: RE2JS.MULTILINE,
  s: RE2JS.DOTALL,
  u: 0, // RE2 reads code points already
};

/** A pattern as an error shows it: its first 80 characters. */
const shownPattern = (pattern: string) =>
  `/${pattern.length > 80 ? `${pattern.slice(0, 80)}...` : pattern}/`;

const tooLarge = (shown: string, size: string, maxSize: number) =>
  new LinearRegexError(
    `${shown} compiles to ${size} instructions, more than the ${maxSize} the emulator runs (large repetition counts cost that much on every character)`,
    'size',
  );

/**
 * JavaScript's long names of Unicode general categories, by the short ones RE2 reads (it reads
 * scripts by name, `\\p{Greek}`, and neither `Script=` nor `gc=`).
 * @see https://tc39.es/ecma262/#table-unicode-general-category-values
 */
const CATEGORIES: Record<string, string> = {
  Letter: 'L',
  Uppercase_Letter: 'Lu',
  Lowercase_Letter: 'Ll',
  Titlecase_Letter: 'Lt',
  Modifier_Letter: 'Lm',
  Other_Letter: 'Lo',
  Mark: 'M',
  Combining_Mark: 'M',
  Nonspacing_Mark: 'Mn',
  Spacing_Mark: 'Mc',
  Enclosing_Mark: 'Me',
  Number: 'N',
  Decimal_Number: 'Nd',
  digit: 'Nd',
  Letter_Number: 'Nl',
  Other_Number: 'No',
  Punctuation: 'P',
  punct: 'P',
  Connector_Punctuation: 'Pc',
  Dash_Punctuation: 'Pd',
  Open_Punctuation: 'Ps',
  Close_Punctuation: 'Pe',
  Initial_Punctuation: 'Pi',
  Final_Punctuation: 'Pf',
  Other_Punctuation: 'Po',
  Symbol: 'S',
  Math_Symbol: 'Sm',
  Currency_Symbol: 'Sc',
  Modifier_Symbol: 'Sk',
  Other_Symbol: 'So',
  Separator: 'Z',
  Space_Separator: 'Zs',
  Line_Separator: 'Zl',
  Paragraph_Separator: 'Zp',
  Other: 'C',
  Control: 'Cc',
  cntrl: 'Cc',
  Format: 'Cf',
  Surrogate: 'Cs',
  Private_Use: 'Co',
  Unassigned: 'Cn',
};

const PROPERTY =
  /\\([pP])\{((?:(?:General_Category|gc|Script|sc|Script_Extensions|scx)=)?[A-Za-z_]+)\}/g;
const SCRIPT_KIND = /^(Script|sc|Script_Extensions|scx)=/;

/**
 * The name RE2 reads for what a `\\p{...}` holds: `Uppercase_Letter` and `gc=Lu` are `Lu`,
 * `Script=Greek` is `Greek`; any other name as it is.
 */
export function shortPropertyName(property: string): string {
  const script = SCRIPT_KIND.exec(property);
  if (script) return property.slice(script[0].length);
  const name = property.slice(property.indexOf('=') + 1);
  return Object.hasOwn(CATEGORIES, name) ? (CATEGORIES[name] as string) : name;
}

/** `\\p{Uppercase_Letter}`, `\\p{gc=Lu}`, `\\p{Script=Greek}` as RE2 spells them. */
const re2Properties = (pattern: string) =>
  pattern.includes('{')
    ? pattern.replace(
        PROPERTY,
        (_, p: string, property: string) => `\\${p}{${shortPropertyName(property)}}`,
      )
    : pattern;

const SURROGATE_ESCAPES = /(\\+)u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})/gi;

/**
 * A pattern with each escaped surrogate pair (`\\uD83D\\uDE00`) written as the one character
 * it is with the `u` flag (`\\u{1F600}`): RE2 would read two lone surrogates, which match
 * what the pattern does not.
 */
export const joinSurrogateEscapes = (pattern: string): string =>
  pattern.includes('\\u')
    ? pattern.replace(SURROGATE_ESCAPES, (match, slashes: string, high: string, low: string) =>
        slashes.length % 2 === 0
          ? match
          : `${slashes}u{${(
              (Number.parseInt(high, 16) - 0xd800) * 0x400 +
                (Number.parseInt(low, 16) - 0xdc00) +
                0x10000
            ).toString(16)}}`,
      )
    : pattern;

/**
 * Compiles a JavaScript regular expression (flags from `imsu`) to run in linear time. Throws a
 * LinearRegexError saying why when it is not JavaScript, uses what RE2 cannot run, or compiles
 * to more than `maxSize` instructions.
 */
export function linearRegex(pattern: string, flags = '', maxSize = MAX_PROGRAM_SIZE): LinearRegex {
  try {
    new RegExp(pattern, flags); // compiles only: checking the syntax cannot stall
  } catch (err) {
    throw new LinearRegexError((err as Error).message);
  }
  const shown = shownPattern(pattern);
  const estimate = estimatedProgramSize(pattern);
  if (estimate > ESTIMATE_SLACK * maxSize) throw tooLarge(shown, `about ${estimate}`, maxSize);
  let re: RE2JS;
  try {
    // RE2's translation reads a named backreference as the letters `k<name>`.
    if (pattern.includes('\\k<')) throw new Error('invalid named backreference: `\\k<`');
    let bits = 0;
    for (const flag of flags) bits |= FLAGS[flag] ?? 0;
    const spelled = flags.includes('u') ? joinSurrogateEscapes(pattern) : pattern;
    re = RE2JS.compile(RE2JS.translateRegExp(re2Properties(spelled)), bits);
  } catch (err) {
    const message = (err as Error).message;
    // RE2's own bounds on repetition (a count over 1000, nested counts over its limit).
    if (/invalid repeat count|expression too large|invalid nested repetition/.test(message)) {
      throw new LinearRegexError(`${shown} repeats more than RE2 runs (${message})`, 'size');
    }
    throw new LinearRegexError(
      `${shown} cannot be run in linear time (lookaround and backreferences cannot; RE2 says: ${message})`,
      'unsupported',
    );
  }
  const source = `/${pattern}/${flags}`;
  const size = re.programSize();
  if (size > maxSize) throw tooLarge(shown, `${size}`, maxSize);
  return {
    toString: () => source,
    test: (text) => re.test(text),
    exec(text) {
      if (!re.test(text)) return null; // the fast path, without groups
      // Groups cost far more than the test (9 µs a character for 400 instructions): past the
      // bound the match stands without them.
      if (text.length * size > GROUPS_WORK) return [''];
      const matcher = re.matcher(text);
      if (!matcher.find()) return null;
      const groups: (string | undefined)[] = [];
      for (let i = 0; i <= matcher.groupCount(); i++) groups.push(matcher.group(i) ?? undefined);
      return groups;
    },
  };
}

/** How long one check by a backtracking pattern may take: real ones take microseconds. */
export const BACKTRACKING_TIMEOUT_MS = 10;
/** The longest string a backtracking pattern checks (a longer one does not match). */
export const BACKTRACKING_MAX_CHARS = 1024;

const BACKTRACKING_TEST = new vm.Script('re.test(text)');
const BACKTRACKING_EXEC = new vm.Script('re.exec(text)');
/** One context for every backtracking check (a context costs 150 KB): given the pattern and text each time. */
let backtrackingContext: vm.Context | undefined;

/** What backtracking checks may still take, in ms. */
export interface BacktrackingBudget {
  leftMs: number;
}

/** The work under way (see withBacktracking): its budget, and whether a check ran out of time. */
let current: { budget: BacktrackingBudget; timedOut: boolean } | undefined;

/**
 * Runs `work` (synchronous: it is the only thing running) with the backtracking checks it
 * makes charged to `budget`: once it is spent, they match nothing. A budget belongs to one
 * request, so no request spends another's, and a pattern is never marked for all. Says too
 * whether a check ran out of time (its verdict is then this request's, not the pattern's).
 */
export function withBacktracking<T>(
  budget: BacktrackingBudget,
  work: () => T,
): { result: T; timedOut: boolean } {
  const outer = current;
  const run = { budget, timedOut: false };
  current = run;
  try {
    return { result: work(), timedOut: run.timedOut };
  } finally {
    current = outer;
  }
}

/**
 * A schema pattern RE2 cannot run (lookaround, a backreference: zod's `z.hostname()` and
 * `z.iso.duration()` have lookaheads), run by JavaScript's engine on the values the emulator
 * made, each check within BACKTRACKING_TIMEOUT_MS and the request's budget (a vm timeout
 * interrupts a match that backtracks without end); a check out of time does not match.
 */
function backtrackingRegex(pattern: string, flags: string): LinearRegex {
  const re = new RegExp(pattern, flags);
  const run = (script: vm.Script, text: string): unknown => {
    if (text.length > BACKTRACKING_MAX_CHARS) return null;
    const run = current;
    const limit = Math.min(BACKTRACKING_TIMEOUT_MS, run?.budget.leftMs ?? BACKTRACKING_TIMEOUT_MS);
    if (limit < 1) {
      if (run) run.timedOut = true;
      return null;
    }
    backtrackingContext ??= vm.createContext({ re: undefined, text: '' });
    backtrackingContext.re = re;
    backtrackingContext.text = text;
    const started = performance.now();
    try {
      return script.runInContext(backtrackingContext, { timeout: Math.ceil(limit) });
    } catch {
      if (run) run.timedOut = true;
      return null;
    } finally {
      if (run) run.budget.leftMs -= performance.now() - started;
      backtrackingContext.re = undefined;
      backtrackingContext.text = '';
    }
  };
  return {
    toString: () => `/${pattern}/${flags}`,
    test: (text) => run(BACKTRACKING_TEST, text) === true,
    exec: (text) => (run(BACKTRACKING_EXEC, text) as RegexMatch | null) ?? null,
  };
}

/** `flags`, or without `u` when only Annex B reads the pattern (a lone `]`, as zod's RFC 5322 email has). */
function readableFlags(pattern: string, flags: string): string {
  if (!flags.includes('u')) return flags;
  try {
    new RegExp(pattern, flags);
    return flags;
  } catch {
    const loose = flags.replace('u', '');
    try {
      new RegExp(pattern, loose);
      return loose;
    } catch {
      return flags;
    }
  }
}

/**
 * A schema's pattern: run by RE2 when it can (up to MAX_SCHEMA_PROGRAM_SIZE instructions),
 * else by the bounded backtracking engine above; a pattern too large, or not JavaScript even
 * with Annex B's leniency, is refused (LinearRegexError).
 */
export function schemaRegex(pattern: string, flags: string): LinearRegex {
  const readable = readableFlags(pattern, flags);
  try {
    return linearRegex(pattern, readable, MAX_SCHEMA_PROGRAM_SIZE);
  } catch (err) {
    // Only what the text shows needs backtracking (lookaround, a backreference): requests are
    // weighed by the same test (see mayBacktrack), so no other pattern gets here unweighed.
    if (err instanceof LinearRegexError && err.kind === 'unsupported' && mayBacktrack(pattern)) {
      // RE2 stopped at the lookaround before it counted the program: the estimate counts it.
      const estimate = estimatedProgramSize(pattern);
      if (estimate > MAX_SCHEMA_PROGRAM_SIZE) {
        throw tooLarge(shownPattern(pattern), `about ${estimate}`, MAX_SCHEMA_PROGRAM_SIZE);
      }
      return backtrackingRegex(pattern, readable);
    }
    throw err;
  }
}

/** Whether a pattern uses what only a backtracking engine runs (see `schemaRegex`), by its text. */
export const mayBacktrack = (pattern: string) => /\(\?<?[=!]|\\[1-9]|\\k</.test(pattern);

/** Schema patterns compiled, by flags and text: a schema repeats its formats' patterns. */
const compiled = new Lru<LinearRegex>(256);

/**
 * The engine for Ajv (`code.regExp`), so a schema's `pattern` and `patternProperties` are
 * checked in linear time, or within a time bound (see `schemaRegex`); each pattern compiled
 * once while it stays in use (Ajv asks again at every place a schema uses it). `code` is only
 * read by standalone code, which this engine's Ajv never writes.
 */
export const ajvLinearRegExp = Object.assign(
  (pattern: string, flags: string) => {
    const key = `${flags}/${pattern}`;
    let regex = compiled.get(key);
    if (regex === undefined) {
      regex = schemaRegex(pattern, flags);
      compiled.set(key, regex);
    }
    return regex;
  },
  { code: 'linearRegex' },
);
