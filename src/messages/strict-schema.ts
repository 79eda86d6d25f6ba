/**
 * What structured outputs refuse in a schema (an `output_config.format` schema, or a tool's
 * `input_schema` with `strict: true`), in upstream's words: numerical constraints, string
 * lengths, array bounds but `minItems` 0 or 1, an object not closed by `additionalProperties:
 * false`, a `format` outside the supported list, recursive definitions; and, over the request,
 * more than 20 strict tools, 24 optional parameters or 16 union-typed parameters in all.
 * Hand-written: no package checks this subset.
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 */

import { DATA_KEYWORDS, isNode, type Node, pointerKey, typesOf } from '../text/schema-nodes.js';

/** Upstream's limits over all the strict schemas of one request. */
export const STRICT_LIMITS = { tools: 20, optional: 24, unions: 16 } as const;

/** The string formats structured outputs take. */
export const STRICT_FORMATS: ReadonlySet<string> = new Set([
  'date-time',
  'time',
  'date',
  'duration',
  'email',
  'hostname',
  'uri',
  'ipv4',
  'ipv6',
  'uuid',
]);

/** Keywords a type takes no part of, by type. */
const UNSUPPORTED: Record<string, readonly string[]> = {
  integer: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  number: ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum', 'multipleOf'],
  string: ['minLength', 'maxLength'],
  array: ['maxItems', 'uniqueItems'],
};

/** The problem with one node's own keywords, or undefined. */
function nodeProblem(node: Node): string | undefined {
  const types = typesOf(node);
  if (isNode(node.properties) && !types.includes('object')) types.push('object');
  for (const type of types) {
    if (type === 'object') {
      const additional = node.additionalProperties;
      if (additional === undefined) {
        return "For 'object' type, 'additionalProperties' must be explicitly set to false";
      }
      if (additional !== false) {
        const shown = additional === true ? 'true' : 'object';
        return `For 'object' type, 'additionalProperties: ${shown}' is not supported. Please set 'additionalProperties' to false`;
      }
    }
    if (type === 'array' && 'minItems' in node && node.minItems !== 0 && node.minItems !== 1) {
      return `For 'array' type, 'minItems' values other than 0 or 1 are not supported (got: [${JSON.stringify(node.minItems)}])`;
    }
    // (named in the schema's order, as upstream names them)
    const unsupported = UNSUPPORTED[type] ?? [];
    const found = Object.keys(node).filter((key) => unsupported.includes(key));
    if (found.length === 1) return `For '${type}' type, property '${found[0]}' is not supported`;
    if (found.length > 1) {
      return `For '${type}' type, properties ${found.join(', ')} are not supported`;
    }
    if (type === 'string' && typeof node.format === 'string' && !STRICT_FORMATS.has(node.format)) {
      return `For 'string' type, format '${node.format}' is not supported`;
    }
  }
  return undefined;
}

/** The definitions of a schema by the `$ref` that names them (`#/$defs/a`), and their names. */
function definitions(root: Node): Map<string, { name: string; node: unknown }> {
  const defs = new Map<string, { name: string; node: unknown }>();
  for (const key of ['$defs', 'definitions'] as const) {
    const group = root[key];
    if (!isNode(group)) continue;
    for (const [name, node] of Object.entries(group)) {
      defs.set(`#/${key}/${pointerKey(name)}`, { name, node });
    }
  }
  return defs;
}

/** The `$ref`s a schema holds, outside its definitions when it is the root. */
function refsIn(node: unknown, root: boolean, into: string[] = []): string[] {
  if (Array.isArray(node)) {
    for (const item of node) refsIn(item, false, into);
  } else if (isNode(node)) {
    if (typeof node.$ref === 'string') into.push(node.$ref);
    for (const key of Object.keys(node)) {
      if (DATA_KEYWORDS.has(key) || (root && (key === '$defs' || key === 'definitions'))) continue;
      refsIn(node[key], false, into);
    }
  }
  return into;
}

/**
 * A cycle of definitions (`a -> b -> a`; the root is `#`), or undefined: structured outputs
 * take no recursive schema.
 */
