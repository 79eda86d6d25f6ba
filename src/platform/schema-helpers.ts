import { type Static, type TSchema, Type } from '@sinclair/typebox';

/** A schema that also accepts null (OpenAPI `nullable`, which Ajv understands). */
export const Nullable = <T extends TSchema>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, nullable: true });

/**
 * A union of string literals: the wire's enums. Emitted as JSON Schema `enum` (one check for
 * Ajv, one list in the OpenAPI document) and typed as the literal union.
 */
export const Literals = <const V extends readonly string[]>(values: V) =>
  Type.Unsafe<V[number]>({ type: 'string', enum: [...values] });
