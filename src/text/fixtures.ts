import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Static, type TSchema, Type, TypeRegistry } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { Ajv } from 'ajv';
import {
  compileMatch,
  MatchError,
  type RequestMatch,
  requestMatchFields,
  safePattern,
} from '../harness/match.js';
import { Literals } from '../platform/schema-helpers.js';
import { normalizeError } from '../platform/validation.js';
import { FINISH_REASONS, STOP_REASONS } from './agent.js';

/**
 * Fixture data in FIXTURES_DIR (docs/stubs.md "Scripted replies"):
 *   replies/*.json        `{ "rules": [ReplyRule, ...] }`, files read in name order
 *   content-filter.json   `{ "blocked_terms": [BlockedTerm, ...] }` (chat completions)
 * Everything is validated when loaded; an error names the file and the rule.
 */

const ToolCallSchema = Type.Object(
  {
    name: Type.String({ minLength: 1, maxLength: 128 }),
    input: Type.Optional(
      Type.Union([Type.Record(Type.String(), Type.Unknown()), Type.String()], {
        description: "an object (a function's arguments) or a string (a chat custom tool's input)",
      }),
    ),
  },
  {
    additionalProperties: false,
    description: 'a tool to call; input omitted = made from its schema (or format)',
  },
);

/** What a rule answers: text, tool calls, JSON, thinking, and the reason it says it stopped. */
const replyFields = {
  reply: Type.Optional(Type.String({ description: 'text; $1..$9 and $& are regex groups' })),
  tool_calls: Type.Optional(Type.Array(ToolCallSchema, { minItems: 1, maxItems: 32 })),
  json: Type.Optional(
    Type.Unknown({ description: 'the JSON to answer with; true = made from the output schema' }),
  ),
  thinking: Type.Optional(Type.String({ minLength: 1 })),
  finish_reason: Type.Optional(Literals(FINISH_REASONS)),
  stop_reason: Type.Optional(Literals(STOP_REASONS)),
};

export const ReplyStepSchema = Type.Object(replyFields, { additionalProperties: false });
export type ReplyStep = Static<typeof ReplyStepSchema>;

export const RuleMatchSchema = Type.Object(
  {
    ...requestMatchFields,
    contains: Type.Optional(Type.String({ minLength: 1, maxLength: 10_000 })),
    regex: Type.Optional(
      Type.String({ minLength: 1, maxLength: 1000, description: 'the same as prompt_regex' }),
    ),
    flags: Type.Optional(Type.String({ pattern: '^[imsu]*$' })),
    after_tool: Type.Optional(
      Type.String({ minLength: 1, description: 'the last turn holds a result of this tool' }),
    ),
    tool_offered: Type.Optional(
      Type.String({ minLength: 1, description: 'the request offers a tool of this name' }),
    ),
  },
  { additionalProperties: false },
);
export type RuleMatch = Static<typeof RuleMatchSchema>;

export const ReplyRuleSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    match: Type.Optional(RuleMatchSchema),
    model: Type.Optional(
      Type.Union(
        [Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })],
        {
          description: 'a model name or a list of them',
        },
      ),
    ),
    api: Type.Optional(Literals(['chat', 'messages'])),
    ...replyFields,
    sequence: Type.Optional(
      Type.Array(ReplyStepSchema, {
        minItems: 1,
        maxItems: 100,
        description: 'replies used in turn, one per match; the last one repeats',
      }),
    ),
  },
  { additionalProperties: false },
);
export type ReplyRuleData = Static<typeof ReplyRuleSchema>;

/**
 * The fields of a rule's match that only the request answers (the group, model, turn and
 * prompt are read from the conversation itself).
 */
export function sharedMatch(match: RuleMatch): RequestMatch {
  const { path, method, key, header, body } = match;
  return Object.fromEntries(
    Object.entries({ path, method, key, header, body }).filter(([, v]) => v !== undefined),
  ) as RequestMatch;
}

const answers = (step: ReplyStep) =>
  step.reply !== undefined || step.tool_calls !== undefined || step.json !== undefined;

/**
 * What a rule's schema cannot say: how it matches and that it answers. Returns the problem as
 * `<path>: <problem>` relative to the rule, or undefined.
 */
