import type { ValidateFunction } from 'ajv';
import { Ajv2019 } from 'ajv/dist/2019.js';
import addFormats from 'ajv-formats';
import type { JsonSchema } from 'json-schema-faker';
import {
  ajvLinearRegExp,
  type BacktrackingBudget,
  estimatedProgramSize,
  joinSurrogateEscapes,
  LinearRegexError,
  mayBacktrack,
  shortPropertyName,
  withBacktracking,
} from '../platform/linear-regex.js';
import { Lru } from '../platform/lru.js';
import { shorten } from '../platform/tokens.js';
import { believable, type Said } from './believable.js';
import { hintedPattern, hintReader } from './schema-hints.js';
import { DATA_KEYWORDS, isNode, type Node, pointerKey } from './schema-nodes.js';

/**
 * JSON values that a JSON Schema accepts, for tool arguments and structured output: made by
 * json-schema-faker from a seed (the same schema and seed give the same value) and proven with
 * Ajv before they are used. The generator loads on first use, so start-up does not pay for it.
 *
 * A client controls the schema, so generation is bounded before it starts: upper bounds are
 * lowered on the copy the generator sees (what it makes still meets the original), a schema
 * whose smallest value is too large to make is refused, and the generator follows a `$ref` no
 * deeper than the size estimate does. Patterns run in linear time (RE2); one that RE2 cannot run
 * (lookaround, a backreference) by JavaScript's engine within a time bound (see schemaRegex).
 * @see https://ajv.js.org/security.html
 */

let ajv: Ajv2019 | undefined;
/** Characters of schema JSON the current Ajv has compiled. */
let compiledChars = 0;
/**
 * An Ajv keeps in its scope what every schema it compiled refers to (an `enum`'s values, say),
 * `removeSchema` or not: 1000 schemas of 800 values each kept 46 MB for good, and a client
 * chooses them. So it is replaced by a new one after this many characters of schema, and the
 * schemas (and values) compiled by the old one are forgotten with it: they are compiled again
 * when they come back.
 */
const AJV_RENEW_CHARS = 16 * 1024 * 1024;

/**
 * Made on first use: start-up does not pay for an Ajv and its formats. Draft 2019-09: it reads
 * what clients still write in draft-07 words (a tuple's array `items`, `definitions`,
 * `dependencies`) and checks the keywords draft-07 does not know (`dependentRequired`,
 * `minContains`, `unevaluatedProperties`...), which upstream's draft 2020-12 checks; a 2020-12
 * tuple (`prefixItems`) is read in draft-07 words (see tuplesAsDraft7).
 */
function validator(): Ajv2019 {
  if (!ajv) {
    ajv = new Ajv2019({
      strict: false,
      // A client's schema is the client's: Ajv's remarks on it (`unknown format "emoji"
      // ignored`) would go to the emulator's console past its LOG_LEVEL.
      logger: false,
      allErrors: false,
      discriminator: false,
      // A definition referred to N times would be copied N times: the compiled code would grow
      // as its size times N, which a node count does not see (3.8 KB of schema cost 2 s).
      inlineRefs: false,
      code: { regExp: ajvLinearRegExp },
    });
    addFormats.default(ajv);
    boundFormats(ajv);
  }
  return ajv;
}

/**
 * ajv-formats checks strings with JavaScript regular expressions, some of them slow on long
 * input (`url` on 60 KB: 24 s). A string longer than any real date, address or URL is not of
 * the format; the checks never see more than this many characters.
 */
const FORMAT_CHARS = 4096;

type FormatTest = (value: string) => boolean;

function boundFormats(ajv: Ajv2019): void {
  for (const [name, format] of Object.entries(ajv.formats)) {
    const bounded =
      (test: FormatTest): FormatTest =>
      (value) =>
        value.length <= FORMAT_CHARS && test(value);
    const testOf = (f: unknown): FormatTest | undefined =>
      f instanceof RegExp
        ? (value) => f.test(value)
        : typeof f === 'function'
          ? (f as FormatTest)
          : undefined;
    const direct = testOf(format);
    if (direct) {
      ajv.addFormat(name, bounded(direct));
      continue;
    }
    const definition = format as { type?: string; validate?: unknown; async?: boolean };
    const test = testOf(definition.validate);
    if (test && (definition.type ?? 'string') === 'string' && !definition.async) {
      ajv.addFormat(name, { ...definition, validate: bounded(test) } as never);
    }
  }
}

/** Seeds tried for a value, shared by the copies of a schema (see SchemaInfo.alternatives). */
const ATTEMPTS = 8;
/** Upper bounds the generator gets: enough for an emulator's answer. */
const GENERATED_ITEMS = 3;
const GENERATED_LENGTH = 64;
const GENERATED_PROPERTIES = 8;
/** The most JSON nodes (and characters) a generated value may need. */
export const GENERATION_BUDGET = 100_000;
/**
 * The most all the values made for one request may need, by the same estimate: 32 tools called
 * at once, each a value of 20 000 leaves, took 5 s (and each of `n` choices makes its own).
 */
export const REQUEST_GENERATION_BUDGET = 2 * GENERATION_BUDGET;

/** What one request may still spend: schema nodes to compile, or nodes of values to make. */
export interface Budget {
  left: number;
  /** What the request's checks by backtracking patterns may still take (see schemaRegex). */
  backtracking?: BacktrackingBudget;
}

/**
 * The time one request's checks by patterns that only a backtracking engine runs may take
 * in all: real ones take microseconds a value, and a check stops at 10 ms.
 */
export const REQUEST_BACKTRACKING_MS = 100;
const backtrackingBudget = (): BacktrackingBudget => ({ leftMs: REQUEST_BACKTRACKING_MS });

