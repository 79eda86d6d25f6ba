import { hintReader } from '../schema-hints.js';
import { DATA_KEYWORDS, isNode, type Node } from '../schema-nodes.js';
import { formatForGenerator } from './formats.js';
import {
  GENERATED_ITEMS,
  GENERATED_LENGTH,
  GENERATED_PROPERTIES,
  GENERATION_BUDGET,
  MAX_DEPTH,
  MAX_REF_HOPS,
  num,
  TooLarge,
} from './limits.js';
import { wantNames } from './names.js';
import { isSchemaList } from './nodes.js';
import { foldPatterns, generatorPattern, narrowRange } from './patterns.js';
import { anchorPointers, generatorRef, resolve } from './refs.js';

/** The number the generator is given as an upper bound: the schema's, lowered to `cap`. */
const lowered = (node: Node, min: string, max: string, cap: number) =>
  Math.max(num(node[min], 0), Math.min(num(node[max], cap), cap));

/** The most `contains` values the generator makes: `minContains` (1 by default), or up to `cap`. */
const containsMost = (node: Node, cap: number) =>
  Math.max(num(node.minContains, 1), Math.min(num(node.maxContains, cap), cap));

type HintRead = ReturnType<typeof hintReader>;

/** A generator's copy, the size of its largest value, and whether hints or formats changed it. */
interface Prepared {
  copy: Node;
  size: number;
  hinted: boolean;
  formats: boolean;
}

/**
 * The copy of a schema the generator gets (upper bounds lowered), checking on the way that
 * the largest value it can make stays within GENERATION_BUDGET. Throws TooLarge, or an Error
 * when the schema nests too deep.
 */
function prepare(root: Node, read: HintRead, cap: number): Prepared {
  const walk: Walk = {
    root,
    read,
    cap,
    anchors: anchorPointers(root),
    walked: 0,
    hinted: false,
    formats: false,
    refSizes: new Map(),
    refIds: new Map(),
  };
  const { copy, size } = walkNode(walk, root, 0, 0);
  return { copy: copy as Node, size, hinted: walk.hinted, formats: walk.formats };
}

/** One walk of a schema by prepare: what it reads with, and what it found so far. */
interface Walk {
  readonly root: Node;
  readonly read: HintRead;
  readonly cap: number;
  readonly anchors: ReadonlyMap<string, string>;
  /** Nodes walked (at most GENERATION_BUDGET). */
  walked: number;
  hinted: boolean;
  formats: boolean;
  /**
   * The size of a `$ref`'s target at each depth and hop count, computed once: the paths to a
   * node through references grow with the power of the hops (three lists of a node, 3^8).
   */
  readonly refSizes: Map<string, number>;
  readonly refIds: Map<unknown, number>;
}

function refSize(walk: Walk, target: unknown, depth: number, hops: number): number {
  let id = walk.refIds.get(target);
  if (id === undefined) {
    id = walk.refIds.size;
    walk.refIds.set(target, id);
  }
  const key = `${id}:${depth}:${hops}`;
  let size = walk.refSizes.get(key);
  if (size === undefined) {
    size = walkNode(walk, target, depth, hops).size;
    walk.refSizes.set(key, size);
  }
  return size;
}

/** Walks a schema: its copy, and the size of the largest value made from it. */
function walkNode(
  walk: Walk,
  given: unknown,
  depth: number,
  hops: number,
): { copy: unknown; size: number } {
  if (++walk.walked > GENERATION_BUDGET) throw new TooLarge();
  if (depth > MAX_DEPTH) {
    throw new Error(
      `it nests deeper than ${MAX_DEPTH} levels, more than the emulator makes values for`,
    );
  }
  if (!isNode(given)) return { copy: given, size: 1 };
  const node = walk.read(given);
  if (node !== given) walk.hinted = true;
  const copy: Node = {};
  const aside: Node = {};
  let size = 1 + walkKeys(walk, node, copy, aside, depth, hops);
  if (typeof node.$ref === 'string' && hops < MAX_REF_HOPS) {
    const target = resolve(walk.root, walk.anchors.get(node.$ref) ?? node.$ref);
    size += refSize(walk, target, depth + 1, hops + 1);
  }
  size += lowerBounds(walk, node, copy);
  if (aside.patternProperties !== undefined || aside.propertyNames !== undefined) {
    wantNames(node, copy, aside);
  }
  if (size > GENERATION_BUDGET) throw new TooLarge();
  return { copy, size };
}

/**
 * Copies a node's keywords (the names' ones set aside), walking the schemas they hold: the
 * size their values add.
 */
