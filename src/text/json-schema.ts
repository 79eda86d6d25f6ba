import { Ajv, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { JsonSchema } from 'json-schema-faker';

/**
 * JSON values that a JSON Schema accepts, for tool arguments and structured output: made by
 * json-schema-faker from a seed (the same schema and seed give the same value) and proven with
 * Ajv before they are used. The generator loads on first use, so start-up does not pay for it.
 */

const ajv = new Ajv({ strict: false, allErrors: false, discriminator: false });
addFormats.default(ajv);

/** Compiled validators by schema text; schemas repeat across an agent loop's requests. */
const compiled = new Map<string, ValidateFunction>();
const COMPILED_LIMIT = 512;
const ATTEMPTS = 8;

/** The schema as Ajv's default dialect reads it: a top-level `$schema` names a dialect only. */
function dialectFree(schema: object): object {
  if (!('$schema' in schema)) return schema;
  const { $schema: _, ...rest } = schema as Record<string, unknown>;
  return rest;
}

/** The validator of a schema; throws Ajv's compile error when the schema is not valid. */
export function validatorOf(schema: object): ValidateFunction {
  const key = JSON.stringify(schema);
  let validate = compiled.get(key);
  if (!validate) {
    validate = ajv.compile(dialectFree(schema));
    if (compiled.size >= COMPILED_LIMIT) compiled.clear();
    compiled.set(key, validate);
  }
  return validate;
}

/** Why a schema cannot be used (Ajv's compile error), or undefined when it can. */
export function schemaProblem(schema: object): string | undefined {
  try {
    validatorOf(schema);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

type Generate = (schema: JsonSchema, options: { seed: number }) => unknown;
let generator: Promise<Generate> | undefined;

const loadGenerator = () => {
  generator ??= import('json-schema-faker').then(({ generateSync }) => generateSync as Generate);
  return generator;
};

export class UnsatisfiableSchemaError extends Error {
  override name = 'UnsatisfiableSchemaError';
}

/**
 * A value valid against `schema`, the same for the same schema and seed. Tries a few seeds
 * (the generator cannot satisfy every combination of keywords at the first try); throws
 * UnsatisfiableSchemaError when none gives a valid value.
 */
export async function schemaInstance(schema: object, seed: number): Promise<unknown> {
  const validate = validatorOf(schema);
  const generate = await loadGenerator();
  const source = dialectFree(schema) as JsonSchema;
  for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
    let value: unknown;
    try {
      value = generate(source, { seed: (seed + attempt * 0x9e3779b1) >>> 0 });
    } catch {
      continue;
    }
    if (validate(value)) return value;
  }
  throw new UnsatisfiableSchemaError('no value satisfies this schema');
}