/** What the values of one request may still cost (see REQUEST_GENERATION_BUDGET). */
export const generationBudget = (): Budget => ({
  left: REQUEST_GENERATION_BUDGET,
  backtracking: backtrackingBudget(),
});
/**
 * The most JSON nodes (keys' values and array items, counted as values) one schema, and all the
 * schemas of one request, may have. Ajv writes and compiles code for a schema, and that costs
 * about 0.1 to 0.3 ms a node (a 1000-branch `anyOf` 1.3 s): a client controls the schema, so it
 * is counted before it is compiled (or checked for strict mode). A tool schema seldom has more
 * than a few hundred.
 */
export const SCHEMA_NODES = 2000;
export const REQUEST_SCHEMA_NODES = 5000;
/**
 * The most nodes a schema may have once each `$ref` is replaced by what it points at. Ajv
 * checks a value against every path through the references: a chain of 23 `anyOf`s of two
 * `$ref`s to the next (2 KB of JSON) is 2^23 paths, and checking one value ran the process out
 * of memory. A real schema's definitions expand to a few thousand.
 */
export const EXPANDED_NODES = 200_000;
/** How deep a schema may nest, and how many local `$ref`s one path may follow. */
const MAX_DEPTH = 64;
const MAX_REF_HOPS = 8;
/**
 * Schemas and generated values remembered, as an agent loop sends the same tools every turn:
 * at most this many, only schemas of at most SCHEMA_KEPT_BYTES of JSON, and only values whose
 * largest possible size is at most VALUE_KEPT_SIZE, so the memory stays small whatever comes.
 */
const SCHEMAS_KEPT = 512;
const SCHEMA_KEPT_BYTES = 64 * 1024;
const VALUES_KEPT = 2048;
const VALUE_KEPT_SIZE = 1000;

/** The schema as Ajv's default dialect reads it: a top-level `$schema` names a dialect only. */
function dialectFree(schema: object): object {
  if (!('$schema' in schema)) return schema;
  const { $schema: _, ...rest } = schema as Node;
  return rest;
}

/** What one schema allows: its validator and the copy the generator gets, or why it cannot. */
interface SchemaInfo {
  key: string;
  /** A short id of the schema, for the keys of its generated values; -1 when it is not kept. */
  id: number;
  /** Its JSON nodes, counted up to SCHEMA_NODES + 1. */
  nodes: number;
  /** The schema as Ajv reads it, until it is compiled (see `ready`). */
  pending?: object;
  validate?: ValidateFunction;
  /** Why it is not JSON Schema (Ajv's compile error). */
  invalid?: string;
  source?: Node;
  /**
   * Other copies, tried in turn when no value is found with `source`: made with a `format` where
   * `source` is made from a pattern beside it (see formatForGenerator), and without the keywords
   * read from descriptions (see schema-hints.ts) when they changed it.
   */
  alternatives?: Node[];
  /** The largest value the generator can make from `source`, in JSON nodes and characters. */
  size?: number;
  /** Why no value is made for it (too large, a pattern RE2 cannot run). */
  unusable?: string;
  /**
   * The value made from the schema's own seeds (the same for every request), or NO_VALUE when
   * none was found: the schema is then refused, at once and for every request alike (a schema
   * nothing satisfies cost 8 attempts, up to 200 ms). A request whose own seeds find no value
   * gets this one: whether a schema is answered never depends on the request or on history.
   */
  canonical?: { value: unknown } | typeof NO_VALUE;
  /** Other verdicts about the schema, remembered with it (strict mode's, say). */
  memo?: Map<string, unknown>;
}

const NO_VALUE = Symbol('no value');

const schemas = new Lru<SchemaInfo>(SCHEMAS_KEPT);
const values = new Lru<unknown>(VALUES_KEPT);
let nextSchemaId = 0;
/**
 * The info of each schema object seen: a request's schema is asked about several times (its
 * checks, then each value made from it), and is serialized for the lookup only the first time.
 */
const seen = new WeakMap<object, SchemaInfo>();

/** The info of a schema, counted but not compiled yet when it is new. */
function infoOf(schema: object): SchemaInfo {
  let info = seen.get(schema);
  if (info) return info;
  info = lookUp(schema);
  seen.set(schema, info);
  return info;
}

/** The info of a schema, compiled (or refused as too large to compile). */
function readyInfo(schema: object): SchemaInfo {
  const info = infoOf(schema);
  if (info.pending !== undefined) ready(info, info.pending);
  return info;
}

function lookUp(schema: object): SchemaInfo {
  const key = JSON.stringify(schema);
  let info = schemas.get(key);
  if (info) return info;
  const plain = dialectFree(schema);
  const nodes = countNodes(plain, SCHEMA_NODES + 1);
  info = { key, id: key.length <= SCHEMA_KEPT_BYTES ? nextSchemaId++ : -1, nodes };
  // A schema too large to compile is refused as it is: remembered without it.
  if (nodes > SCHEMA_NODES) info.unusable = tooManyNodes;
  else info.pending = plain;
  if (info.id >= 0) schemas.set(key, info);
  return info;
}

/**
 * Instructions of a pattern counted as one more JSON node: RE2 compiles 200 in about the time
 * Ajv spends on a node, so a schema of many large patterns is bounded as one of many nodes.
 */
const INSTRUCTIONS_PER_NODE = 200;

/**
 * What a pattern only a backtracking engine runs weighs more (see `schemaRegex`): each may
 * cost up to BACKTRACKING_TIMEOUT_MS once, so a request holds at most 50 of them.
 */
const BACKTRACKING_NODES = 100;

/**
 * Keywords that cost Ajv more than a node to compile, weighed as this many nodes more: 660
 * `{contains: {const: i}}` (3 nodes each) took 0.75 s, against 0.2 s for as many properties.
 */
const KEYWORD_NODES = new Map([
  ['contains', 6],
  ['propertyNames', 2],
  ['format', 1],
]);

