/**
 * Lark grammars, as a chat custom tool's `format` gives them: read into rules, then sampled,
 * so that a call's input is a text the grammar derives. The shortest derivation is taken (every
 * rule, `start` first, by its alternative of the fewest tokens, the least deep among equals; a
 * repetition at its least), so that sampling always ends; a regex terminal is given a value by the generator JSON schemas use
 * (`pattern`). The common Lark subset: rules and terminals (`name: ...`, `NAME: ...`, priorities,
 * `?`/`!` prefixes), `|`, `->` aliases, `( )`, `[ ]`, `?`, `*`, `+`, `~ n` and `~ n..m`, string
 * literals (`"..."i`), ranges (`"a".."z"`), `/regex/flags`, `%import common.X` (and
 * `%import common (A, B)`), `%ignore`; `%declare`, `%override`, `%extend` and templates are not.
 * @see https://lark-parser.readthedocs.io/en/stable/grammar.html
 * @see https://platform.openai.com/docs/guides/function-calling#context-free-grammars
 */

export class LarkError extends Error {
  override name = 'LarkError';
}

type Item =
  | { kind: 'literal'; text: string }
  | { kind: 'regex'; source: string }
  | { kind: 'ref'; name: string }
  | { kind: 'group'; alternatives: Item[][] }
  | { kind: 'repeat'; item: Item; min: number };

export interface LarkGrammar {
  rules: Map<string, Item[][]>;
  /** `%ignore` names whitespace: the sample separates its tokens with a space. */
  spaced: boolean;
  /** The shortest derivation (see derive). */
  derivation: Derivation;
}

/**
 * The emulator's bounds on what one grammar may make it do (upstream publishes its own only as
 * refusals): its length, its rules, how deep its groups nest, the work of finding the shortest
 * derivation, and the sample's steps, characters and regex terminals.
 */
const MAX_LARK_CHARS = 100_000;
const MAX_RULES = 1000;
const MAX_DEPTH = 64;
const MAX_COST_WORK = 2_000_000;
const MAX_SAMPLE_STEPS = 20_000;
const MAX_SAMPLE_CHARS = 20_000;
const MAX_REGEX_TERMINALS = 200;

/** Lark's `common` terminals, as texts they match (a value each, not a pattern). */
const COMMON: Record<string, string> = {
  DIGIT: '7',
  HEXDIGIT: 'a',
  INT: '42',
  SIGNED_INT: '42',
  DECIMAL: '3.5',
  FLOAT: '3.5',
  SIGNED_FLOAT: '3.5',
  NUMBER: '42',
  SIGNED_NUMBER: '42',
  LCASE_LETTER: 'a',
  UCASE_LETTER: 'A',
  LETTER: 'a',
  WORD: 'word',
  CNAME: 'name',
  WS_INLINE: ' ',
  WS: ' ',
  CR: '\r',
  LF: '\n',
  NEWLINE: '\n',
  ESCAPED_STRING: '"text"',
  _STRING_INNER: 'text',
  _STRING_ESC_INNER: 'text',
  SH_COMMENT: '# note',
  CPP_COMMENT: '// note',
  C_COMMENT: '/* note */',
  SQL_COMMENT: '-- note',
};

type Token =
  | { t: 'name'; v: string }
  | { t: 'string'; v: string }
  | { t: 'regex'; v: string }
  | { t: 'number'; v: number }
  | { t: 'op'; v: string };

