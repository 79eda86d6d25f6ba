/**
 * JSON values that a JSON Schema accepts, for tool arguments and structured output: made by
 * json-schema-faker from a seed (the same schema and seed give the same value) and proven with
 * Ajv before they are used. The generator loads on first use, so start-up does not pay for it.
 *
 * A client controls the schema, so generation is bounded before it starts: upper bounds are
 * lowered on the copy the generator sees (what it makes still meets the original), a schema
 * whose smallest value is too large to make is refused, and the generator follows a `$ref` no
 * deeper than the size estimate does. Patterns run in linear time (RE2); one that RE2 cannot run
 * (lookaround, a backreference) by JavaScript's engine within a time bound (see schemaRegex).
 *
 * Its parts, in json-schema/: the limits (limits.ts), the schemas known and their checks
 * (store.ts, with Ajv in validator.ts and the node count in nodes.ts), references (refs.ts), the
 * generator's copy of a schema (prepare.ts, with patterns.ts, formats.ts and names.ts), and the
 * values made (instance.ts, with the generator in generator.ts).
 * @see https://ajv.js.org/security.html
 */

export { schemaInstance, UnsatisfiableSchemaError } from './json-schema/instance.js';
export {
  type Budget,
  EXPANDED_NODES,
  GENERATION_BUDGET,
  generationBudget,
  REQUEST_BACKTRACKING_MS,
  REQUEST_GENERATION_BUDGET,
  REQUEST_SCHEMA_NODES,
  SCHEMA_NODES,
} from './json-schema/limits.js';
export {
  generationProblem,
  schemaBudget,
  schemaMemo,
  schemaProblem,
  spendSchema,
} from './json-schema/store.js';
