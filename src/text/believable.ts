/**
 * Values a model would write, for tool arguments and structured output: the generator makes a
 * value the schema accepts (json-schema.ts), and this pass reshapes its free leaves, the strings
 * and numbers no enum, const, pattern or format pins down, from what the conversation says and
 * what each field is called. "Alice is 30." gives `{"name": "Alice", "age": 30}`; "What is the
 * weather in Paris?" gives `{"city": "Paris"}`; a field the conversation says nothing about gets
 * a value of its kind (an email, a date, a city, a sentence), never an empty string, and a
 * number within the schema's bounds, else a modest non-negative one. The schema still rules:
 * a value the schema's checks (and the keywords an SDK moved into a description) refuse is not
 * used, and the reshaped whole is proven by the caller's validator; what fails keeps the
 * generator's value.
 */

import {
  CITIES,
  COLORS,
  COMPANIES,
  COUNTRIES,
  CURRENCIES,
  FIRST,
  type Kind,
  kindOf,
  LANGUAGES,
  LAST,
  SENTENCES,
  TITLES,
  UNITS,
  WORDS,
} from './believable-words.js';
import { hintReader } from './schema-hints.js';
import { isNode, type Node, typesOf } from './schema-nodes.js';

/** What a conversation says that a field may take, read once per prompt. */
export interface Said {
  /** Proper nouns (one word or several), in order: "Alice", "New York". */
  names: string[];
  /** Proper nouns after in, at, to, from, near: "Paris". */
  places: string[];
  /** Quoted text: "The Hobbit". */
  quoted: string[];
  numbers: SaidNumber[];
  emails: string[];
  urls: string[];
  /** ISO dates (2026-12-01). */
  dates: string[];
  /** The prompt itself, in one line, shortened: what a query-like field takes. */
  text: string;
}

interface SaidNumber {
  value: number;
  /** The words around it, lower case (a field named by one of them takes it first). */
  near: string[];
}

/** The most characters of a prompt read for values (its end: the latest words). */
const READ_CHARS = 4000;
/** The most leaves of one value reshaped. */
const MAX_LEAVES = 256;
/** A query-like field takes the prompt up to this many characters. */
const QUERY_CHARS = 200;

/** Capitalized words that start sentences and questions, not names. */
const NOT_NAMES = new Set(
  (
    'a an the this that these those it its is are was were be been am do does did done can could will would ' +
    'shall should may might must have has had i me my we our you your he she they them his her their ' +
    'what when where which who whom whose why how please tell give find get show call use make create book ' +
    'send search look check list add set summarize explain describe translate return extract generate ' +
    'help write read run let lets hi hello hey thanks thank yes no not and or but if then so also ' +
    'there here now today tomorrow yesterday ok okay sure just only all any some every each new ' +
    'monday tuesday wednesday thursday friday saturday sunday january february march april may june ' +
    'july august september october november december json api url id http https answer reply ' +
    'question user assistant system tool result results weather forecast time date'
  ).split(' '),
);
const PLACE_WORDS = new Set([
  'in',
  'at',
  'to',
  'from',
  'near',
  'around',
  'into',
  'visit',
  'visiting',
]);

/** One line of the conversation's latest words. */
const lineOf = (prompt: string) =>
  (prompt.length > READ_CHARS ? prompt.slice(-READ_CHARS) : prompt).replace(/\s+/g, ' ').trim();

