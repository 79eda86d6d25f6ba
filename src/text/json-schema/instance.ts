import type { JsonSchema } from 'json-schema-faker';
import { withBacktracking } from '../../platform/linear-regex.js';
import { believable, type Said } from '../believable.js';
import { GENERATOR_FORMATS, type Generate, loadGenerator } from './generator.js';
import {
  ATTEMPTS,
  type Budget,
  backtrackingBudget,
  MAX_DEPTH,
  MAX_REF_HOPS,
  REQUEST_BACKTRACKING_MS,
  REQUEST_GENERATION_BUDGET,
} from './limits.js';
import { fillNames } from './names.js';
import { NO_VALUE, readyInfo, type SchemaInfo, VALUE_KEPT_SIZE, values } from './store.js';

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
