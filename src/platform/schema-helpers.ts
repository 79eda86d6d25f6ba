import { type Static, type TSchema, Type } from '@sinclair/typebox';

/**
 * A schema that also accepts null: OpenAPI `nullable` (which Ajv understands) on a typed schema,
 * a union with null on a union (Ajv refuses `nullable` without `type`). An `enum` (or a
 * `const`) lists null too: `nullable` widens the type only, and Ajv still checks the values.
 */
export const Nullable = <T extends TSchema>(schema: T) =>
  'type' in schema
    ? Type.Unsafe<Static<T> | null>(withNull(schema))
    : Type.Unsafe<Static<T> | null>({
        anyOf: [schema, { type: 'null' }],
        ...(schema.description ? { description: `${schema.description}, or null` } : {}),
      });

function withNull(schema: TSchema): TSchema {
  if (Array.isArray(schema.enum))
    return { ...schema, nullable: true, enum: [...schema.enum, null] };
  if ('const' in schema) {
    const { const: value, ...rest } = schema;
    return { ...rest, nullable: true, enum: [value, null] } as TSchema;
  }
  return { ...schema, nullable: true };
}

/**
 * A union of string literals: the wire's enums. Emitted as JSON Schema `enum` (one check for
 * Ajv, one list in the OpenAPI document) and typed as the literal union.
 */
export const Literals = <const V extends readonly string[]>(values: V) =>
  Type.Unsafe<V[number]>({ type: 'string', enum: [...values] });

/**
 * A union told apart by one property (the wire's `type`): `oneOf` with an OpenAPI
 * `discriminator`, so Ajv checks only the branch the tag names and reports that branch's own
 * error (`source.media_type must be one of ...`) instead of one error per branch. Every variant
 * must have the tag as a required `Type.Literal`. For request schemas only.
 */
export const Tagged = <const T extends TSchema[]>(tag: string, variants: T, description?: string) =>
  Type.Unsafe<Static<T[number]>>({
    // Ajv's discriminator lets a value that is no object through: the type check stops it.
    type: 'object',
    oneOf: variants,
    discriminator: { propertyName: tag },
    ...(description ? { description } : {}),
  });

/**
 * A rule that moved into a schema keyword but that upstream words its own way (`Refusal`), so
 * that the schema is the one source of the rule for the validator and the OpenAPI document:
 * - `problems`: the problem as upstream says it, by the keyword that refused (`default`: any
 *   keyword but `type` and `required`; `required/<field>`: that field missing);
 * - `tag`: the field is named as upstream names it, with the variant (`value`, or the object's
 *   own `type` such as `web_search_20250305`) before its last `depth` segments.
 * Read by src/platform/validation.ts; not in the OpenAPI document (src/platform/openapi.ts
 * takes it out).
 */
export const REFUSAL = 'x-refusal';
export interface RefusalNote {
  problems: Record<string, string>;
  /** `of`: the pattern of the variants (by their `type`) the refusal is for. */
  tag?: { depth: number; value?: string; of?: string };
  /** `problems` are whole messages (`Worded`), with these codes by keyword. */
  codes?: Record<string, string>;
}

/**
 * `schema`, whose refusals by these keywords are these whole messages (the group's renderer puts
 * the field's name for `{param}`; `{length}` is the refused value's length), with these codes:
 * upstream's own sentence for a rule a keyword states.
 */
export const Worded = <T extends TSchema>(
  schema: T,
  messages: Record<string, string>,
  codes: Record<string, string>,
): T => ({ ...schema, [REFUSAL]: { problems: messages, codes } satisfies RefusalNote });

/** `schema`, whose refusals are worded as `problems` says (a string: `default`). */
export const Refusal = <T extends TSchema>(
  schema: T,
  problems: string | Record<string, string>,
  tag?: RefusalNote['tag'],
): T => ({
  ...schema,
  [REFUSAL]: {
    problems: typeof problems === 'string' ? { default: problems } : problems,
    ...(tag ? { tag } : {}),
  },
});