/** What a prompt says that fields may take (see Said). */
export function readSaid(prompt: string): Said {
  const text = lineOf(prompt);
  const said: Said = {
    names: [],
    places: [],
    quoted: [],
    numbers: [],
    emails: [],
    urls: [],
    dates: [],
    text: text.length > QUERY_CHARS ? `${text.slice(0, QUERY_CHARS - 1)}…` : text,
  };
  const add = (list: string[], value: string) => {
    if (value && !list.includes(value)) list.push(value);
  };
  for (const m of text.matchAll(/\bhttps?:\/\/[^\s"'<>)]+/g))
    add(said.urls, m[0].replace(/[.,;:!?]$/, ''));
  for (const m of text.matchAll(/\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b/g)) add(said.emails, m[0]);
  for (const m of text.matchAll(/\b\d{4}-\d{2}-\d{2}\b/g)) add(said.dates, m[0]);
  for (const m of text.matchAll(/"([^"]{1,80})"|“([^”]{1,80})”/g))
    add(said.quoted, (m[1] ?? m[2] ?? '').trim());
  // Without the URLs, addresses and dates, so their parts are not read as names or numbers.
  const plain = text
    .replace(/\bhttps?:\/\/[^\s"'<>)]+/g, ' ')
    .replace(/\b[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b/g, ' ')
    .replace(/\b\d{4}-\d{2}-\d{2}\b/g, ' ');
  const words = plain.split(/[^\p{L}\p{N}'’.,-]+/u).filter((w) => /[\p{L}\p{N}]/u.test(w));
  let run: string[] = [];
  let runAfter = '';
  const endRun = () => {
    if (run.length > 0) {
      const name = run.join(' ');
      add(said.names, name);
      if (PLACE_WORDS.has(runAfter)) add(said.places, name);
    }
    run = [];
  };
  for (let i = 0; i < words.length; i++) {
    const raw = words[i] as string;
    const word = raw.replace(/^[.,'’-]+|[.,'’-]+$/g, '');
    const ends = /[.,]$/.test(raw);
    const number = /^-?\d{1,3}(?:,\d{3})+(?:\.\d+)?$|^-?\d+(?:\.\d+)?$/.test(word)
      ? Number(word.replace(/,/g, ''))
      : undefined;
    if (number !== undefined && Number.isFinite(number)) {
      endRun();
      const near = [...words.slice(Math.max(0, i - 3), i), ...words.slice(i + 1, i + 4)]
        .map((w) => w.toLowerCase().replace(/[^\p{L}]/gu, ''))
        .filter(Boolean);
      said.numbers.push({ value: number, near });
      continue;
    }
    const proper =
      /^\p{Lu}[\p{L}'’-]*$/u.test(word) &&
      !/^\p{Lu}+$/u.test(word.length > 1 ? word : 'X') &&
      !NOT_NAMES.has(word.toLowerCase());
    if (proper) {
      if (run.length === 0) runAfter = (words[i - 1] ?? '').toLowerCase();
      run.push(word);
      if (ends) endRun();
    } else endRun();
  }
  endRun();
  return said;
}

/** The words of a property name, lower case: `firstName`, `first_name` → first, name. */
const wordsOf = (name: string) =>
  name
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase()
    .split(/[^a-z0-9]+/)
    .filter(Boolean);

/** A small deterministic random source (mulberry32). */
function randomOf(seed: number) {
  let state = seed >>> 0;
  const next = () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  return {
    int: (min: number, max: number) => min + Math.floor(next() * (max - min + 1)),
    pick: <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)] as T,
    next,
  };
}
type Random = ReturnType<typeof randomOf>;

/** What one value's leaves have taken so far: a name or number is used once if others remain. */
interface Used {
  strings: Set<string>;
  numbers: Set<SaidNumber>;
}

const two = (n: number) => String(n).padStart(2, '0');

/** A string of its field's kind: from the conversation first, else made. */
function stringFor(kind: Kind, words: string[], said: Said, used: Used, random: Random): string {
  const fresh = (list: readonly string[]) => list.find((s) => !used.strings.has(s)) ?? list[0];
  /** One of a list not used yet in this value, from a random place in it. */
  const unused = (list: readonly string[]) => {
    const start = random.int(0, list.length - 1);
    for (let i = 0; i < list.length; i++) {
      const item = list[(start + i) % list.length] as string;
      if (!used.strings.has(item)) return item;
    }
    return list[start] as string;
  };
  const people = said.names.filter((n) => !said.places.includes(n));
  const person = () => {
    const first = random.pick(FIRST);
    if (words.includes('first')) return first;
    if (words.includes('last') || words.includes('surname')) return random.pick(LAST);
    return `${first} ${random.pick(LAST)}`;
  };
  switch (kind) {
    case 'email': {
      const who = fresh(people) ?? `${random.pick(FIRST)} ${random.pick(LAST)}`;
      return (
        fresh(said.emails) ??
        `${who
          .toLowerCase()
          .normalize('NFD')
          .replace(/[^a-z ]/g, '')
          .trim()
          .replace(/ +/g, '.')}@example.com`
      );
    }
    case 'url':
      return (
        fresh(said.urls) ??
        `https://example.com/${random.pick(['docs', 'items', 'reports'])}/${random.int(1, 999)}`
      );
    case 'phone':
      return `+1-555-01${two(random.int(0, 99))}`;
    case 'id':
      return `${words.find((w) => !['id', 'ids', 'uuid', 'guid', 'key'].includes(w)) ?? 'id'}_${random.int(1000, 9999)}`;
    case 'date':
      return fresh(said.dates) ?? `2026-${two(random.int(1, 12))}-${two(random.int(1, 28))}`;
    case 'time':
      return `${two(random.int(8, 18))}:${random.pick(['00', '15', '30', '45'])}`;
    case 'file':
      return `${random.pick(['report', 'notes', 'data', 'summary'])}.${random.pick(['txt', 'csv', 'pdf', 'md'])}`;
    case 'handle':
      return `${(fresh(people) ?? random.pick(FIRST)).split(' ')[0]?.toLowerCase()}${random.int(1, 99)}`;
    case 'place': {
      const country = words.includes('country');
      const places = said.places.filter((p) => !said.quoted.includes(p));
      return fresh(places) ?? random.pick(country ? COUNTRIES : CITIES);
    }
    case 'organization':
      return fresh(said.quoted) ?? fresh(people) ?? random.pick(COMPANIES);
    case 'person':
      return fresh(people) ?? person();
    case 'title':
      return fresh(said.quoted) ?? fresh(said.names) ?? random.pick(TITLES);
    case 'query':
      return said.text || random.pick(SENTENCES);
    case 'prose':
      return random.pick(SENTENCES);
    case 'language':
      return random.pick(LANGUAGES);
    case 'currency':
      return random.pick(CURRENCIES);
    case 'color':
      return random.pick(COLORS);
    case 'unit':
      return random.pick(UNITS);
    case 'word':
      return unused(WORDS);
  }
}

/** A modest range for a number by its field's name: [low, high], and whether it has cents. */
function rangeOf(words: string[]): [number, number, boolean] {
  const has = (...names: string[]) => words.some((w) => names.includes(w));
  if (has('age')) return [18, 80, false];
  if (has('year', 'years')) return words.includes('years') ? [1, 10, false] : [2000, 2030, false];
  if (has('price', 'cost', 'amount', 'salary', 'budget', 'fee', 'balance', 'revenue', 'total'))
    return [5, 500, true];
  if (has('rating', 'stars', 'score')) return [1, 5, false];
  if (has('percent', 'percentage', 'pct')) return [0, 100, false];
  if (has('probability', 'confidence', 'ratio', 'weight')) return [0, 1, true];
  if (has('lat', 'latitude')) return [-90, 90, true];
  if (has('lon', 'lng', 'longitude')) return [-180, 180, true];
  if (has('temperature', 'temp')) return [0, 35, false];
  if (has('month')) return [1, 12, false];
  if (has('day', 'days')) return [1, 28, false];
  if (has('hour', 'hours')) return [0, 23, false];
  if (has('minute', 'minutes', 'seconds', 'second')) return [0, 59, false];
  if (
    has(
      'count',
      'number',
      'num',
      'quantity',
      'qty',
      'limit',
      'max',
      'size',
      'n',
      'top',
      'k',
      'page',
      'guests',
      'people',
      'adults',
      'children',
      'nights',
      'items',
    )
  )
    return [1, 10, false];
  return [1, 100, false];
}

/** Whether a number meets a node's own bounds (and multipleOf); the validator checks again. */
function withinBounds(node: Node, value: number, integer: boolean): boolean {
  if (integer && !Number.isInteger(value)) return false;
  const n = (key: string) => (typeof node[key] === 'number' ? (node[key] as number) : undefined);
  const min = n('minimum');
  const max = n('maximum');
  const xmin = n('exclusiveMinimum');
  const xmax = n('exclusiveMaximum');
  const step = n('multipleOf');
  if (min !== undefined && value < min) return false;
  if (max !== undefined && value > max) return false;
  if (xmin !== undefined && value <= xmin) return false;
  if (xmax !== undefined && value >= xmax) return false;
  if (step !== undefined && step > 0 && Math.abs(value / step - Math.round(value / step)) > 1e-9)
    return false;
  return true;
}

/** A number for a field: one the conversation says (near the field's name first), else modest. */
function numberFor(
  node: Node,
  words: string[],
  integer: boolean,
  said: Said,
  used: Used,
  random: Random,
): number | undefined {
  const fits = (v: number) => withinBounds(node, v, integer);
  const free = said.numbers.filter((s) => !used.numbers.has(s) && fits(s.value));
  const named = free.find((s) =>
    s.near.some((w) => words.includes(w) || words.includes(w.replace(/s$/, ''))),
  );
  const taken = named ?? free[0];
  if (taken) {
    used.numbers.add(taken);
    return taken.value;
  }
  const [low, high, cents] = rangeOf(words);
  const made = cents && !integer ? random.int(low * 100, high * 100) / 100 : random.int(low, high);
  if (fits(made)) return made;
  return undefined;
}

/** Within a node's length bounds (trimmed, or made longer with words), or undefined. */
function sized(node: Node, value: string, random: Random): string | undefined {
  const max = typeof node.maxLength === 'number' ? node.maxLength : undefined;
  const min = typeof node.minLength === 'number' ? node.minLength : 0;
  let out = value;
  while ([...out].length < min && out.length < 10_000) out = `${out} ${random.pick(WORDS)}`;
  if (max !== undefined && [...out].length > max) out = [...out].slice(0, max).join('').trimEnd();
  const length = [...out].length;
  return length >= Math.max(min, 1) && (max === undefined || length <= max) ? out : undefined;
}

/** Keywords that pin a string or number down: the generator's value stands. */
const PINNED = ['enum', 'const', 'pattern', 'format', 'contentEncoding', 'contentMediaType'];

interface Change {
  path: Array<string | number>;
  value: unknown;
}

/**
 * `value` (the generator's, valid against `schema`) with its free leaves made believable; each
 * change kept only if `valid` still holds (all at once when they all hold, else one by one).
 */
export function believable(
  schema: object,
  value: unknown,
  said: Said,
  seed: number,
  valid: (value: unknown) => boolean,
): unknown {
  const reader = new SchemaReader(schema as Node, hintReader());
  const leaves: Leaves = {
    reader,
    changes: [],
    said,
    random: randomOf(seed),
    used: { strings: new Set(), numbers: new Set() },
  };
  walkLeaves(leaves, schema, value, [], []);
  const { changes } = leaves;
  if (changes.length === 0) return value;
  const all = applyChanges(value, changes);
  if (valid(all)) return all;
  let kept = value;
  for (const change of changes) {
    const next = applyChanges(kept, [change]);
    if (valid(next)) kept = next;
  }
  return kept;
}

/** Reads the schema as a value is walked: `$ref`s followed, descriptions' keywords read. */
class SchemaReader {
  constructor(
    private readonly root: Node,
    private readonly hinted: ReturnType<typeof hintReader>,
  ) {}

  /** A node with its `$ref` followed (local pointers only) and its description's keywords. */
  read(node: unknown, hops = 0): Node | undefined {
    if (!isNode(node)) return undefined;
    if (typeof node.$ref === 'string' && node.$ref.startsWith('#') && hops < 8) {
      let at: unknown = this.root;
      for (const key of node.$ref.slice(1).split('/').filter(Boolean)) {
        const k = decodeURIComponent(key).replace(/~1/g, '/').replace(/~0/g, '~');
        at = isNode(at) ? at[k] : undefined;
      }
      return this.read(at, hops + 1);
    }
    return this.hinted(node);
  }

  /** The branch of an anyOf / oneOf (or the node) whose type takes the value. */
  branch(node: Node, v: unknown): Node {
    const options = Array.isArray(node.anyOf)
      ? node.anyOf
      : Array.isArray(node.oneOf)
        ? node.oneOf
        : undefined;
    if (!options) return node;
    const type =
      v === null
        ? 'null'
        : Array.isArray(v)
          ? 'array'
          : typeof v === 'number'
            ? Number.isInteger(v)
              ? 'integer'
              : 'number'
            : typeof v;
    for (const option of options) {
      const o = this.read(option);
      if (!o) continue;
      const types = typesOf(o);
      if (types.includes(type) || (type === 'integer' && types.includes('number')))
        return this.branch(o, v);
    }
    return node;
  }

  /** The schema of an object's property, from `properties` of the node or its allOf parts. */
  propertyOf(node: Node, key: string): Node | undefined {
    if (isNode(node.properties) && Object.hasOwn(node.properties, key))
      return this.read(node.properties[key]);
    for (const part of Array.isArray(node.allOf) ? node.allOf : []) {
      const p = this.read(part);
      const found = p && this.propertyOf(p, key);
      if (found) return found;
    }
    return undefined;
  }

  itemsOf(node: Node, index: number): Node | undefined {
    if (Array.isArray(node.prefixItems) && index < node.prefixItems.length)
      return this.read(node.prefixItems[index]);
    if (Array.isArray(node.items))
      return index < node.items.length ? this.read(node.items[index]) : undefined;
    return this.read(node.items);
  }
}

/** One walk of a value's leaves: what it reads with, and the changes found so far. */
interface Leaves {
  reader: SchemaReader;
  changes: Change[];
  said: Said;
  random: Random;
  used: Used;
}

function walkLeaves(
  leaves: Leaves,
  given: unknown,
  v: unknown,
  path: Array<string | number>,
  name: string[],
): void {
  const { reader, changes } = leaves;
  if (changes.length >= MAX_LEAVES) return;
  const at = reader.read(given);
  if (!at) return;
  const node = reader.branch(at, v);
  if (Array.isArray(v)) {
    // A list's items are named by the list, singular: `cities` → city.
    const itemName = name.map((w, i) =>
      i === name.length - 1 ? w.replace(/ies$/, 'y').replace(/s$/, '') : w,
    );
    for (let i = 0; i < v.length; i++) {
      walkLeaves(leaves, reader.itemsOf(node, i), v[i], [...path, i], itemName);
    }
    return;
  }
  if (v !== null && typeof v === 'object') {
    for (const [key, item] of Object.entries(v)) {
      const property = reader.propertyOf(node, key);
      if (property) walkLeaves(leaves, property, item, [...path, key], wordsOf(key));
    }
    return;
  }
  if (PINNED.some((k) => k in node)) return;
  const { said, used, random } = leaves;
  if (typeof v === 'string') {
    const made = stringFor(kindOf(name), name, said, used, random);
    const fitted = sized(node, made, random);
    if (fitted !== undefined && fitted !== v) {
      used.strings.add(made);
      changes.push({ path, value: fitted });
    }
  } else if (typeof v === 'number') {
    const types = typesOf(node);
    const integer = types.includes('integer') && !types.includes('number');
    const made = numberFor(node, name, integer, said, used, random);
    if (made !== undefined && made !== v) changes.push({ path, value: made });
  }
}

/** A copy of `base` with the changes made. */
function applyChanges(base: unknown, list: Change[]): unknown {
  const copy = structuredClone(base);
  for (const { path, value: leaf } of list) {
    if (path.length === 0) return leaf;
    let at = copy as Record<string | number, unknown>;
    for (const key of path.slice(0, -1)) at = at[key] as Record<string | number, unknown>;
    at[path[path.length - 1] as string | number] = leaf;
  }
  return copy;
}
