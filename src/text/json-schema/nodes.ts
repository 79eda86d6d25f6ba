import { estimatedProgramSize, mayBacktrack } from '../../platform/linear-regex.js';
import { hintedPattern } from '../schema-hints.js';
import { isNode, type Node } from '../schema-nodes.js';
import { SCHEMA_NODES } from './limits.js';

/**
 * Instructions of a pattern counted as one more JSON node: RE2 compiles 200 in about the time
 * Ajv spends on a node, so a schema of many large patterns is bounded as one of many nodes.
 */
const INSTRUCTIONS_PER_NODE = 200;

/**
 * What a pattern only a backtracking engine runs weighs more (see `schemaRegex`): each may
 * cost up to BACKTRACKING_TIMEOUT_MS once, so a request holds at most 50 of them.
 */
const BACKTRACKING_NODES = 100;

/**
 * Keywords that cost Ajv more than a node to compile, weighed as this many nodes more: 660
 * `{contains: {const: i}}` (3 nodes each) took 0.75 s, against 0.2 s for as many properties.
 */
const KEYWORD_NODES = new Map([
  ['contains', 6],
  ['propertyNames', 2],
  ['format', 1],
]);

const patternNodes = (pattern: string, backtracks = mayBacktrack(pattern)) =>
  Math.floor(estimatedProgramSize(pattern) / INSTRUCTIONS_PER_NODE) +
  (backtracks ? BACKTRACKING_NODES : 0);

/**
 * JSON nodes in a value, each pattern (a `pattern`, a key of `patternProperties`, one read
 * from a `description`) weighed by its size too, counting stopped at `limit`.
 */
export function countNodes(value: unknown, limit: number): number {
  let count = 0;
  const stack: unknown[] = [value];
  while (stack.length > 0 && count < limit) {
    const node = stack.pop();
    count++;
    if (Array.isArray(node)) {
      for (const item of node) stack.push(item);
    } else if (typeof node === 'object' && node !== null) {
      for (const key in node) {
        const item = (node as Node)[key];
        count += KEYWORD_NODES.get(key) ?? 0;
        if (key === 'pattern' && typeof item === 'string') count += patternNodes(item);
        else if (key === 'description' && typeof item === 'string') {
          // a pattern read from it is compiled too (see schema-hints.ts), by RE2 only
          const hinted = hintedPattern(item);
          if (hinted !== undefined) count += 1 + patternNodes(hinted, false);
        } else if (key === 'patternProperties' && isNode(item)) {
          for (const name in item) count += patternNodes(name);
        }
        stack.push(item);
      }
    }
  }
  return count;
}

export const tooManyNodes = `it has more than ${SCHEMA_NODES} JSON nodes (a pattern counting one more per ${INSTRUCTIONS_PER_NODE} instructions it compiles to, ${BACKTRACKING_NODES} more with lookaround or a backreference), more than the emulator checks in one schema`;

/** A list of schemas (a tuple), not of names (`dependencies: {"items": ["a"]}` is a map's). */
export const isSchemaList = (value: unknown): value is unknown[] =>
  Array.isArray(value) && value.every((item) => typeof item === 'boolean' || isNode(item));
