import { countTokens } from '../platform/tokens.js';
import { generateReply, type Reply } from './default-reply.js';
import type { Fixtures, LoadedRule } from './fixtures.js';

export type ReplyApi = 'chat' | 'messages';

export interface ReplyRequest {
  api: ReplyApi;
  model: string;
  /** The last user text. */
  prompt: string;
  /** Which choice (chat `n`); scripted replies are the same for every choice. */
  variant: number;
}

/** A reply and, when a scripted rule gave it, that rule. */
export interface ChosenReply extends Reply {
  rule?: LoadedRule;
}

interface CompiledRule {
  rule: LoadedRule;
  regex?: RegExp;
  /** Token count of a reply with no `$n` references, counted once. */
  tokens?: number;
}

const hasReferences = (text: string) => /\$(\d|&)/.test(text);

/**
 * Scripted replies: the first rule whose match, model and api fit the request gives the reply;
 * anything else gets the deterministic default reply.
 */
export class Replies {
  private compiled: CompiledRule[] = [];

  constructor(fixtures: Fixtures) {
    this.load(fixtures);
  }

  load(fixtures: Fixtures): void {
    this.compiled = fixtures.rules.map((rule) => {
      const entry: CompiledRule = { rule };
      if ('regex' in rule.match) entry.regex = new RegExp(rule.match.regex, rule.match.flags);
      if (!hasReferences(rule.reply)) entry.tokens = countTokens(rule.reply);
      return entry;
    });
  }

  get rules(): LoadedRule[] {
    return this.compiled.map((c) => c.rule);
  }

  reply(request: ReplyRequest): ChosenReply {
    for (const entry of this.compiled) {
      const { rule } = entry;
      if (rule.api !== undefined && rule.api !== request.api) continue;
      if (rule.model !== undefined) {
        const models = typeof rule.model === 'string' ? [rule.model] : rule.model;
        if (!models.includes(request.model)) continue;
      }
      let text: string;
      if (entry.regex) {
        const found = entry.regex.exec(request.prompt);
        if (!found) continue;
        text = rule.reply.replace(/\$(\d|&)/g, (_, ref: string) =>
          ref === '&' ? found[0] : (found[Number(ref)] ?? ''),
        );
      } else {
        if (!request.prompt.includes((rule.match as { contains: string }).contains)) continue;
        text = rule.reply;
      }
      return { text, tokens: entry.tokens ?? countTokens(text), rule };
    }
    return generateReply(request.prompt, request.variant);
  }
}

/**
 * The text a reply is keyed on, for both chat and messages: the last run of user turns
 * (consecutive ones joined by a newline), or the whole conversation when no turn is the user's.
 */
export function replyPrompt<M extends { role: string }>(
  messages: readonly M[],
  textOf: (message: M) => string,
): string {
  let end = messages.length - 1;
  while (end >= 0 && messages[end]?.role !== 'user') end--;
  if (end < 0) return messages.map(textOf).join('\n');
  let text = textOf(messages[end] as M);
  for (let i = end - 1; i >= 0 && messages[i]?.role === 'user'; i--) {
    text = `${textOf(messages[i] as M)}\n${text}`;
  }
  return text;
}