const patternNodes = (pattern: string, backtracks = mayBacktrack(pattern)) =>
  Math.floor(estimatedProgramSize(pattern) / INSTRUCTIONS_PER_NODE) +
  (backtracks ? BACKTRACKING_NODES : 0);

/**
 * JSON nodes in a value, each pattern (a `pattern`, a key of `patternProperties`, one read
 * from a `description`) weighed by its size too, counting stopped at `limit`.
 */
function countNodes(value: unknown, limit: number): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && count < limit) {
    const node = stack.pop();
    count++;
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item);
    } else if (typeof node === 'object' && node !== null) {
      for (const key in node) {
        const item = (node as Node)[key];
        count += KEYWORD_NODES.get(key) ?? 0;
        if (key === 'pattern' && typeof item === 'string') count += patternNodes(item);
        else if (key === 'description' && typeof item === 'string') {
          // a pattern read from it is compiled too (see schema-hints.ts), by RE2 only
          const hinted = hintedPattern(item);
          if (hinted !== undefined) count += 1 + patternNodes(hinted, false);
        } else if (key === 'patternProperties' && isNode(item)) {
          for (const name in item) count += patternNodes(name);
        }
        stack.push(item);
      }
    }
  }
  return count;
}

/** An error message as a client may read it: Ajv's may carry the code it could not compile. */
const shortened = (message: string) => shorten(message, 300);

const tooManyNodes = `it has more than ${SCHEMA_NODES} JSON nodes (a pattern counting one more per ${INSTRUCTIONS_PER_NODE} instructions it compiles to, ${BACKTRACKING_NODES} more with lookaround or a backreference), more than the emulator checks in one schema`;

/**
 * A 2020-12 tuple in the words of draft-07, which Ajv's default dialect reads: `prefixItems`
 * becomes the array form of `items`, and a 2020-12 `items` beside it (the schema of the items
 * after the tuple's, `false` for none) becomes `additionalItems`. zod 4 writes tuples so (the
 * generator's copy says it in 2020-12 words again, see `prepare`). Values (`enum`, `const`,
 * `default`, `examples`) are copied as they are.
 * @see https://json-schema.org/draft/2020-12/release-notes#changes-to-items-and-additionalitems
 */
function tuplesAsDraft7(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(tuplesAsDraft7);
  if (!isNode(node)) return node;
  const out: Node = {};
  for (const key of Object.keys(node)) {
    out[key] = VALUE_KEYWORDS.has(key) ? node[key] : tuplesAsDraft7(node[key]);
  }
  if (isSchemaList(out.prefixItems)) {
    const tuple = out.prefixItems;
    delete out.prefixItems;
    if ('items' in out) out.additionalItems = out.items;
    out.items = tuple;
  }
  return out;
}
const VALUE_KEYWORDS = new Set(['enum', 'const', 'default', 'examples']);
/** A list of schemas (a tuple), not of names (`dependencies: {"items": ["a"]}` is a map's). */
const isSchemaList = (value: unknown): value is unknown[] =>
  Array.isArray(value) && value.every((item) => typeof item === 'boolean' || isNode(item));

const WRONG_TYPE = 'a keyword has a value of the wrong type (an $id must be a string)';

/** Compiles the schema and prepares the generator's copy, once. */
function ready(info: SchemaInfo, schema: object): void {
  info.pending = undefined;
  const plain = info.key.includes('"prefixItems"') ? (tuplesAsDraft7(schema) as object) : schema;
  // References are checked before Ajv sees the schema (see refProblem).
  if (info.key.includes('"$ref"')) {
    const problem = refProblem(plain as Node, info.key.includes('"$id"'));
    if (problem !== undefined) {
      Object.assign(info, problem);
      return;
    }
  }
  if (compiledChars > AJV_RENEW_CHARS) {
    ajv = undefined;
    compiledChars = 0;
    schemas.clear();
    values.clear();
  }
  const compiler = validator();
  compiledChars += info.key.length;
  try {
    info.validate = compiler.compile(plain);
  } catch (err) {
    if (err instanceof LinearRegexError) info.unusable = `a pattern: ${err.message}`;
    // Ajv's own code failing on a keyword of the wrong type (`"$id": 1`): its words are not
    // the client's business.
    else if (err instanceof TypeError) info.invalid = WRONG_TYPE;
    else info.invalid = shortened((err as Error).message);
  } finally {
    // Ajv would keep every schema it compiled (and its `$id`, which another key's schema could
    // then not use): the LRU above is the only memory of schemas. (Ajv's removal throws on an
    // `$id` that is not a string, which its compile took: there is nothing to remove then.)
    try {
      compiler.removeSchema(plain);
    } catch {}
  }
  if (info.validate) {
    try {
      // With hints first: most schemas hold none, and that walk is then the only one.
      const hinted = hintedCopy(plain as Node);
      const prepared = hinted?.hinted === false ? hinted : prepareFitting(plain as Node, false);
      const copies = hinted?.hinted ? [hinted, prepared] : [prepared];
      const [source, ...alternatives] = copies.flatMap((p) =>
        p.formats ? [p.copy, withFormats(p.copy)] : [p.copy],
      );
      info.source = source;
      if (alternatives.length > 0) info.alternatives = alternatives;
      info.size = hinted?.hinted ? Math.max(prepared.size, hinted.size) : prepared.size;
    } catch (err) {
      info.unusable =
        err instanceof TooLarge
          ? `its values are too large to generate (more than ${GENERATION_BUDGET} JSON nodes or characters)`
          : (err as Error).message;
    }
  }
}

/** What a request's schemas may still cost, in JSON nodes (see REQUEST_SCHEMA_NODES). */
export const schemaBudget = (): Budget => ({ left: REQUEST_SCHEMA_NODES });

