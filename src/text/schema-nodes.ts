/** What the readers of client JSON Schemas share: a schema node, its types, and pointer keys. */

/** A JSON Schema node (an object; a boolean schema or a list is not one). */
export type Node = Record<string, unknown>;

export const isNode = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The types a node names (`"string"`, or each of `["string", "null"]`). */
export const typesOf = (node: Node): string[] =>
  typeof node.type === 'string'
    ? [node.type]
    : Array.isArray(node.type)
      ? node.type.filter((t): t is string => typeof t === 'string')
      : [];

/** Keywords whose value is data, not a schema: copied, never walked. */
export const DATA_KEYWORDS: ReadonlySet<string> = new Set([
  'enum',
  'const',
  'default',
  'examples',
  'required',
  'type',
]);

/** A key as a JSON pointer spells it (`~` as `~0`, `/` as `~1`). */
export const pointerKey = (key: string): string => key.replace(/~/g, '~0').replace(/\//g, '~1');
