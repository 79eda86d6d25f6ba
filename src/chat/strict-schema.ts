/**
 * What strict mode (`strict: true` on a `json_schema` response format or a function tool)
 * refuses, in upstream's words: the root must be an object; every object must close itself with
 * `additionalProperties: false` and list every property in `required`; arrays need `items`;
 * some keywords are not supported at all. Hand-written: no package checks OpenAI's subset; the
 * keyword list is the one the official SDK refuses client-side.
 * @see https://platform.openai.com/docs/guides/structured-outputs#supported-schemas
 * @see https://github.com/openai/openai-node/blob/master/src/lib/transform.ts
 */

const UNSUPPORTED_KEYWORDS = new Set([
  '$anchor',
  '$dynamicAnchor',
  '$dynamicRef',
  '$recursiveAnchor',
  '$recursiveRef',
  'additionalItems',
  'allOf',
  'contains',
  'contentEncoding',
  'contentMediaType',
  'contentSchema',
  'dependencies',
  'dependentRequired',
  'dependentSchemas',
  'else',
  'if',
  'maxContains',
  'maxProperties',
  'minContains',
  'minProperties',
  'not',
  'patternProperties',
  'prefixItems',
  'propertyNames',
  'then',
  'unevaluatedItems',
  'unevaluatedProperties',
  'uniqueItems',
]);

type Node = Record<string, unknown>;

const isNode = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** A context path as upstream prints it: a Python tuple, `()`, `('items',)`, `('a', 'b')`. */
const tuple = (path: readonly string[]) =>
  path.length === 1 ? `('${path[0]}',)` : `(${path.map((p) => `'${p}'`).join(', ')})`;

const typeOf = (node: Node): string[] =>
  typeof node.type === 'string'
    ? [node.type]
    : Array.isArray(node.type)
      ? (node.type as string[])
      : [];

function walk(node: unknown, path: string[]): string | undefined {
  if (!isNode(node)) return undefined;
  const at = () => `In context=${tuple(path)}`;
  for (const key of Object.keys(node)) {
    if (UNSUPPORTED_KEYWORDS.has(key)) return `${at()}, '${key}' is not permitted.`;
  }
  const types = typeOf(node);
  if (types.includes('object') || isNode(node.properties)) {
    if (node.additionalProperties !== false) {
      return `${at()}, 'additionalProperties' is required to be supplied and to be false.`;
    }
    const properties = isNode(node.properties) ? node.properties : {};
    const required = new Set(Array.isArray(node.required) ? (node.required as unknown[]) : []);
    const missing = Object.keys(properties).find((key) => !required.has(key));
    if (missing !== undefined) {
      return `${at()}, 'required' is required to be supplied and to be an array including every key in properties. Missing '${missing}'.`;
    }
    for (const [key, value] of Object.entries(properties)) {
      const problem = walk(value, [...path, 'properties', key]);
      if (problem) return problem;
    }
  }
  if (types.includes('array')) {
    if (!('items' in node)) return `${at()}, array schema missing items.`;
    if (Array.isArray(node.items)) return `${at()}, 'items' must be a schema, not a list.`;
    const problem = walk(node.items, [...path, 'items']);
    if (problem) return problem;
  }
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = node[key];
    if (!Array.isArray(branches)) continue;
    for (let i = 0; i < branches.length; i++) {
      const problem = walk(branches[i], [...path, key, String(i)]);
      if (problem) return problem;
    }
  }
  for (const key of ['$defs', 'definitions'] as const) {
    const defs = node[key];
    if (!isNode(defs)) continue;
    for (const [name, value] of Object.entries(defs)) {
      const problem = walk(value, [...path, key, name]);
      if (problem) return problem;
    }
  }
  return undefined;
}

/** Why strict mode refuses a schema (after "Invalid schema for ...: "), or undefined. */
export function strictSchemaProblem(schema: object): string | undefined {
  const root = schema as Node;
  const types = typeOf(root);
  if (types.length !== 1 || types[0] !== 'object' || 'anyOf' in root) {
    const got = types.length === 0 ? ('anyOf' in root ? 'anyOf' : 'None') : types.join(', ');
    return `schema must be a JSON Schema of 'type: "object"', got 'type: "${got}"'.`;
  }
  return walk(root, []);
}
