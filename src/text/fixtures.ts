import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Ajv } from 'ajv';
import { Literals } from '../platform/schema-helpers.js';
import { normalizeError } from '../platform/validation.js';

/**
 * Fixture data in FIXTURES_DIR (README "Scripted replies"):
 *   replies/*.json        `{ "rules": [ReplyRule, ...] }`, files read in name order
 *   content-filter.json   `{ "blocked_terms": [BlockedTerm, ...] }` (chat completions)
 * Everything is validated when loaded; an error names the file and the rule.
 */

export const ReplyRuleSchema = Type.Object(
  {
    name: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
    match: Type.Union(
      [
        Type.Object({ contains: Type.String({ minLength: 1 }) }, { additionalProperties: false }),
        Type.Object(
          {
            regex: Type.String({ minLength: 1 }),
            flags: Type.Optional(Type.String({ pattern: '^[imsu]*$' })),
          },
          { additionalProperties: false },
        ),
      ],
      { description: '{"contains": text} or {"regex": pattern, "flags"?: "imsu"}' },
    ),
    model: Type.Optional(
      Type.Union(
        [Type.String({ minLength: 1 }), Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })],
        {
          description: 'a model name or a list of them',
        },
      ),
    ),
    api: Type.Optional(Literals(['chat', 'messages'])),
    reply: Type.String(),
    finish_reason: Type.Optional(Literals(['stop', 'length', 'content_filter'])),
    stop_reason: Type.Optional(Literals(['end_turn', 'max_tokens', 'stop_sequence'])),
  },
  { additionalProperties: false },
);
export type ReplyRuleData = Static<typeof ReplyRuleSchema>;

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

const ajv = new Ajv({ strict: false, allErrors: false, verbose: true });

/** Checks data against a schema; the error names the field as `rules.0.reply: is required`. */
function check<T>(schema: TSchema, data: unknown, path: string): T {
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
      if ('regex' in rule.match) {
        try {
          new RegExp(rule.match.regex, rule.match.flags);
        } catch (err) {
          throw new FixtureError(`${path}: rules.${index}.match.regex: ${(err as Error).message}`);
        }
      }
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
