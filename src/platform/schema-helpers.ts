import { type Static, type TSchema, Type } from '@sinclair/typebox';

/**
 * A schema that also accepts null: OpenAPI `nullable` (which Ajv understands) on a typed schema,
 * a union with null on a union (Ajv refuses `nullable` without `type`).
 */
export const Nullable = <T extends TSchema>(schema: T) =>
  'type' in schema
    ? Type.Unsafe<Static<T> | null>({ ...schema, nullable: true })
    : Type.Unsafe<Static<T> | null>({
        anyOf: [schema, { type: 'null' }],
        ...(schema.description ? { description: `${schema.description}, or null` } : {}),
      });

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
