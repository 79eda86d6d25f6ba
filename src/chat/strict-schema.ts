import { isNode, type Node, typesOf } from '../text/schema-nodes.js';

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

/** A context path as upstream prints it: a Python tuple, `()`, `('items',)`, `('a', 'b')`. */
const tuple = (path: readonly string[]) =>
  path.length === 1 ? `('${path[0]}',)` : `(${path.map((p) => `'${p}'`).join(', ')})`;

function walk(node: unknown, path: string[]): string | undefined {
  if (!isNode(node)) return undefined;
  const at = () => `In context=${tuple(path)}`;
  for (const key of Object.keys(node)) {
    if (UNSUPPORTED_KEYWORDS.has(key)) return `${at()}, '${key}' is not permitted.`;
  }
  const types = typesOf(node);
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

/**
 * How large a strict schema may be: objects nested 10 levels deep (the root is the first), 1000
 * enum values in all, 120 000 characters of property names,
 * definition names, enum values and const values in all, and 15 000 characters of the values
 * of one string enum of more than 250 values. Upstream words the nesting refusal `6 levels of
 * nesting exceeds limit of 5.` (when the limit was 5); the others are worded alike. (Upstream's
 * 5000 object properties in all are never reached: the emulator checks no schema of more than
 * SCHEMA_NODES JSON nodes.)
 * @see https://platform.openai.com/docs/guides/structured-outputs#objects-have-limitations-on-nesting-depth-and-size
 * @see https://github.com/tidyverse/ellmer/issues/671
 */
export const STRICT_LIMITS = {
  nesting: 10,
  enumValues: 1000,
  characters: 120_000,
  largeEnumValues: 250,
  largeEnumCharacters: 15_000,
} as const;

interface Size {
  nesting: number;
  enumValues: number;
  characters: number;
  /** The characters of a string enum of more than `largeEnumValues` values, the longest. */
  largeEnum: number;
}

const valueChars = (value: unknown) =>
  typeof value === 'string' ? value.length : JSON.stringify(value ?? null).length;

/** Measures a schema's sizes (see STRICT_LIMITS); `objects` is its objects' nesting so far. */
function measure(node: unknown, objects: number, size: Size, depth = 0): void {
  // (walk has checked the shape; the bound only keeps a hostile schema from the stack)
  if (!isNode(node) || depth > 256) return;
  const isObject = typesOf(node).includes('object') || isNode(node.properties);
  const level = isObject ? objects + 1 : objects;
  size.nesting = Math.max(size.nesting, level);
  if (Array.isArray(node.enum)) {
    size.enumValues += node.enum.length;
    let chars = 0;
    for (const value of node.enum) chars += valueChars(value);
    size.characters += chars;
    if (
      node.enum.length > STRICT_LIMITS.largeEnumValues &&
      node.enum.every((v) => typeof v === 'string')
    ) {
      size.largeEnum = Math.max(size.largeEnum, chars);
    }
  }
  if ('const' in node) size.characters += valueChars(node.const);
  if (isNode(node.properties)) {
    for (const [name, value] of Object.entries(node.properties)) {
      size.characters += name.length;
      measure(value, level, size, depth + 1);
    }
  }
  for (const key of ['$defs', 'definitions'] as const) {
    const defs = node[key];
    if (!isNode(defs)) continue;
    for (const [name, value] of Object.entries(defs)) {
      size.characters += name.length;
      measure(value, level, size, depth + 1);
    }
  }
  measure(node.items, level, size, depth + 1);
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = node[key];
    if (Array.isArray(branches))
      for (const branch of branches) measure(branch, objects, size, depth + 1);
  }
}

/** Why a strict schema is too large (see STRICT_LIMITS), or undefined. */
function sizeProblem(root: Node): string | undefined {
  const size: Size = { nesting: 0, enumValues: 0, characters: 0, largeEnum: 0 };
  measure(root, 0, size);
  const L = STRICT_LIMITS;
  if (size.nesting > L.nesting) {
    return `${size.nesting} levels of nesting exceeds limit of ${L.nesting}.`;
  }
  if (size.enumValues > L.enumValues) {
    return `${size.enumValues} total enum values exceeds limit of ${L.enumValues}.`;
  }
  if (size.characters > L.characters) {
    return `${size.characters} total characters of property names, definition names, enum values and const values exceeds limit of ${L.characters}.`;
  }
  if (size.largeEnum > L.largeEnumCharacters) {
    return `${size.largeEnum} characters of the values of an enum of more than ${L.largeEnumValues} string values exceeds limit of ${L.largeEnumCharacters}.`;
  }
  return undefined;
}

/** Why strict mode refuses a schema (after "Invalid schema for ...: "), or undefined. */
export function strictSchemaProblem(schema: object): string | undefined {
  const root = schema as Node;
  const types = typesOf(root);
  if (types.length !== 1 || types[0] !== 'object' || 'anyOf' in root) {
    const got = types.length === 0 ? ('anyOf' in root ? 'anyOf' : 'None') : types.join(', ');
    return `schema must be a JSON Schema of 'type: "object"', got 'type: "${got}"'.`;
  }
  return walk(root, []) ?? sizeProblem(root);
}