/** A JSON-like string literal of the grammar (`"a\"b"`), unescaped. */
function unquote(literal: string): string {
  try {
    return JSON.parse(literal.replace(/\\([^"\\/bfnrtu])/g, '$1')) as string;
  } catch {
    throw new LarkError(`the string ${literal.slice(0, 40)} is not a valid literal`);
  }
}

/** The tokens of one statement's text. */
function tokenize(text: string): Token[] {
  const tokens: Token[] = [];
  const re =
    /\s+|(\/\/[^\n]*)|("(?:[^"\\\n]|\\.)*"i?)|(\/(?:[^/\\\n]|\\.)+\/[imslux]*)|([?!]?[_a-zA-Z][_a-zA-Z0-9]*(?:\.[_a-zA-Z][_a-zA-Z0-9]*)*)|(\d+)|(->|\.\.|[|()[\]?*+~,:%.])/y;
  let at = 0;
  while (at < text.length) {
    re.lastIndex = at;
    const m = re.exec(text);
    if (!m) throw new LarkError(`unexpected character ${JSON.stringify(text[at])}`);
    at = re.lastIndex;
    if (m[2] !== undefined) tokens.push({ t: 'string', v: unquote(m[2].replace(/i$/, '')) });
    else if (m[3] !== undefined)
      tokens.push({ t: 'regex', v: m[3].slice(1, m[3].lastIndexOf('/')) });
    else if (m[4] !== undefined) tokens.push({ t: 'name', v: m[4] });
    else if (m[5] !== undefined) tokens.push({ t: 'number', v: Number(m[5]) });
    else if (m[6] !== undefined) tokens.push({ t: 'op', v: m[6] });
  }
  return tokens;
}

/** A recursive-descent reader of one statement's expansions. */
class Reader {
  private at = 0;
  private depth = 0;
  constructor(private readonly tokens: Token[]) {}

  private peek(): Token | undefined {
    return this.tokens[this.at];
  }

  private isOp(v: string): boolean {
    const token = this.peek();
    return token?.t === 'op' && token.v === v;
  }

  private expect(v: string): void {
    if (!this.isOp(v)) throw new LarkError(`expected "${v}"`);
    this.at++;
  }

  done(): boolean {
    return this.at >= this.tokens.length;
  }

  alternatives(): Item[][] {
    const alternatives = [this.sequence()];
    while (this.isOp('|')) {
      this.at++;
      alternatives.push(this.sequence());
    }
    return alternatives;
  }

  private sequence(): Item[] {
    const items: Item[] = [];
    for (;;) {
      const token = this.peek();
      if (token === undefined || (token.t === 'op' && [')', ']', '|'].includes(token.v))) break;
      if (token.t === 'op' && token.v === '->') {
        this.at++;
        const alias = this.peek();
        if (alias?.t !== 'name') throw new LarkError('expected a name after "->"');
        this.at++;
        break;
      }
      items.push(this.quantified());
    }
    return items;
  }

  private quantified(): Item {
    let item = this.atom();
    for (;;) {
      if (this.isOp('?')) {
        this.at++;
        item = { kind: 'repeat', item, min: 0 };
      } else if (this.isOp('*')) {
        this.at++;
        item = { kind: 'repeat', item, min: 0 };
      } else if (this.isOp('+')) {
        this.at++;
        item = { kind: 'repeat', item, min: 1 };
      } else if (this.isOp('~')) {
        this.at++;
        const n = this.peek();
        if (n?.t !== 'number') throw new LarkError('expected a count after "~"');
        this.at++;
        if (this.isOp('..')) {
          this.at++;
          const m = this.peek();
          if (m?.t !== 'number' || m.v < n.v) throw new LarkError('expected a range "~ n..m"');
          this.at++;
        }
        item = { kind: 'repeat', item, min: n.v };
      } else return item;
    }
  }

  private atom(): Item {
    const token = this.peek();
    if (token === undefined) throw new LarkError('unexpected end of a rule');
    this.at++;
    if (token.t === 'op' && (token.v === '(' || token.v === '[')) {
      if (++this.depth > MAX_DEPTH) throw new LarkError(`groups nest deeper than ${MAX_DEPTH}`);
      const alternatives = this.alternatives();
      this.expect(token.v === '(' ? ')' : ']');
      this.depth--;
      const group: Item = { kind: 'group', alternatives };
      return token.v === '(' ? group : { kind: 'repeat', item: group, min: 0 };
    }
    if (token.t === 'string') {
      if (this.isOp('..')) {
        this.at++;
        const to = this.peek();
        if (to?.t !== 'string') throw new LarkError('expected a string after ".."');
        this.at++;
      }
      return { kind: 'literal', text: token.v };
    }
    if (token.t === 'regex') return { kind: 'regex', source: token.v };
    if (token.t === 'name') {
      if (token.v.includes('.')) throw new LarkError(`"${token.v}" is not a rule name`);
      return { kind: 'ref', name: token.v };
    }
    throw new LarkError(`unexpected "${String(token.v)}"`);
  }
}

/** The grammar's text cut into statements: a definition and its continuation lines. */
function statements(definition: string): string[] {
  const out: string[] = [];
  for (const line of definition.split('\n')) {
    const text = line.replace(/\r$/, '');
    if (text.trim() === '' || text.trim().startsWith('//')) continue;
    // (a grammar indented as a whole, as one written inside code often is, reads the same)
    const starts =
      /^\s*[?!]?[_a-zA-Z][_a-zA-Z0-9]*(\.-?\d+)?\s*:/.test(text) || text.trim().startsWith('%');
    if (starts || out.length === 0) out.push(text);
    else out[out.length - 1] += `\n${text}`;
  }
  return out;
}

/** Reads a Lark grammar; throws LarkError saying what is wrong (or not taken). */
export function parseLark(definition: string): LarkGrammar {
  if (definition.length > MAX_LARK_CHARS) {
    throw new LarkError(`the grammar is longer than ${MAX_LARK_CHARS} characters`);
  }
  const rules = new Map<string, Item[][]>();
  const ignored: string[] = [];
  for (const statement of statements(definition)) {
    if (statement.trim().startsWith('%')) {
      const [directive = '', ...rest] = statement.trim().slice(1).split(/\s+/);
      const args = rest.join(' ');
      if (directive === 'ignore') ignored.push(args);
      else if (directive === 'import') importCommon(args, rules);
      else throw new LarkError(`%${directive} is not supported`);
      continue;
    }
    const colon = statement.indexOf(':');
    const head = statement.slice(0, colon).trim();
    const name = head.replace(/^[?!]/, '').replace(/\.-?\d+$/, '');
    if (rules.has(name)) throw new LarkError(`"${name}" is defined twice`);
    const reader = new Reader(tokenize(statement.slice(colon + 1)));
    const alternatives = reader.alternatives();
    if (!reader.done()) throw new LarkError(`unexpected text in the definition of "${name}"`);
    rules.set(name, alternatives);
    if (rules.size > MAX_RULES) throw new LarkError(`more than ${MAX_RULES} rules`);
  }
  if (!rules.has('start')) throw new LarkError('no "start" rule');
  for (const [name, alternatives] of rules) checkRefs(name, alternatives, rules);
  const spaced = ignored.some((what) => /^(WS|WS_INLINE|NEWLINE|"\s+"|\/\\s\+?\/)$/.test(what));
  return { rules, spaced, derivation: derive(rules) };
}

function importCommon(args: string, rules: Map<string, Item[][]>): void {
  const single = /^common\.([A-Z_][A-Z0-9_]*)(?:\s*->\s*([_a-zA-Z][_a-zA-Z0-9]*))?$/.exec(args);
  const names = single
    ? [[single[1] as string, single[2] ?? (single[1] as string)]]
    : /^common\s*\(([^)]*)\)$/
        .exec(args)?.[1]
        ?.split(',')
        .map((name) => [name.trim(), name.trim()]);
  if (!names) throw new LarkError(`%import ${args} is not supported (only from "common")`);
  for (const [name, as] of names as Array<[string, string]>) {
    const text = COMMON[name];
    if (text === undefined) throw new LarkError(`common.${name} is not a known terminal`);
    rules.set(as, [[{ kind: 'literal', text }]]);
  }
}

function checkRefs(name: string, alternatives: Item[][], rules: Map<string, Item[][]>): void {
  const visit = (item: Item): void => {
    if (item.kind === 'ref' && !rules.has(item.name)) {
      throw new LarkError(`"${name}" uses "${item.name}", which is not defined`);
    }
    if (item.kind === 'group') for (const alt of item.alternatives) alt.forEach(visit);
    if (item.kind === 'repeat') visit(item.item);
  };
  for (const alt of alternatives) alt.forEach(visit);
}

/** How short a derivation is: its tokens, then its height (which breaks ties without a cycle). */
interface Size {
  tokens: number;
  height: number;
}
const NEVER: Size = { tokens: Number.POSITIVE_INFINITY, height: Number.POSITIVE_INFINITY };
const NOTHING: Size = { tokens: 0, height: 0 };
const smaller = (a: Size, b: Size) =>
  a.tokens < b.tokens || (a.tokens === b.tokens && a.height < b.height);

/**
 * The shortest derivation of every rule: each rule's alternative of the fewest tokens, the
 * lowest first among equals. The fixed point of the rules' sizes, so that sampling follows a
 * rule to one of lower height each time, and ends. Throws LarkError past MAX_COST_WORK.
 */
function derive(rules: Map<string, Item[][]>): Derivation {
  const sizes = new Map<string, Size>();
  for (const name of rules.keys()) sizes.set(name, NEVER);
  let work = 0;
  const itemSize = (item: Item): Size => {
    if (++work > MAX_COST_WORK) throw new LarkError('the grammar is too large to derive from');
    switch (item.kind) {
      case 'literal':
      case 'regex':
        return { tokens: 1, height: 0 };
      case 'ref':
        return sizes.get(item.name) ?? NEVER;
      case 'group':
        return item.alternatives.map(altSize).reduce((a, b) => (smaller(b, a) ? b : a));
      case 'repeat': {
        if (item.min === 0) return NOTHING;
        const inner = itemSize(item.item);
        return { tokens: item.min * inner.tokens, height: inner.height };
      }
    }
  };
  const altSize = (alt: Item[]): Size => {
    let tokens = 0;
    let height = 0;
    for (const item of alt) {
      const size = itemSize(item);
      tokens += size.tokens;
      height = Math.max(height, size.height);
    }
    return { tokens, height: height + 1 };
  };
  for (let changed = true; changed; ) {
    changed = false;
    for (const [name, alternatives] of rules) {
      const best = alternatives.map(altSize).reduce((a, b) => (smaller(b, a) ? b : a));
      if (smaller(best, sizes.get(name) as Size)) {
        sizes.set(name, best);
        changed = true;
      }
    }
  }
  // Each rule's and group's chosen alternative, and the steps its derivation takes.
  const chosen = new Map<Item[][], Item[]>();
  const choose = (alternatives: Item[][]): Item[] => {
    let alt = chosen.get(alternatives);
    if (alt === undefined) {
      alt = alternatives.reduce((a, b) => (smaller(altSize(b), altSize(a)) ? b : a));
      chosen.set(alternatives, alt);
    }
    return alt;
  };
  const stepsMemo = new Map<Item[][], number>();
  const steps = (alternatives: Item[][]): number => {
    let known = stepsMemo.get(alternatives);
    if (known === undefined) {
      known = 1;
      for (const item of choose(alternatives)) known += itemSteps(item);
      known = Math.min(known, MAX_SAMPLE_STEPS + 1);
      stepsMemo.set(alternatives, known);
    }
    return known;
  };
  const itemSteps = (item: Item): number => {
    switch (item.kind) {
      case 'literal':
      case 'regex':
        return 1;
      case 'ref':
        return steps(rules.get(item.name) as Item[][]);
      case 'group':
        return steps(item.alternatives);
      case 'repeat':
        return 1 + Math.min(item.min * itemSteps(item.item), MAX_SAMPLE_STEPS + 1);
    }
  };
  const start = rules.get('start') as Item[][];
  if ((sizes.get('start') as Size).tokens === Number.POSITIVE_INFINITY) {
    throw new LarkError('"start" derives no finite text');
  }
  if ((sizes.get('start') as Size).tokens > MAX_SAMPLE_CHARS) {
    throw new LarkError(`its shortest text has more than ${MAX_SAMPLE_CHARS} tokens`);
  }
  if (steps(start) > MAX_SAMPLE_STEPS) {
    throw new LarkError(`its shortest text takes more than ${MAX_SAMPLE_STEPS} steps to make`);
  }
  return { choose };
}

/** The shortest derivation found: the alternative taken of each rule and group. */
interface Derivation {
  choose(alternatives: Item[][]): Item[];
}

/** Terminals are named in capitals (`NAME`, `_NAME`); rules in lower case. */
const isTerminal = (name: string) => /^_?[A-Z]/.test(name);

/** A value for a regex terminal (the JSON-schema generator's, for `pattern`). */
export type RegexSampler = (source: string) => Promise<string>;

/**
 * A text `start` derives: its shortest derivation (checked when the grammar was read to take at
 * most MAX_SAMPLE_STEPS steps), tokens separated by a space when the grammar ignores whitespace.
 * Throws LarkError past MAX_REGEX_TERMINALS regex terminals or MAX_SAMPLE_CHARS characters.
 */
export async function sampleLark(grammar: LarkGrammar, regex: RegexSampler): Promise<string> {
  const { rules, derivation } = grammar;
  let regexes = 0;
  let chars = 0;
  const add = (out: string[], text: string) => {
    chars += text.length;
    if (chars > MAX_SAMPLE_CHARS) {
      throw new LarkError(`its shortest text is longer than ${MAX_SAMPLE_CHARS} characters`);
    }
    if (text !== '') out.push(text);
  };
  const walk = async (item: Item, out: string[]): Promise<void> => {
    switch (item.kind) {
      case 'literal':
        add(out, item.text);
        return;
      case 'regex': {
        if (++regexes > MAX_REGEX_TERMINALS) {
          throw new LarkError(
            `its shortest text has more than ${MAX_REGEX_TERMINALS} regex terminals`,
          );
        }
        add(out, await regex(item.source));
        return;
      }
      case 'ref': {
        const alternative = derivation.choose(rules.get(item.name) as Item[][]);
        if (!isTerminal(item.name)) {
          for (const next of alternative) await walk(next, out);
          return;
        }
        // A terminal is one token, however it is made.
        const parts: string[] = [];
        for (const next of alternative) await walk(next, parts);
        // (its characters were counted as they were made)
        if (parts.length > 0) out.push(parts.join(''));
        return;
      }
      case 'group':
        for (const next of derivation.choose(item.alternatives)) await walk(next, out);
        return;
      case 'repeat':
        for (let i = 0; i < item.min; i++) await walk(item.item, out);
        return;
    }
  };
  const tokens: string[] = [];
  await walk({ kind: 'ref', name: 'start' }, tokens);
  return tokens.join(grammar.spaced ? ' ' : '');
}
