import type { JsonSchema } from 'json-schema-faker';
import { ajvLinearRegExp, mayBacktrack } from '../../platform/linear-regex.js';
import { DATA_KEYWORDS, isNode, type Node } from '../schema-nodes.js';
import { GENERATOR_FORMATS, type Generate } from './generator.js';
import { GENERATED_PROPERTIES, num } from './limits.js';

/**
 * Names an object's copy still needs (see wantNames), made with the generator when it is first
 * used (see fillNames): the generator never sees `patternProperties` or `propertyNames`.
 */
interface WantedNames {
  /** How many names to add. */
  count: number;
  /** The names' own schema (`propertyNames`), as the generator would have it. */
  names?: Node;
  /** `patternProperties`, pattern by pattern, each with its values' schema. */
  patterns: Array<readonly [string, unknown]>;
  /** The schema of a value under a name, or undefined when no value may have that name. */
  valueFor(name: string): unknown;
}

export const namesWanted = new WeakMap<Node, WantedNames>();

/** The most names tried against patterns for one object (see wantNames). */
const NAME_CHECKS = 20_000;
/** The generator's copies whose names are made (see fillNames). */
const named = new WeakSet<Node>();

/**
 * Makes the names an object needs ready: the generator would name the properties
 * `minProperties` asks for (or `required` lists without defining) `prop123` and give them any
 * value, which `propertyNames` or `additionalProperties: false` refuse, and a value that a
 * `patternProperties` schema does not take. A name meets the schema of every pattern it
 * matches (RE2, as Ajv runs it): a required name the properties leave to the patterns, and a
 * named property too; the rest of `minProperties` (up to GENERATED_PROPERTIES) is left to
 * fillNames.
 */
export function wantNames(node: Node, copy: Node, aside: Node): void {
  const patterns = isNode(aside.patternProperties) ? Object.entries(aside.patternProperties) : [];
  const additional = copy.additionalProperties;
  let checks = 0;
  /** The schemas of the patterns a name matches (JSON Schema applies every one). */
  const matching = (name: string): unknown[] => {
    const found: unknown[] = [];
    for (const [pattern, schema] of patterns) {
      // Bounded: a schema of 1000 required names and 1000 patterns would be a million checks.
      // A pattern only a backtracking engine runs is passed over; Ajv checks the value anyway.
      if (++checks > NAME_CHECKS) break;
      if (mayBacktrack(pattern)) continue;
      try {
        if (ajvLinearRegExp(pattern, 'u').test(name)) found.push(schema);
      } catch {
        // (Ajv compiled it: this does not happen)
      }
    }
    return found;
  };
  const all = (schemas: unknown[]) => (schemas.length === 1 ? schemas[0] : { allOf: schemas });
  const valueFor = (name: string): unknown => {
    const found = matching(name);
    if (found.length > 0) return all(found);
    if (additional === false) return undefined;
    return isNode(additional) || additional === true ? additional : {};
  };
  const properties: Node = isNode(copy.properties) ? { ...copy.properties } : {};
  // A named property that a pattern matches must meet the pattern's schema too.
  for (const name of Object.keys(properties)) {
    const found = matching(name);
    if (found.length > 0) properties[name] = all([properties[name], ...found]);
  }
  const required = new Set(
    (Array.isArray(node.required) ? node.required : []).filter(
      (name): name is string => typeof name === 'string',
    ),
  );
  for (const name of required) {
    if (Object.hasOwn(properties, name)) continue;
    const schema = valueFor(name);
    if (schema !== undefined) properties[name] = schema;
  }
  if (Object.keys(properties).length > 0) copy.properties = properties;
  let defined = 0;
  for (const name of required) if (Object.hasOwn(properties, name)) defined++;
  const count = Math.min(num(node.minProperties, 0), GENERATED_PROPERTIES) - defined;
  if (count <= 0) return;
  namesWanted.set(copy, {
    count,
    ...(isNode(aside.propertyNames) ? { names: aside.propertyNames } : {}),
    patterns,
    valueFor,
  });
}

/** Names an object's wanted properties (see wantNames) in a copy, once, before it is used. */
export function fillNames(root: Node, generate: Generate): void {
  if (named.has(root)) return;
  named.add(root);
  const stack: unknown[] = [root];
  while (stack.length > 0) {
    const node = stack.pop();
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item);
      continue;
    }
    if (!isNode(node)) continue;
    const want = namesWanted.get(node);
    if (want) {
      namesWanted.delete(node);
      addNames(node, want, generate);
    }
    for (const key of Object.keys(node)) if (!DATA_KEYWORDS.has(key)) stack.push(node[key]);
  }
}

/**
 * Adds `want.count` required properties to an object's copy: names from `propertyNames` (its
 * `enum` or `const` in turn, else made from it) or, when it has no pattern of its own, made from
 * the patterns in turn (with its other keywords); each with the schema its name calls for. A
 * name that fails is passed over; Ajv checks the value made in the end.
 */
function addNames(copy: Node, want: WantedNames, generate: Generate): void {
  const { names, patterns } = want;
  const fixed = names
    ? Array.isArray(names.enum)
      ? names.enum
      : 'const' in names
        ? [names.const]
        : undefined
    : undefined;
  const fromNames = names !== undefined && (fixed !== undefined || 'pattern' in names);
  const properties: Node = isNode(copy.properties) ? { ...copy.properties } : {};
  const required = new Set(Array.isArray(copy.required) ? copy.required : []);
  let added = 0;
  for (let i = 0; added < want.count && i < want.count * 4; i++) {
    let name: unknown;
    if (fixed) name = fixed[i];
    else {
      const pattern = patterns[i % Math.max(1, patterns.length)]?.[0];
      // (the names' other keywords, a length, with a pattern's)
      const schema: Node =
        fromNames || pattern === undefined
          ? { ...names, type: 'string' }
          : { ...names, type: 'string', pattern };
      try {
        name = generate(schema as JsonSchema, {
          seed: i + 1,
          maxDepth: 1,
          refDepthMax: 0,
          formats: GENERATOR_FORMATS,
        });
      } catch {
        continue;
      }
    }
    if (typeof name !== 'string' || Object.hasOwn(properties, name)) continue;
    const schema = want.valueFor(name);
    if (schema === undefined) continue;
    properties[name] = schema;
    required.add(name);
    added++;
  }
  copy.properties = properties;
  copy.required = [...required];
}
