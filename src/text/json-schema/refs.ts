import { DATA_KEYWORDS, isNode, type Node, pointerKey } from '../schema-nodes.js';
import { EXPANDED_NODES } from './limits.js';

/**
 * The keys a local `$ref` (`#` or `#/...`, a JSON pointer as a URI fragment) names, as Ajv
 * reads them (each percent-decoded, then `~1` and `~0` undone), or undefined.
 */
function pointerKeys(ref: string): string[] | undefined {
  if (ref === '#') return [];
  if (!ref.startsWith('#/')) return undefined;
  try {
    return ref
      .slice(2)
      .split('/')
      .map((part) => decodeURIComponent(part).replace(/~1/g, '/').replace(/~0/g, '~'));
  } catch {
    return undefined;
  }
}

/** The node a local `$ref` points at through the schema's own keys (`#/__proto__`: none). */
export function resolve(root: Node, ref: string): unknown {
  const keys = pointerKeys(ref);
  if (keys === undefined) return undefined;
  let node: unknown = root;
  for (const key of keys) {
    if (!(isNode(node) || Array.isArray(node)) || !Object.hasOwn(node, key)) return undefined;
    node = (node as Node)[key];
  }
  return node;
}

/** Each schema's anchor pointers, found once (its copies are prepared several times). */
const anchorsFound = new WeakMap<Node, ReadonlyMap<string, string>>();

/**
 * The JSON pointer (`#/$defs/a`) of each anchor of a schema (`#name`, an `$anchor`'s): the
 * generator follows pointers only.
 */
export function anchorPointers(root: Node): ReadonlyMap<string, string> {
  const known = anchorsFound.get(root);
  if (known) return known;
  const pointers = new Map<string, string>();
  const stack: Array<[unknown, string]> = [[root, '#']];
  while (stack.length > 0) {
    const [node, at] = stack.pop() as [unknown, string];
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) stack.push([node[i], `${at}/${i}`]);
    } else if (isNode(node)) {
      if (typeof node.$anchor === 'string') pointers.set(`#${node.$anchor}`, at);
      for (const key of Object.keys(node)) {
        if (!DATA_KEYWORDS.has(key)) stack.push([node[key], `${at}/${pointerKey(key)}`]);
      }
    }
  }
  anchorsFound.set(root, pointers);
  return pointers;
}

/** A local `$ref` as the generator reads it: without percent-encoding, which it does not undo. */
export function generatorRef(ref: string): string {
  const keys = ref.includes('%') ? pointerKeys(ref) : undefined;
  if (keys === undefined) return ref;
  return `#/${keys.map(pointerKey).join('/')}`;
}

/**
 * A local `$ref` that points at nothing in the schema, or undefined. Ajv follows a pointer
 * through inherited keys too (`#/__proto__` is Object.prototype to it, which every value meets);
 * upstream reads JSON, which has none. A schema with an `$id` inside is left to Ajv: its
 * pointers start at that `$id`'s node.
 */
function unresolvedRef(root: Node): string | undefined {
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) stack.push(...node);
    else if (isNode(node)) {
      const ref = node.$ref;
      if (typeof ref === 'string' && ref.startsWith('#/') && resolve(root, ref) === undefined) {
        return ref;
      }
      for (const key of Object.keys(node)) if (!DATA_KEYWORDS.has(key)) stack.push(node[key]);
    }
  }
  return undefined;
}

/**
 * The nodes a schema has once each `$ref` (a pointer, or an anchor: `$anchor`, draft-07's
 * `$id: "#a"`) is replaced by what it points at, each node counted once however often it is
 * reached within one path (a recursive schema is bounded by its value, not here), up to
 * `limit + 1`; undefined when a `$ref` lies in the scope of an `$id` inside the schema, which
 * resolves it against another base.
 */
function expandedNodes(root: Node, limit: number): number | undefined {
  const anchors = new Map<string, unknown>();
  let innerId = false;
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) stack.push(...node);
    else if (isNode(node)) {
      if (typeof node.$anchor === 'string') anchors.set(`#${node.$anchor}`, node);
      if (typeof node.$id === 'string') {
        if (node.$id.startsWith('#')) anchors.set(node.$id, node);
        else if (node !== root) innerId = true;
      }
      for (const key of Object.keys(node)) if (!DATA_KEYWORDS.has(key)) stack.push(node[key]);
    }
  }
  if (innerId) return undefined;
  const sizes = new Map<object, number>();
  const reaching = new Set<object>();
  const size = (value: unknown): number => {
    if (typeof value !== 'object' || value === null) return 1;
    const known = sizes.get(value);
    if (known !== undefined) return known;
    if (reaching.has(value)) return 1;
    reaching.add(value);
    let total = 1;
    if (Array.isArray(value)) {
      for (const item of value) {
        total += size(item);
        if (total > limit) break;
      }
    } else {
      const node = value as Node;
      for (const key of Object.keys(node)) {
        // A definition counts where a $ref reaches it: Ajv checks no value against $defs.
        if (key === '$defs' || key === 'definitions') continue;
        total += DATA_KEYWORDS.has(key) ? 1 : size(node[key]);
        if (total > limit) break;
      }
      if (typeof node.$ref === 'string' && total <= limit) {
        const target = node.$ref.startsWith('#/')
          ? resolve(root, node.$ref)
          : anchors.get(node.$ref);
        total += node.$ref === '#' ? size(root) : target === undefined ? 0 : size(target);
      }
    }
    reaching.delete(value);
    total = Math.min(total, limit + 1);
    sizes.set(value, total);
    return total;
  };
  return size(root);
}

/**
 * What is wrong with a schema's `$ref`s, before Ajv reads them: one that points at nothing
 * (JSON Schema says so: `invalid`), or ones the emulator does not check a value through
 * (`unusable`: an inner `$id`'s, or too many paths).
 */
export function refProblem(
  root: Node,
  hasId: boolean,
): { invalid: string } | { unusable: string } | undefined {
  const unresolved = hasId ? undefined : unresolvedRef(root);
  if (unresolved !== undefined)
    return { invalid: `can't resolve reference ${unresolved} from id #` };
  const expanded = expandedNodes(root, EXPANDED_NODES);
  if (expanded === undefined) {
    return {
      unusable: 'it has a $ref within an $id inside the schema, which the emulator does not follow',
    };
  }
  if (expanded > EXPANDED_NODES) {
    return {
      unusable: `its $refs expand it to more than ${EXPANDED_NODES} nodes, more than the emulator checks a value against`,
    };
  }
  return undefined;
}
