import { type Static, type TLiteral, type TSchema, type TUnion, Type } from '@sinclair/typebox';

/** A schema that also accepts null (OpenAPI `nullable`, which Ajv understands). */
export const Nullable = <T extends TSchema>(schema: T) =>
  Type.Unsafe<Static<T> | null>({ ...schema, nullable: true });

/** A union of string literals: the wire's enums. */
export const Literals = <const V extends readonly string[]>(values: V) =>
  Type.Union(values.map((v) => Type.Literal(v))) as unknown as TUnion<TLiteral<V[number]>[]>;
