import type { BacktrackingBudget } from '../../platform/linear-regex.js';

/** Seeds tried for a value, shared by the copies of a schema (see SchemaInfo.alternatives). */
export const ATTEMPTS = 8;

/** Upper bounds the generator gets: enough for an emulator's answer. */
export const GENERATED_ITEMS = 3;

export const GENERATED_LENGTH = 64;

export const GENERATED_PROPERTIES = 8;

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

export const backtrackingBudget = (): BacktrackingBudget => ({ leftMs: REQUEST_BACKTRACKING_MS });

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
export const MAX_DEPTH = 64;

export const MAX_REF_HOPS = 8;

export const num = (value: unknown, fallback: number) =>
  typeof value === 'number' ? value : fallback;

export class TooLarge extends Error {}