/**
 * Counts a schema against its request's budget, before it is compiled: why the request is
 * refused when its schemas together are over REQUEST_SCHEMA_NODES, or undefined.
 */
export function spendSchema(budget: Budget, schema: object): string | undefined {
  const { nodes } = infoOf(schema);
  if (nodes > SCHEMA_NODES) return tooManyNodes;
  budget.left -= nodes;
  return budget.left < 0
    ? `the request's schemas have more than ${REQUEST_SCHEMA_NODES} JSON nodes in all, more than the emulator checks in one request`
    : undefined;
}

/** A verdict about a schema, computed once and remembered with it. */
export function schemaMemo<T>(schema: object, name: string, compute: (schema: object) => T): T {
  const info = infoOf(schema);
  info.memo ??= new Map();
  if (!info.memo.has(name)) info.memo.set(name, compute(schema));
  return info.memo.get(name) as T;
}

/** Why a schema is not JSON Schema (Ajv's compile error), or undefined when it is. */
export const schemaProblem = (schema: object): string | undefined => readyInfo(schema).invalid;

/** Why the emulator will not make values for a schema (too large, a pattern RE2 cannot run), or undefined. */
export const generationProblem = (schema: object): string | undefined => readyInfo(schema).unusable;

const num = (value: unknown, fallback: number) => (typeof value === 'number' ? value : fallback);

/**
 * The keys a local `$ref` (`#` or `#/...`, a JSON pointer as a URI fragment) names, as Ajv
 * reads them (each percent-decoded, then `~1` and `~0` undone), or undefined.
 */
function pointerKeys(ref: string): string[] | undefined {
  if (ref === '#') return [];
  if (!ref.startsWith('#/')) return undefined;
  try {
    return ref
      .slice(2)
      .split('/')
      .map((part) => decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~'));
  } catch {
    return undefined;
  }
}

/** The node a local `$ref` points at through the schema's own keys (`#/__proto__`: none). */
function resolve(root: Node, ref: string): unknown {
  const keys = pointerKeys(ref);
  if (keys === undefined) return undefined;
  let node: unknown = root;
  for (const key of keys) {
    if (!(isNode(node) || Array.isArray(node)) || !Object.hasOwn(node, key)) return undefined;
    node = (node as Node)[key];
  }
  return node;
}

/** Each schema's anchor pointers, found once (its copies are prepared several times). */
const anchorsFound = new WeakMap<Node, ReadonlyMap<string, string>>();

/**
 * The JSON pointer (`#/$defs/a`) of each anchor of a schema (`#name`, an `$anchor`'s): the
 * generator follows pointers only.
 */
function anchorPointers(root: Node): ReadonlyMap<string, string> {
  const known = anchorsFound.get(root);
  if (known) return known;
  const pointers = new Map<string, string>();
  const stack: Array<[unknown, string]> = [[root, '#']];
  while (stack.length > 0) {
    const [node, at] = stack.pop() as [unknown, string];
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) stack.push([node[i], `${at}/${i}`]);
    } else if (isNode(node)) {
      if (typeof node.$anchor === 'string') pointers.set(`#${node.$anchor}`, at);
      for (const key of Object.keys(node)) {
        if (!DATA_KEYWORDS.has(key)) stack.push([node[key], `${at}/${pointerKey(key)}`]);
      }
    }
  }
  anchorsFound.set(root, pointers);
  return pointers;
}

/** A local `$ref` as the generator reads it: without percent-encoding, which it does not undo. */
function generatorRef(ref: string): string {
  const keys = ref.includes('%') ? pointerKeys(ref) : undefined;
  if (keys === undefined) return ref;
  return `#/${keys.map(pointerKey).join('/')}`;
}

/**
 * A local `$ref` that points at nothing in the schema, or undefined. Ajv follows a pointer
 * through inherited keys too (`#/__proto__` is Object.prototype to it, which every value meets);
 * upstream reads JSON, which has none. A schema with an `$id` inside is left to Ajv: its
 * pointers start at that `$id`'s node.
 */
function unresolvedRef(root: Node): string | undefined {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) stack.push(...node);
    else if (isNode(node)) {
      const ref = node.$ref;
      if (typeof ref === 'string' && ref.startsWith('#/') && resolve(root, ref) === undefined) {
        return ref;
      }
      for (const key of Object.keys(node)) if (!DATA_KEYWORDS.has(key)) stack.push(node[key]);
    }
  }
  return undefined;
}

/**
 * The nodes a schema has once each `$ref` (a pointer, or an anchor: `$anchor`, draft-07's
 * `$id: "#a"`) is replaced by what it points at, each node counted once however often it is
 * reached within one path (a recursive schema is bounded by its value, not here), up to
 * `limit + 1`; undefined when a `$ref` lies in the scope of an `$id` inside the schema, which
 * resolves it against another base.
 */
function expandedNodes(root: Node, limit: number): number | undefined {
  const anchors = new Map<string, unknown>();
  let innerId = false;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) stack.push(...node);
    else if (isNode(node)) {
      if (typeof node.$anchor === 'string') anchors.set(`#${node.$anchor}`, node);
      if (typeof node.$id === 'string') {
        if (node.$id.startsWith('#')) anchors.set(node.$id, node);
        else if (node !== root) innerId = true;
      }
      for (const key of Object.keys(node)) if (!DATA_KEYWORDS.has(key)) stack.push(node[key]);
    }
  }
  if (innerId) return undefined;
  const sizes = new Map<object, number>();
  const reaching = new Set<object>();
  const size = (value: unknown): number => {
    if (typeof value !== 'object' || value === null) return 1;
    const known = sizes.get(value);
    if (known !== undefined) return known;
    if (reaching.has(value)) return 1;
    reaching.add(value);
    let total = 1;
    if (Array.isArray(value)) {
      for (const item of value) {
        total += size(item);
        if (total > limit) break;
      }
    } else {
      const node = value as Node;
      for (const key of Object.keys(node)) {
        // A definition counts where a $ref reaches it: Ajv checks no value against $defs.
        if (key === '$defs' || key === 'definitions') continue;
        total += DATA_KEYWORDS.has(key) ? 1 : size(node[key]);
        if (total > limit) break;
      }
      if (typeof node.$ref === 'string' && total <= limit) {
        const target = node.$ref.startsWith('#/')
          ? resolve(root, node.$ref)
          : anchors.get(node.$ref);
        total += node.$ref === '#' ? size(root) : target === undefined ? 0 : size(target);
      }
    }
    reaching.delete(value);
    total = Math.min(total, limit + 1);
    sizes.set(value, total);
    return total;
  };
  return size(root);
}