function cycleOf(root: Node): string[] | undefined {
  const defs = definitions(root);
  const edges = new Map<string, string[]>();
  edges.set('#', refsIn(root, true));
  for (const [ref, { node }] of defs) edges.set(ref, refsIn(node, false));
  const nameOf = (ref: string) => (ref === '#' ? '#' : (defs.get(ref)?.name ?? ref));
  // A depth-first search with a stack of its own: a chain of thousands of definitions would
  // overflow the call stack.
  const state = new Map<string, 'open' | 'done'>([['#', 'open']]);
  const path: string[] = ['#'];
  const next: number[] = [0];
  while (path.length > 0) {
    const ref = path[path.length - 1] as string;
    const targets = edges.get(ref) ?? [];
    const at = next[next.length - 1] as number;
    if (at === targets.length) {
      state.set(ref, 'done');
      path.pop();
      next.pop();
      continue;
    }
    next[next.length - 1] = at + 1;
    const target = targets[at] as string;
    if (!edges.has(target) || state.get(target) === 'done') continue;
    if (state.get(target) === 'open') {
      return [...path.slice(path.indexOf(target)), target].map(nameOf);
    }
    state.set(target, 'open');
    path.push(target);
    next.push(0);
  }
  return undefined;
}

/** Why structured outputs refuse a schema (its keywords, its recursion), or undefined. */
export function strictProblem(schema: object): string | undefined {
  const stack: unknown[] = [schema];
  let problem: string | undefined;
  while (stack.length > 0 && problem === undefined) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      for (let i = node.length - 1; i >= 0; i--) stack.push(node[i]);
    } else if (isNode(node)) {
      problem = nodeProblem(node);
      const keys = Object.keys(node);
      for (let i = keys.length - 1; i >= 0; i--) {
        const key = keys[i] as string;
        if (DATA_KEYWORDS.has(key)) continue;
        if (key === 'properties' || key === '$defs' || key === 'definitions') {
          const group = node[key];
          if (isNode(group)) stack.push(...Object.values(group).reverse());
        } else if (key !== 'additionalProperties') stack.push(node[key]);
      }
    }
  }
  if (problem !== undefined) return problem;
  const cycle = cycleOf(schema as Node);
  return cycle
    ? `Circular reference detected in schema definitions: ${cycle.join(' -> ')}. Self-referencing or mutually-referencing definitions are not supported.`
    : undefined;
}

/** A schema's optional parameters (properties not `required`) and union-typed ones. */
export function strictCounts(schema: object): { optional: number; unions: number } {
  let optional = 0;
  let unions = 0;
  const stack: unknown[] = [schema];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) stack.push(...node);
    else if (isNode(node)) {
      if (isNode(node.properties)) {
        const required = new Set(Array.isArray(node.required) ? node.required : []);
        for (const [name, property] of Object.entries(node.properties)) {
          if (!required.has(name)) optional++;
          if (isNode(property) && (Array.isArray(property.type) || Array.isArray(property.anyOf))) {
            unions++;
          }
        }
      }
      for (const key of Object.keys(node)) if (!DATA_KEYWORDS.has(key)) stack.push(node[key]);
    }
  }
  return { optional, unions };
}

/**
 * Why the request's strict schemas together are refused (`tools`: how many strict tools), or
 * undefined.
 */
export function strictTotalsProblem(
  tools: number,
  counts: ReadonlyArray<{ optional: number; unions: number }>,
): string | undefined {
  if (tools > STRICT_LIMITS.tools) {
    return `Too many strict tools (${tools}). The maximum number of strict tools supported is ${STRICT_LIMITS.tools}.`;
  }
  let optional = 0;
  let unions = 0;
  for (const count of counts) {
    optional += count.optional;
    unions += count.unions;
  }
  if (optional > STRICT_LIMITS.optional) {
    return `Schemas contains too many optional parameters (${optional}), which would make grammar compilation inefficient. Reduce the number of optional parameters in your tool schemas (limit: ${STRICT_LIMITS.optional}).`;
  }
  if (unions > STRICT_LIMITS.unions) {
    return `Schemas contains too many parameters with union types (${unions} parameters with type arrays or anyOf). This causes exponential compilation cost. Reduce the number of nullable or union-typed parameters (limit: ${STRICT_LIMITS.unions} parameters with unions).`;
  }
  return undefined;
}