export function ruleProblem(rule: ReplyRuleData): string | undefined {
  const match = rule.match ?? {};
  const patterns = [match.contains, match.regex, match.prompt_regex].filter((p) => p !== undefined);
  if (patterns.length > 1) {
    return 'match: takes one of "contains", "regex" and "prompt_regex"';
  }
  const pattern = match.regex ?? match.prompt_regex;
  if (match.flags !== undefined && pattern === undefined) {
    return 'match.flags: needs "regex"';
  }
  if (match.group === 'video') return 'match.group: replies are for "chat" and "messages"';
  try {
    if (pattern !== undefined) {
      safePattern(
        pattern,
        match.flags,
        match.regex === undefined ? 'match.prompt_regex' : 'match.regex',
      );
    }
    compileMatch(sharedMatch(match), (key) => key);
  } catch (err) {
    if (err instanceof MatchError) return err.message;
    throw err;
  }
  if (rule.sequence) {
    const idle = rule.sequence.findIndex((step) => !answers(step));
    if (idle !== -1) return `sequence.${idle}.reply: is required (or tool_calls, json)`;
    if (answers(rule))
      return 'sequence: replaces reply, tool_calls and json; give one or the other';
    return undefined;
  }
  if (!answers(rule)) return 'reply: is required (or tool_calls, json, sequence)';
  return undefined;
}

const ReplyFileSchema = Type.Object(
  { rules: Type.Array(ReplyRuleSchema) },
  { additionalProperties: false },
);

export const BlockedTermSchema = Type.Object(
  {
    term: Type.String({ minLength: 1 }),
    category: Literals(['hate', 'self_harm', 'sexual', 'violence']),
    severity: Type.Optional(Literals(['low', 'medium', 'high'])),
  },
  { additionalProperties: false },
);
export type BlockedTerm = Static<typeof BlockedTermSchema>;

const FilterFileSchema = Type.Object(
  { blocked_terms: Type.Array(BlockedTermSchema) },
  { additionalProperties: false },
);

export class FixtureError extends Error {
  override name = 'FixtureError';
}

/** A validated reply rule, with where it came from. */
export interface LoadedRule extends ReplyRuleData {
  file: string;
  index: number;
}

export interface Fixtures {
  rules: LoadedRule[];
  blockedTerms: BlockedTerm[];
}

function readJson(path: string): unknown {
  try {
    return JSON.parse(readFileSync(path, 'utf8'));
  } catch (err) {
    throw new FixtureError(`${path}: ${(err as Error).message}`);
  }
}

// The schemas are this module's own (TypeBox): no need to check them against the meta-schema.
let ajv: Ajv | undefined;

/**
 * TypeBox's own check, told what the one-of-these-strings schemas (`Literals`) accept; any other
 * hand-made schema part counts as failing, which sends the data to Ajv.
 */
TypeRegistry.Set<{ enum?: unknown[] }>('Unsafe', (schema, value) =>
  Array.isArray(schema.enum) ? schema.enum.includes(value) : false,
);

/**
 * Checks data against a schema; the error names the field as `rules.0.reply: is required`.
 * TypeBox checks its own schemas without compiling them, which keeps Ajv's compile (tens of ms)
 * out of start-up; Ajv, which words every error the gateway reports, explains a file that fails.
 */
function check<T>(schema: TSchema, data: unknown, path: string): T {
  if (Value.Check(schema, data)) return data as T;
  ajv ??= new Ajv({ strict: false, allErrors: false, verbose: true, validateSchema: false });
  const validate = ajv.compile(schema);
  if (!validate(data)) {
    const issue = normalizeError({ validation: validate.errors }).options.issue;
    const where = issue?.path.length ? issue.path.join('.') : '(root)';
    throw new FixtureError(`${path}: ${where}: ${issue?.problem ?? 'is invalid'}`);
  }
  return data as T;
}

export function loadFixtures(dir: string): Fixtures {
  if (!existsSync(dir)) throw new FixtureError(`${dir}: FIXTURES_DIR does not exist`);
  const rules: LoadedRule[] = [];
  const repliesDir = join(dir, 'replies');
  const files = existsSync(repliesDir)
    ? readdirSync(repliesDir)
        .filter((f) => f.endsWith('.json'))
        .sort()
    : [];
  for (const name of files) {
    const path = join(repliesDir, name);
    const file = check<{ rules: ReplyRuleData[] }>(ReplyFileSchema, readJson(path), path);
    file.rules.forEach((rule, index) => {
      const problem = ruleProblem(rule);
      if (problem) throw new FixtureError(`${path}: rules.${index}.${problem}`);
      rules.push({ ...rule, file: join('replies', name), index });
    });
  }
  const filterPath = join(dir, 'content-filter.json');
  const blockedTerms = existsSync(filterPath)
    ? check<{ blocked_terms: BlockedTerm[] }>(FilterFileSchema, readJson(filterPath), filterPath)
        .blocked_terms
    : [];
  return { rules, blockedTerms };
}