function walkKeys(
  walk: Walk,
  node: Node,
  copy: Node,
  aside: Node,
  depth: number,
  hops: number,
): number {
  const { cap } = walk;
  const sum = (sizes: number[]) => sizes.reduce((a, b) => a + b, 0);
  let size = 0;
  for (const key of Object.keys(node)) {
    if (DATA_KEYWORDS.has(key)) {
      copy[key] = node[key];
      continue;
    }
    if (key === 'pattern' && typeof node.pattern === 'string') {
      // Ajv compiled it with RE2 already
      copy.pattern = node.pattern.includes('\\') ? generatorPattern(node.pattern) : node.pattern;
      continue;
    }
    if (key === '$ref' && typeof node.$ref === 'string' && !node.$ref.startsWith('#')) {
      // The generator would follow `urn:x` to a `$id` that this walk does not find, so the
      // size estimate would not bound it.
      throw new Error(
        `its $ref ${JSON.stringify(node.$ref).slice(0, 80)} is not a local reference (#/...), the only kind the emulator follows`,
      );
    }
    const sizes = walkKey(walk, node, copy, key, depth, hops);
    if (key === '$ref' && typeof copy.$ref === 'string') {
      copy.$ref = generatorRef(walk.anchors.get(copy.$ref) ?? copy.$ref);
    }
    // The generator tries these names with JavaScript's backtracking engine: it never sees
    // them, and Ajv (RE2) checks the value it makes.
    if (key === 'patternProperties' || key === 'propertyNames') {
      aside[key] = copy[key];
      delete copy[key];
    }
    if (key === 'anyOf' || key === 'oneOf') size += Math.max(0, ...sizes);
    else if (key === 'items') size += lowered(node, 'minItems', 'maxItems', cap) * sum(sizes);
    else if (key === 'contains') size += containsMost(node, cap) * sum(sizes);
    else if (key === 'additionalProperties' || key === 'patternProperties') {
      size += GENERATED_PROPERTIES * Math.max(0, ...sizes);
    } else if (key !== '$defs' && key !== 'definitions') size += sum(sizes);
  }
  return size;
}

/** Walks what one keyword holds into the copy: the sizes of its schemas. */
function walkKey(
  walk: Walk,
  node: Node,
  copy: Node,
  key: string,
  depth: number,
  hops: number,
): number[] {
  const value = node[key];
  if (Array.isArray(value)) {
    const parts = value.map((item) => walkNode(walk, item, depth + 1, hops));
    copy[key] = parts.map((part) => part.copy);
    return parts.map((part) => part.size);
  }
  if (
    key === 'properties' ||
    key === 'patternProperties' ||
    key === '$defs' ||
    key === 'definitions'
  ) {
    if (!isNode(value)) return [];
    const parts = Object.entries(value).map(
      ([name, item]) => [name, walkNode(walk, item, depth + 1, hops)] as const,
    );
    copy[key] = Object.fromEntries(parts.map(([name, part]) => [name, part.copy]));
    return parts.map(([, part]) => part.size);
  }
  const part = walkNode(walk, value, depth + 1, hops);
  copy[key] = part.copy;
  return [part.size];
}

/**
 * The copy's upper bounds lowered (lists, `contains`, ranges, lengths, properties), a tuple in
 * 2020-12 words, a format set aside: the size the lengths and properties add.
 */
function lowerBounds(walk: Walk, node: Node, copy: Node): number {
  const { cap } = walk;
  let size = 0;
  if ('minItems' in node || 'maxItems' in node || (cap < GENERATED_ITEMS && 'items' in node)) {
    copy.maxItems = lowered(node, 'minItems', 'maxItems', cap);
  }
  if ('contains' in node) {
    // The generator makes a random count of them between the two, each a value: the count
    // is bounded as a list's length is, and the list made long enough to hold the least.
    copy.maxContains = containsMost(node, cap);
    const least = num(node.minContains, 1);
    if (least > num(copy.maxItems, GENERATED_ITEMS) && num(node.maxItems, least) >= least) {
      copy.maxItems = least;
    }
  }
  if (isSchemaList(copy.items) && copy.items.length > 0) {
    // The generator reads a tuple as 2020-12 writes it (it makes objects of draft-07's).
    copy.prefixItems = copy.items;
    if ('additionalItems' in copy) copy.items = copy.additionalItems;
    else delete copy.items;
    delete copy.additionalItems;
  }
  narrowRange(copy);
  if (Array.isArray(copy.allOf)) foldPatterns(copy);
  if ('minLength' in node || 'maxLength' in node || node.type === 'string') {
    const max = lowered(node, 'minLength', 'maxLength', GENERATED_LENGTH);
    if ('maxLength' in node) copy.maxLength = max;
    size += max;
  }
  if (formatForGenerator(copy)) walk.formats = true;
  if ('minProperties' in node || 'maxProperties' in node) {
    copy.maxProperties = lowered(node, 'minProperties', 'maxProperties', GENERATED_PROPERTIES);
    size += copy.maxProperties as number;
  }
  return size;
}

/**
 * The generator's copy, with lists of at most GENERATED_ITEMS items, or fewer (down to none
 * where the schema allows it) when the largest value would not fit GENERATION_BUDGET: a tree of
 * nodes that hold lists of nodes is answered with a smaller tree, not refused.
 */
export function prepareFitting(root: Node, hints: boolean): Prepared {
  // One reader for every pass: each description is read once, within one budget.
  const read: HintRead = hints ? hintReader() : (node) => node;
  for (let cap = GENERATED_ITEMS; ; cap--) {
    try {
      return prepare(root, read, cap);
    } catch (err) {
      if (!(err instanceof TooLarge) || cap === 0) throw err;
    }
  }
}

/**
 * The generator's copy with the keywords descriptions hold (`hinted` says whether any did), or
 * undefined when it cannot be used: the schema as sent is then walked without them.
 */
export function hintedCopy(root: Node): Prepared | undefined {
  try {
    return prepareFitting(root, true);
  } catch {
    return undefined;
  }
}