/**
 * What is wrong with a schema's `$ref`s, before Ajv reads them: one that points at nothing
 * (JSON Schema says so: `invalid`), or ones the emulator does not check a value through
 * (`unusable`: an inner `$id`'s, or too many paths).
 */
function refProblem(
  root: Node,
  hasId: boolean,
): { invalid: string } | { unusable: string } | undefined {
  const unresolved = hasId ? undefined : unresolvedRef(root);
  if (unresolved !== undefined)
    return { invalid: `can't resolve reference ${unresolved} from id #` };
  const expanded = expandedNodes(root, EXPANDED_NODES);
  if (expanded === undefined) {
    return {
      unusable: 'it has a $ref within an $id inside the schema, which the emulator does not follow',
    };
  }
  if (expanded > EXPANDED_NODES) {
    return {
      unusable: `its $refs expand it to more than ${EXPANDED_NODES} nodes, more than the emulator checks a value against`,
    };
  }
  return undefined;
}

class TooLarge extends Error {}

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
function narrowRange(copy: Node): void {
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
function generatorPattern(given: string): string {
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
function foldPatterns(copy: Node): void {
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

/** The number the generator is given as an upper bound: the schema's, lowered to `cap`. */
const lowered = (node: Node, min: string, max: string, cap: number) =>
  Math.max(num(node[min], 0), Math.min(num(node[max], cap), cap));

/** The most `contains` values the generator makes: `minContains` (1 by default), or up to `cap`. */
const containsMost = (node: Node, cap: number) =>
  Math.max(num(node.minContains, 1), Math.min(num(node.maxContains, cap), cap));

type HintRead = ReturnType<typeof hintReader>;

/** A generator's copy, the size of its largest value, and whether hints or formats changed it. */
interface Prepared {
  copy: Node;
  size: number;
  hinted: boolean;
  formats: boolean;
}

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
function formatForGenerator(copy: Node): boolean {
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
function withFormats(copy: Node): Node {
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

/**
 * Names an object's copy still needs (see wantNames), made with the generator when it is first
 * used (see fillNames): the generator never sees `patternProperties` or `propertyNames`.
 */
interface WantedNames {
  /** How many names to add. */
  count: number;
  /** The names' own schema (`propertyNames`), as the generator would have it. */
  names?: Node;
  /** `patternProperties`, pattern by pattern, each with its values' schema. */
  patterns: Array<readonly [string, unknown]>;
  /** The schema of a value under a name, or undefined when no value may have that name. */
  valueFor(name: string): unknown;
}
const namesWanted = new WeakMap<Node, WantedNames>();
/** The most names tried against patterns for one object (see wantNames). */
const NAME_CHECKS = 20_000;
/** The generator's copies whose names are made (see fillNames). */
const named = new WeakSet<Node>();

/**
 * Makes the names an object needs ready: the generator would name the properties
 * `minProperties` asks for (or `required` lists without defining) `prop123` and give them any
 * value, which `propertyNames` or `additionalProperties: false` refuse, and a value that a
 * `patternProperties` schema does not take. A name meets the schema of every pattern it
 * matches (RE2, as Ajv runs it): a required name the properties leave to the patterns, and a
 * named property too; the rest of `minProperties` (up to GENERATED_PROPERTIES) is left to
 * fillNames.
 */
function wantNames(node: Node, copy: Node, aside: Node): void {
  const patterns = isNode(aside.patternProperties) ? Object.entries(aside.patternProperties) : [];
  const additional = copy.additionalProperties;
  let checks = 0;
  /** The schemas of the patterns a name matches (JSON Schema applies every one). */
  const matching = (name: string): unknown[] => {
    const found: unknown[] = [];
    for (const [pattern, schema] of patterns) {
      // Bounded: a schema of 1000 required names and 1000 patterns would be a million checks.
      // A pattern only a backtracking engine runs is passed over; Ajv checks the value anyway.
      if (++checks > NAME_CHECKS) break;
      if (mayBacktrack(pattern)) continue;
      try {
        if (ajvLinearRegExp(pattern, 'u').test(name)) found.push(schema);
      } catch {
        // (Ajv compiled it: this does not happen)
      }
    }
    return found;
  };
  const all = (schemas: unknown[]) => (schemas.length === 1 ? schemas[0] : { allOf: schemas });
  const valueFor = (name: string): unknown => {
    const found = matching(name);
    if (found.length > 0) return all(found);
    if (additional === false) return undefined;
    return isNode(additional) || additional === true ? additional : {};
  };
  const properties: Node = isNode(copy.properties) ? { ...copy.properties } : {};
  // A named property that a pattern matches must meet the pattern's schema too.
  for (const name of Object.keys(properties)) {
    const found = matching(name);
    if (found.length > 0) properties[name] = all([properties[name], ...found]);
  }
  const required = new Set(
    (Array.isArray(node.required) ? node.required : []).filter(
      (name): name is string => typeof name === 'string',
    ),
  );
  for (const name of required) {
    if (Object.hasOwn(properties, name)) continue;
    const schema = valueFor(name);
    if (schema !== undefined) properties[name] = schema;
  }
  if (Object.keys(properties).length > 0) copy.properties = properties;
  let defined = 0;
  for (const name of required) if (Object.hasOwn(properties, name)) defined++;
  const count = Math.min(num(node.minProperties, 0), GENERATED_PROPERTIES) - defined;
  if (count <= 0) return;
  namesWanted.set(copy, {
    count,
    ...(isNode(aside.propertyNames) ? { names: aside.propertyNames } : {}),
    patterns,
    valueFor,
  });
}

/** Names an object's wanted properties (see wantNames) in a copy, once, before it is used. */
function fillNames(root: Node, generate: Generate): void {
  if (named.has(root)) return;
  named.add(root);
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item);
      continue;
    }
    if (!isNode(node)) continue;
    const want = namesWanted.get(node);
    if (want) {
      namesWanted.delete(node);
      addNames(node, want, generate);
    }
    for (const key of Object.keys(node)) if (!DATA_KEYWORDS.has(key)) stack.push(node[key]);
  }
}

/**
 * Adds `want.count` required properties to an object's copy: names from `propertyNames` (its
 * `enum` or `const` in turn, else made from it) or, when it has no pattern of its own, made from
 * the patterns in turn (with its other keywords); each with the schema its name calls for. A
 * name that fails is passed over; Ajv checks the value made in the end.
 */
function addNames(copy: Node, want: WantedNames, generate: Generate): void {
  const { names, patterns } = want;
  const fixed = names
    ? Array.isArray(names.enum)
      ? names.enum
      : 'const' in names
        ? [names.const]
        : undefined
    : undefined;
  const fromNames = names !== undefined && (fixed !== undefined || 'pattern' in names);
  const properties: Node = isNode(copy.properties) ? { ...copy.properties } : {};
  const required = new Set(Array.isArray(copy.required) ? copy.required : []);
  let added = 0;
  for (let i = 0; added < want.count && i < want.count * 4; i++) {
    let name: unknown;
    if (fixed) name = fixed[i];
    else {
      const pattern = patterns[i % Math.max(1, patterns.length)]?.[0];
      // (the names' other keywords, a length, with a pattern's)
      const schema: Node =
        fromNames || pattern === undefined
          ? { ...names, type: 'string' }
          : { ...names, type: 'string', pattern };
      try {
        name = generate(schema as JsonSchema, {
          seed: i + 1,
          maxDepth: 1,
          refDepthMax: 0,
          formats: GENERATOR_FORMATS,
        });
      } catch {
        continue;
      }
    }
    if (typeof name !== 'string' || Object.hasOwn(properties, name)) continue;
    const schema = want.valueFor(name);
    if (schema === undefined) continue;
    properties[name] = schema;
    required.add(name);
    added++;
  }
  copy.properties = properties;
  copy.required = [...required];
}

/**
 * The copy of a schema the generator gets (upper bounds lowered), checking on the way that
 * the largest value it can make stays within GENERATION_BUDGET. Throws TooLarge, or an Error
 * when the schema nests too deep.
 */
function prepare(root: Node, read: HintRead, cap: number): Prepared {
  const anchors = anchorPointers(root);
  let walked = 0;
  let hinted = false;
  let formats = false;
  /**
   * The size of a `$ref`'s target at each depth and hop count, computed once: the paths to a
   * node through references grow with the power of the hops (three lists of a node, 3^8).
   */
  const refSizes = new Map<string, number>();
  const refIds = new Map<unknown, number>();
  const refSize = (target: unknown, depth: number, hops: number) => {
    let id = refIds.get(target);
    if (id === undefined) {
      id = refIds.size;
      refIds.set(target, id);
    }
    const key = `${id}:${depth}:${hops}`;
    let size = refSizes.get(key);
    if (size === undefined) {
      size = walk(target, depth, hops).size;
      refSizes.set(key, size);
    }
    return size;
  };
  /** Walks a schema: its copy, and the size of the largest value made from it. */
  const walk = (given: unknown, depth: number, hops: number): { copy: unknown; size: number } => {
    if (++walked > GENERATION_BUDGET) throw new TooLarge();
    if (depth > MAX_DEPTH) {
      throw new Error(
        `it nests deeper than ${MAX_DEPTH} levels, more than the emulator makes values for`,
      );
    }
    if (!isNode(given)) return { copy: given, size: 1 };
    const node = read(given);
    if (node !== given) hinted = true;
    const copy: Node = {};
    const aside: Node = {};
    const sizeOf = (key: string) => {
      const value = node[key];
      if (Array.isArray(value)) {
        const parts = value.map((item) => walk(item, depth + 1, hops));
        copy[key] = parts.map((part) => part.copy);
        return parts.map((part) => part.size);
      }
      if (
        key === 'properties' ||
        key === 'patternProperties' ||
        key === '$defs' ||
        key === 'definitions'
      ) {
        if (!isNode(value)) return [];
        const parts = Object.entries(value).map(
          ([name, item]) => [name, walk(item, depth + 1, hops)] as const,
        );
        copy[key] = Object.fromEntries(parts.map(([name, part]) => [name, part.copy]));
        return parts.map(([, part]) => part.size);
      }
      const part = walk(value, depth + 1, hops);
      copy[key] = part.copy;
      return [part.size];
    };
    const sum = (sizes: number[]) => sizes.reduce((a, b) => a + b, 0);
    let size = 1;
    for (const key of Object.keys(node)) {
      if (DATA_KEYWORDS.has(key)) {
        copy[key] = node[key];
        continue;
      }
      if (key === 'pattern' && typeof node.pattern === 'string') {
        // Ajv compiled it with RE2 already
        copy.pattern = node.pattern.includes('\\') ? generatorPattern(node.pattern) : node.pattern;
        continue;
      }
      if (key === '$ref' && typeof node.$ref === 'string' && !node.$ref.startsWith('#')) {
        // The generator would follow `urn:x` to a `$id` that this walk does not find, so the
        // size estimate would not bound it.
        throw new Error(
          `its $ref ${JSON.stringify(node.$ref).slice(0, 80)} is not a local reference (#/...), the only kind the emulator follows`,
        );
      }
      const sizes = sizeOf(key);
      if (key === '$ref' && typeof copy.$ref === 'string') {
        copy.$ref = generatorRef(anchors.get(copy.$ref) ?? copy.$ref);
      }
      // The generator tries these names with JavaScript's backtracking engine: it never sees
      // them, and Ajv (RE2) checks the value it makes.
      if (key === 'patternProperties' || key === 'propertyNames') {
        aside[key] = copy[key];
        delete copy[key];
      }
      if (key === 'anyOf' || key === 'oneOf') size += Math.max(0, ...sizes);
      else if (key === 'items') size += lowered(node, 'minItems', 'maxItems', cap) * sum(sizes);
      else if (key === 'contains') size += containsMost(node, cap) * sum(sizes);
      else if (key === 'additionalProperties' || key === 'patternProperties') {
        size += GENERATED_PROPERTIES * Math.max(0, ...sizes);
      } else if (key !== '$defs' && key !== 'definitions') size += sum(sizes);
    }
    if (typeof node.$ref === 'string' && hops < MAX_REF_HOPS) {
      size += refSize(resolve(root, anchors.get(node.$ref) ?? node.$ref), depth + 1, hops + 1);
    }
    if ('minItems' in node || 'maxItems' in node || (cap < GENERATED_ITEMS && 'items' in node)) {
      copy.maxItems = lowered(node, 'minItems', 'maxItems', cap);
    }
    if ('contains' in node) {
      // The generator makes a random count of them between the two, each a value: the count
      // is bounded as a list's length is, and the list made long enough to hold the least.
      copy.maxContains = containsMost(node, cap);
      const least = num(node.minContains, 1);
      if (least > num(copy.maxItems, GENERATED_ITEMS) && num(node.maxItems, least) >= least) {
        copy.maxItems = least;
      }
    }
    if (isSchemaList(copy.items) && copy.items.length > 0) {
      // The generator reads a tuple as 2020-12 writes it (it makes objects of draft-07's).
      copy.prefixItems = copy.items;
      if ('additionalItems' in copy) copy.items = copy.additionalItems;
      else delete copy.items;
      delete copy.additionalItems;
    }
    narrowRange(copy);
    if (Array.isArray(copy.allOf)) foldPatterns(copy);
    if ('minLength' in node || 'maxLength' in node || node.type === 'string') {
      const max = lowered(node, 'minLength', 'maxLength', GENERATED_LENGTH);
      if ('maxLength' in node) copy.maxLength = max;
      size += max;
    }
    if (formatForGenerator(copy)) formats = true;
    if ('minProperties' in node || 'maxProperties' in node) {
      copy.maxProperties = lowered(node, 'minProperties', 'maxProperties', GENERATED_PROPERTIES);
      size += copy.maxProperties as number;
    }
    if (aside.patternProperties !== undefined || aside.propertyNames !== undefined) {
      wantNames(node, copy, aside);
    }
    if (size > GENERATION_BUDGET) throw new TooLarge();
    return { copy, size };
  };
  const { copy, size } = walk(root, 0, 0);
  return { copy: copy as Node, size, hinted, formats };
}

/**
 * The generator's copy, with lists of at most GENERATED_ITEMS items, or fewer (down to none
 * where the schema allows it) when the largest value would not fit GENERATION_BUDGET: a tree of
 * nodes that hold lists of nodes is answered with a smaller tree, not refused.
 */
function prepareFitting(root: Node, hints: boolean): Prepared {
  // One reader for every pass: each description is read once, within one budget.
  const read: HintRead = hints ? hintReader() : (node) => node;
  for (let cap = GENERATED_ITEMS; ; cap--) {
    try {
      return prepare(root, read, cap);
    } catch (err) {
      if (!(err instanceof TooLarge) || cap === 0) throw err;
    }
  }
}

/**
 * The generator's copy with the keywords descriptions hold (`hinted` says whether any did), or
 * undefined when it cannot be used: the schema as sent is then walked without them.
 */
function hintedCopy(root: Node): Prepared | undefined {
  try {
    return prepareFitting(root, true);
  } catch {
    return undefined;
  }
}

/** The generator's random source, as it hands it to a format. */
interface Random {
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
}

const EMOJI = ['😀', '🚀', '👍', '🎉', '🌍', '🔥', '✅', '🙂'];
const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

const two = (n: number) => String(n).padStart(2, '0');
const clockTime = (random: Random) =>
  `${two(random.int(0, 23))}:${two(random.int(0, 59))}:${two(random.int(0, 59))}`;

/**
 * Formats the generator has no maker for (it would make a word): zod's, values zod's own checks
 * take; and ajv-formats' own (`url`, `iso-time`, `iso-date-time`, a pointer as a URI fragment),
 * values Ajv takes.
 * @see https://ajv.js.org/packages/ajv-formats.html#formats
 */
const GENERATOR_FORMATS: Record<string, (random: Random) => string> = {
  emoji: (random) => random.pick(EMOJI).repeat(random.int(1, 3)),
  jwt: (random) =>
    `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url({ sub: `user-${random.int(1, 9999)}` })}.${base64url({ sig: random.int(0, 1e9) })}`,
  url: (random) =>
    `https://example.com/${random.pick(['items', 'docs', 'users'])}/${random.int(1, 9999)}`,
  'iso-time': clockTime,
  'iso-date-time': (random) =>
    `${random.int(2000, 2030)}-${two(random.int(1, 12))}-${two(random.int(1, 28))}T${clockTime(random)}`,
  'json-pointer-uri-fragment': (random) =>
    `#/${random.pick(['items', 'data', 'users'])}/${random.int(0, 9)}`,
};

type Generate = (
  schema: JsonSchema,
  options: {
    seed: number;
    maxDepth: number;
    refDepthMax: number;
    formats: typeof GENERATOR_FORMATS;
  },
) => unknown;
let generator: Promise<Generate> | undefined;

const loadGenerator = () => {
  generator ??= import('json-schema-faker').then(({ generateSync }) => generateSync as Generate);
  return generator;
};

const UNSATISFIABLE = 'no value satisfies this schema';

/** Whether every number in a value is finite (a range of ±1.7e308 can make an Infinity). */
function allFinite(value: unknown): boolean {
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const item = stack.pop();
    if (typeof item === 'number') {
      if (!Number.isFinite(item)) return false;
    } else if (Array.isArray(item)) stack.push(...item);
    else if (item !== null && typeof item === 'object') stack.push(...Object.values(item));
  }
  return true;
}

export class UnsatisfiableSchemaError extends Error {
  override name = 'UnsatisfiableSchemaError';
}

/**
 * A value valid against `schema`, the same for the same schema and seed. Tries a few seeds
 * (the generator cannot satisfy every combination of keywords at the first try); throws
 * UnsatisfiableSchemaError when none gives a valid value, or when the schema cannot be used.
 */
export async function schemaInstance(
  schema: object,
  seed: number,
  budget?: Budget,
  said?: () => Said,
): Promise<unknown> {
  const info = readyInfo(schema);
  const { validate, source } = info;
  if (!validate || !source) {
    throw new UnsatisfiableSchemaError(
      info.invalid ?? info.unusable ?? 'the schema cannot be used',
    );
  }
  if (budget) {
    budget.left -= info.size ?? 0;
    if (budget.left < 0) {
      throw new UnsatisfiableSchemaError(
        `the values this request asks for (each choice, each call) could need more than ${REQUEST_GENERATION_BUDGET} JSON nodes or characters in all, more than the emulator makes for one request`,
      );
    }
  }
  const generate = await loadGenerator();
  const backtracking = budget?.backtracking ?? backtrackingBudget();
  if (info.canonical === undefined) {
    const { result: found, timedOut } = withBacktracking(backtracking, () =>
      attempt(info, generate, CANONICAL_SEED),
    );
    // A verdict reached because checks ran out of time is this request's, not the schema's.
    if (!found && timedOut) {
      throw new UnsatisfiableSchemaError(
        `its patterns (lookaround or backreferences) took longer to check than the ${REQUEST_BACKTRACKING_MS} ms the emulator gives them in one request`,
      );
    }
    info.canonical = found ?? NO_VALUE;
  }
  const canonical = info.canonical;
  if (canonical === NO_VALUE) throw new UnsatisfiableSchemaError(UNSATISFIABLE);
  // (a seed made from a prompt stands for the prompt: the values shaped by it are kept too)
  const valueKey = `${seed}:${info.id}${said ? ':said' : ''}`;
  const known = info.id < 0 ? undefined : values.get(valueKey);
  if (known !== undefined) return known;
  const own =
    seed === CANONICAL_SEED
      ? undefined
      : withBacktracking(backtracking, () => attempt(info, generate, seed)).result;
  const made = (own ?? canonical).value;
  const value = said
    ? (withBacktracking(backtracking, () =>
        believable(schema, made, said(), seed, (v) => validate(v) as boolean),
      ).result ?? made)
    : made;
  if (info.id >= 0 && (info.size ?? Number.POSITIVE_INFINITY) <= VALUE_KEPT_SIZE) {
    values.set(valueKey, value);
  }
  return value;
}

/** The seed every schema is first tried with (see SchemaInfo.canonical). */
const CANONICAL_SEED = 0;

/** A valid value from a few seeds derived from `seed`, or undefined when none gives one. */
function attempt(
  info: SchemaInfo,
  generate: Generate,
  seed: number,
): { value: unknown } | undefined {
  const { validate, source } = info as Required<Pick<SchemaInfo, 'validate' | 'source'>>;
  const sources = [source, ...(info.alternatives ?? [])];
  for (const copy of sources) fillNames(copy, generate);
  const each = Math.max(1, Math.floor(ATTEMPTS / sources.length));
  for (let attempt = 0; attempt < each * sources.length; attempt++) {
    let value: unknown;
    try {
      value = generate(sources[Math.floor(attempt / each)] as JsonSchema, {
        seed: (seed + attempt * 0x9e3779b1) >>> 0,
        // Its default (5) fills deeper objects with type defaults that ignore their keywords
        // (an integer of -713..-359 becomes 0); the size budget already bounds the value.
        maxDepth: MAX_DEPTH + 1,
        // As far as the size estimate follows a `$ref`: left to itself, the generator follows a
        // recursive `$ref` to maxDepth, 3^65 nodes for a node that requires a list of itself.
        refDepthMax: MAX_REF_HOPS,
        formats: GENERATOR_FORMATS,
      });
    } catch {
      continue;
    }
    // Ajv's number type takes Infinity and NaN, which JSON writes as null: not a value.
    if (!allFinite(value)) continue;
    let valid: boolean;
    try {
      valid = validate(value) as boolean;
    } catch (err) {
      // A `$ref` cycle that never reaches a keyword (`{"$ref": "#"}`) never ends.
      if (!(err instanceof RangeError)) throw err;
      info.unusable = 'its $ref refers back to itself without end';
      info.source = undefined;
      throw new UnsatisfiableSchemaError(info.unusable);
    }
    if (valid) return { value };
  }
  return undefined;
}
