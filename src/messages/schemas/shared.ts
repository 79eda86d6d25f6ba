import { type TSchema, Type } from '@sinclair/typebox';
import { Literals, Nullable } from '../../platform/schema-helpers.js';

/** The most tools one messages request may offer (docs/agents.md "What is refused, as upstream refuses it"). */
export const MAX_MESSAGES_TOOLS = 1000;

const closed = { additionalProperties: false } as const;

export const obj = <P extends Record<string, TSchema>>(properties: P) =>
  Type.Object(properties, closed);

export const CacheControlSchema = obj({
  type: Type.Literal('ephemeral'),
  ttl: Type.Optional(Literals(['5m', '1h'])),
});

export const Cache = Type.Optional(Nullable(CacheControlSchema));
