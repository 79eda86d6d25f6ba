/**
 * An OpenAPI 3.0 Schema Object as JSON Schema (draft-07), converted as Stoplight Prism converts
 * it (@stoplight/http-spec's schema transformer, which openapi-schema-to-json-schema follows
 * too): `nullable: true` on a typed schema makes the type `[type, "null"]` and appends null to
 * an `enum`; `example` becomes `examples`. References into `#/components/` point at `base`, where
 * each component is added as a schema of its own (`componentId`).
 */

type Json = Record<string, unknown>;
const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** Where a `#/components/...` reference points once each component is a schema of its own. */
export const COMPONENTS_BASE = 'https://emulator.invalid';

export const componentId = (name: string) => `${COMPONENTS_BASE}/components/schemas/${name}`;

export function toJsonSchema(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toJsonSchema);
  if (!isObject(value)) return value;
  const out: Json = {};
  for (const [key, child] of Object.entries(value)) {
    if (key === '$ref' && typeof child === 'string' && child.startsWith('#/components/')) {
      out[key] = `${COMPONENTS_BASE}${child.slice(1)}`;
    } else if (key === 'example') {
      out.examples = [child];
    } else if (key === 'properties' && isObject(child)) {
      out[key] = Object.fromEntries(Object.entries(child).map(([k, v]) => [k, toJsonSchema(v)]));
    } else {
      out[key] = toJsonSchema(child);
    }
  }
  if (out.nullable === true && typeof out.type === 'string') {
    out.type = [out.type, 'null'];
    if (Array.isArray(out.enum)) out.enum = [...out.enum, null];
  }
  delete out.nullable;
  return out;
}
