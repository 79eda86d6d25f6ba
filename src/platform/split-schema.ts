/**
 * Ajv compiles a schema into one function, every subschema inlined. For the chat and messages
 * request schemas that function is some 500 KB of code, far past what V8's optimizing compiler
 * takes (`--max-optimized-bytecode-size`, 60 KiB of bytecode): it ran unoptimized on every
 * request, about ten times slower than its optimized self. So before compiling, large
 * subschemas are moved to `$defs` and referred to by `$ref`, and Ajv (with `inlineRefs: false`)
 * compiles each into a function of its own, small enough to be optimized.
 *
 * Union branches (`anyOf`, `oneOf`, `allOf` items) stay where they are, so an error's
 * `parentSchema` still lists them (the error wording reads the branches' constants and
 * discriminator tags); what is inside them may move. No schema of this project uses `$ref` of its
 * own.
 */

/** Subschemas whose JSON is at least this long get a function of their own. */
export const SPLIT_FROM_CHARS = 512;

/** Keywords whose value is one subschema. */
const ONE = [
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
] as const;
/** Keywords whose value maps names to subschemas. */
const MAP = ['properties', 'patternProperties', 'dependentSchemas'] as const;
/** Keywords whose value lists union branches. */
const BRANCHES = ['anyOf', 'oneOf', 'allOf'] as const;

type Node = Record<string | symbol, unknown>;

const isNode = (value: unknown): value is Node =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/** The schema with its large subschemas in `$defs` (the schema itself when none is large). */
export function splitLargeSubschemas(schema: object): object {
  const names = new Map<object, string>();
  const defs: Record<string, object> = {};
  const sizes = new Map<object, number>();
  const sizeOf = (node: object) => {
    let size = sizes.get(node);
    if (size === undefined) {
      size = JSON.stringify(node).length;
      sizes.set(node, size);
    }
    return size;
  };

  /** A subschema where it may move: a `$ref` to its definition, when it is large. */
  const place = (node: unknown): unknown => {
    if (!isNode(node)) return node;
    if (sizeOf(node) < SPLIT_FROM_CHARS) return node;
    let name = names.get(node);
    if (name === undefined) {
      name = `split${names.size}`;
      names.set(node, name);
      defs[name] = rebuild(node);
    }
    return { $ref: `#/$defs/${name}` };
  };

  /** A copy of the node whose large subschemas are placed (the same node when none moved). */
  const rebuild = (node: Node): Node => {
    if (sizeOf(node) < SPLIT_FROM_CHARS) return node;
    const out: Node = { ...node };
    for (const key of ONE) if (isNode(node[key])) out[key] = place(node[key]);
    for (const key of MAP) {
      const map = node[key];
      if (!isNode(map)) continue;
      const placed: Node = {};
      for (const name of Object.keys(map)) placed[name] = place(map[name]);
      out[key] = placed;
    }
    const items = node.items;
    if (Array.isArray(items)) out.items = items.map(place);
    else if (isNode(items)) out.items = place(items);
    if (Array.isArray(node.prefixItems)) out.prefixItems = node.prefixItems.map(place);
    for (const key of BRANCHES) {
      const branches = node[key];
      if (Array.isArray(branches)) {
        out[key] = branches.map((branch) => (isNode(branch) ? rebuild(branch) : branch));
      }
    }
    return out;
  };

  const root = rebuild(schema as Node);
  if (names.size === 0) return schema;
  return { ...root, $defs: { ...(isNode(root.$defs) ? root.$defs : {}), ...defs } };
}
