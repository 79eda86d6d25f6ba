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
/**
 * A smaller subschema the schema holds several times (`cache_control` in every content block)
 * gets one too, shared: inlined, each copy would cost its code again (a union of 16 content
 * blocks grew one function past V8's limit).
 */
export const SHARED_FROM_CHARS = 64;

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

/** The subschemas of a node that may move to `$defs` (not union branches). */
function movable(node: Node): Node[] {
  const children: unknown[] = [];
  for (const key of ONE) children.push(node[key]);
  for (const key of MAP) {
    const map = node[key];
    if (isNode(map)) children.push(...Object.values(map));
  }
  const items = node.items;
  if (Array.isArray(items)) children.push(...items);
  else children.push(items);
  if (Array.isArray(node.prefixItems)) children.push(...node.prefixItems);
  return children.filter(isNode);
}

/** The schema with its large subschemas in `$defs` (the schema itself when none is large). */
export function splitLargeSubschemas(schema: object): object {
  /** Definitions by the JSON of the subschema they hold: the same subschema, one function. */
  const names = new Map<string, string>();
  const defs: Record<string, object> = {};
  const texts = new Map<object, string>();
  const textOf = (node: object) => {
    let text = texts.get(node);
    if (text === undefined) {
      text = JSON.stringify(node);
      texts.set(node, text);
    }
    return text;
  };
  const sizeOf = (node: object) => textOf(node).length;
  /** How often each subschema's JSON occurs where a subschema may move. */
  const seen = new Map<string, number>();
  /** Counts what a node holds; a union branch stays, but what it holds may move. */
  const countWithin = (node: Node): void => {
    for (const child of movable(node)) {
      const text = textOf(child);
      seen.set(text, (seen.get(text) ?? 0) + 1);
      countWithin(child);
    }
    for (const key of BRANCHES) {
      const branches = node[key];
      if (Array.isArray(branches))
        for (const branch of branches) if (isNode(branch)) countWithin(branch);
    }
  };

  /** A subschema where it may move: a `$ref` to its definition, when it is large or shared. */
  const place = (node: unknown): unknown => {
    if (!isNode(node)) return node;
    const size = sizeOf(node);
    const shared = size >= SHARED_FROM_CHARS && (seen.get(textOf(node)) ?? 0) > 1;
    if (size < SPLIT_FROM_CHARS && !shared) return node;
    let name = names.get(textOf(node));
    if (name === undefined) {
      name = `split${names.size}`;
      names.set(textOf(node), name);
      defs[name] = rebuild(node);
    }
    return { $ref: `#/$defs/${name}` };
  };

  /** A copy of the node whose large subschemas are placed (the same node when none moved). */
  const rebuild = (node: Node): Node => {
    if (sizeOf(node) < SHARED_FROM_CHARS) return node;
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

  countWithin(schema as Node);
  const root = rebuild(schema as Node);
  if (names.size === 0) return schema;
  return { ...root, $defs: { ...(isNode(root.$defs) ? root.$defs : {}), ...defs } };
}
