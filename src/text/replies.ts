import type { Feature } from '../platform/features.js';
import { countTokens } from '../platform/tokens.js';
import {
  defaultPlan,
  type Plan,
  type ReplyApi,
  structuredText,
  type ToolCall,
  type Turn,
  thinkingText,
  toolInput,
} from './agent.js';
import type { Fixtures, LoadedRule, ReplyStep } from './fixtures.js';

export type { ReplyApi };

/** A reply, and what a scripted rule says about it. */
export interface ChosenReply extends Plan {
  /** The rule that gave it, if one did. */
  rule?: LoadedRule;
  /** The step of the rule that gave it: its reasons replace the natural ones. */
  step?: ReplyStep;
}

interface CompiledRule {
  rule: LoadedRule;
  regex?: RegExp;
  /** Token count of a plain-text reply with no `$n` references, counted once. */
  tokens?: number;
  /** Times the rule answered: the next step of a sequence. */
  used: number;
}

const hasReferences = (text: string) => /\$(\d|&)/.test(text);

/**
 * The reply engine shared by chat and messages: the first scripted rule that matches a turn
 * answers it (text, tool calls, JSON, thinking; a sequence answers with its steps in turn);
 * any other turn gets the default reply (agent.ts).
 */
export class Replies implements Feature {
  readonly name = 'stubs';
  private compiled: CompiledRule[] = [];

  constructor(fixtures: Fixtures) {
    this.load(fixtures);
  }

  load(fixtures: Fixtures): void {
    this.compiled = fixtures.rules.map((rule) => {
      const entry: CompiledRule = { rule, used: 0 };
      if (rule.match?.regex !== undefined) {
        entry.regex = new RegExp(rule.match.regex, rule.match.flags);
      }
      if (
        rule.reply !== undefined &&
        rule.json === undefined &&
        !rule.sequence &&
        !hasReferences(rule.reply)
      ) {
        entry.tokens = countTokens(rule.reply);
      }
      return entry;
    });
  }

  get rules(): LoadedRule[] {
    return this.compiled.map((c) => c.rule);
  }

  /** Starts every sequence over. */
  reset(): void {
    for (const entry of this.compiled) entry.used = 0;
  }

  /**
   * The replies of a turn, one per choice (chat `n`): a scripted reply is the same for every
   * choice and advances a sequence once; default replies differ per choice.
   */
  async replies(turn: Turn, choices = 1): Promise<ChosenReply[]> {
    for (const entry of this.compiled) {
      const found = this.matches(entry, turn);
      if (!found) continue;
      const { rule } = entry;
      const step = rule.sequence
        ? (rule.sequence[Math.min(entry.used, rule.sequence.length - 1)] as ReplyStep)
        : rule;
      entry.used++;
      const plan = await scriptedPlan(step, turn, found, step === rule ? entry.tokens : undefined);
      return Array.from({ length: choices }, () => ({ ...plan, rule, step }));
    }
    const plans: ChosenReply[] = [];
    for (let variant = 0; variant < choices; variant++) {
      plans.push(await defaultPlan({ ...turn, variant }));
    }
    return plans;
  }

  /** The regex match (or true) when a rule applies to a turn, else undefined. */
  private matches(entry: CompiledRule, turn: Turn): RegExpExecArray | true | undefined {
    const { rule } = entry;
    if (rule.api !== undefined && rule.api !== turn.api) return undefined;
    if (rule.model !== undefined) {
      const models = typeof rule.model === 'string' ? [rule.model] : rule.model;
      if (!models.includes(turn.model)) return undefined;
    }
    const match = rule.match ?? {};
    if (match.turn !== undefined && match.turn !== turn.userTurns) return undefined;
    if (match.after_tool !== undefined && !turn.results.some((r) => r.name === match.after_tool)) {
      return undefined;
    }
    if (
      match.tool_offered !== undefined &&
      !turn.tools.some((tool) => tool.name === match.tool_offered)
    ) {
      return undefined;
    }
    if (match.contains !== undefined && !turn.prompt.includes(match.contains)) return undefined;
    if (entry.regex) return entry.regex.exec(turn.prompt) ?? undefined;
    return true;
  }
}

/** A rule's reply for a turn: `$n` filled in, JSON and tool inputs made where asked. */
async function scriptedPlan(
  step: ReplyStep,
  turn: Turn,
  found: RegExpExecArray | true,
  knownTokens: number | undefined,
): Promise<Plan> {
  let text = '';
  if (step.json !== undefined) {
    text =
      step.json === true
        ? await structuredText(turn, turn.output ?? { kind: 'json_object' })
        : JSON.stringify(step.json);
  } else if (step.reply !== undefined) {
    text =
      found === true
        ? step.reply
        : step.reply.replace(/\$(\d|&)/g, (_, ref: string) =>
            ref === '&' ? found[0] : (found[Number(ref)] ?? ''),
          );
  }
  const calls: ToolCall[] = [];
  for (const call of step.tool_calls ?? []) {
    const tool = turn.tools.find((t) => t.name === call.name);
    const input = call.input ?? (tool ? await toolInput(turn, tool) : {});
    calls.push({ name: call.name, input });
  }
  const plan: Plan = { text, tokens: knownTokens ?? countTokens(text), calls };
  if (step.thinking !== undefined) plan.thinking = step.thinking;
  else if (turn.thinking) plan.thinking = thinkingText(turn, calls);
  return plan;
}

/**
 * The text a reply is keyed on, for both chat and messages: the last run of user turns that
 * hold text (consecutive ones joined by a newline), or the whole conversation when no turn is
 * the user's.
 */
export function replyPrompt<M extends { role: string }>(
  messages: readonly M[],
  textOf: (message: M) => string,
): string {
  let end = messages.length - 1;
  while (end >= 0 && (messages[end]?.role !== 'user' || textOf(messages[end] as M) === '')) end--;
  if (end < 0) return messages.map(textOf).join('\n');
  let text = textOf(messages[end] as M);
  for (let i = end - 1; i >= 0 && messages[i]?.role === 'user'; i--) {
    text = `${textOf(messages[i] as M)}\n${text}`;
  }
  return text;
}
