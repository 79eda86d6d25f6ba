import type { ValidateFunction } from 'ajv';
import { LinearRegexError } from '../../platform/linear-regex.js';
import { Lru } from '../../platform/lru.js';
import { shorten } from '../../platform/tokens.js';
import { isNode, type Node } from '../schema-nodes.js';
import { withFormats } from './formats.js';
import {
  type Budget,
  GENERATION_BUDGET,
  REQUEST_SCHEMA_NODES,
  SCHEMA_NODES,
  TooLarge,
} from './limits.js';
import { countNodes, isSchemaList, tooManyNodes } from './nodes.js';
import { hintedCopy, prepareFitting } from './prepare.js';
import { refProblem } from './refs.js';
import { compilerFor } from './validator.js';

/**
 * Schemas and generated values remembered, as an agent loop sends the same tools every turn:
 * at most this many, only schemas of at most SCHEMA_KEPT_BYTES of JSON, and only values whose
 * largest possible size is at most VALUE_KEPT_SIZE, so the memory stays small whatever comes.
 */
const SCHEMAS_KEPT = 512;
const SCHEMA_KEPT_BYTES = 64 * 1024;
const VALUES_KEPT = 2048;

export const VALUE_KEPT_SIZE = 1000;

/** The schema as Ajv's default dialect reads it: a top-level `$schema` names a dialect only. */
function dialectFree(schema: object): object {
  if (!('$schema' in schema)) return schema;
  const { $schema: _, ...rest } = schema as Node;
  return rest;
}

/** What one schema allows: its validator and the copy the generator gets, or why it cannot. */
export interface SchemaInfo {
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

export const NO_VALUE = Symbol('no value');

export const schemas = new Lru<SchemaInfo>(SCHEMAS_KEPT);

export const values = new Lru<unknown>(VALUES_KEPT);

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
export function readyInfo(schema: object): SchemaInfo {
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

/** An error message as a client may read it: Ajv's may carry the code it could not compile. */
const shortened = (message: string) => shorten(message, 300);

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
  const { compiler, renewed } = compilerFor(info.key.length);
  if (renewed) {
    // (what the old Ajv compiled is compiled again when it comes back)
    schemas.clear();
    values.clear();
  }
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
