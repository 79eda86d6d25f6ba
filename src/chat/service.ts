import { fieldError, GatewayError } from '../platform/errors.js';
import { fnv1a } from '../platform/hash.js';
import { countTokens } from '../platform/tokens.js';
import {
  type ContentFilter,
  categoryResults,
  choiceFilterResults,
  promptFilterResults,
} from '../text/content-filter.js';
import { type FinishReason, finishText } from '../text/finish.js';
import type { BlockedTerm } from '../text/fixtures.js';
import type { Replies } from '../text/replies.js';
import { replyPrompt } from '../text/replies.js';
import type {
  ChatCompletion,
  ChatCompletionRequest,
  ChatFinishReason,
  ChatMessage,
  ChatUsage,
  ChoiceFilterResults,
  PromptFilterResults,
} from './schemas.js';

/** Token cost of each message's role framing, and of priming the reply (see README). */
export const TOKENS_PER_MESSAGE = 3;
export const TOKENS_PER_NAME = 1;
export const TOKENS_REPLY_PRIMING = 3;

export const SAFE_CHOICE_FILTERS: ChoiceFilterResults = choiceFilterResults();
export const SAFE_PROMPT_FILTERS: PromptFilterResults[] = promptFilterResults();

/** Azure's refusal of a prompt that trips the content filter. @see https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/content-filter */
export const PROMPT_FILTERED_MESSAGE =
  "The response was filtered due to the prompt triggering Azure OpenAI's content management policy. Please modify your prompt and retry. To learn more about our content filtering policies please read our documentation: https://go.microsoft.com/fwlink/?linkid=2198766";

export function checkChatPrompt(messages: readonly ChatMessage[], filter: ContentFilter): void {
  for (const message of messages) {
    const found = filter.find(messageText(message));
    if (!found) continue;
    throw new GatewayError(400, PROMPT_FILTERED_MESSAGE, {
      code: 'content_filter',
      extra: {
        type: null,
        param: 'prompt',
        status: 400,
        innererror: {
          code: 'ResponsibleAIPolicyViolation',
          content_filter_result: categoryResults(found.term),
        },
      },
    });
  }
}

export function systemFingerprint(model: string): string {
  return `fp_${fnv1a(model).toString(16).padStart(8, '0')}e0`;
}

export function messageText(message: ChatMessage): string {
  const { content } = message;
  if (typeof content === 'string') return content;
  if (!content) return '';
  return content.map((part) => part.text).join('\n');
}

/** Rules the JSON schema cannot express; each failure names its field. */
export function checkChatRequest(body: ChatCompletionRequest): void {
  body.messages.forEach((message, i) => {
    const hasContent = message.content !== undefined && message.content !== null;
    if (message.role === 'assistant') {
      if (!hasContent && !message.tool_calls?.length) {
        throw fieldError(['messages', i, 'content'], 'is required', 'missing');
      }
    } else if (!hasContent) {
      throw fieldError(['messages', i, 'content'], 'is required', 'missing');
    }
    if (message.role === 'tool' && !message.tool_call_id) {
      throw fieldError(['messages', i, 'tool_call_id'], 'is required', 'missing');
    }
  });
  if (body.stream_options && body.stream !== true) {
    throw fieldError(['stream_options'], 'is only allowed when stream is true');
  }
  if (body.top_logprobs != null && body.logprobs !== true) {
    throw fieldError(['top_logprobs'], 'is only allowed when logprobs is true');
  }
}

/** A prompt as the cache sees it: per message, its framing tokens and its texts. */
export interface ChatPromptPart {
  framing: number;
  texts: string[];
}

export function chatPromptParts(messages: readonly ChatMessage[]): ChatPromptPart[] {
  return messages.map((message) => ({
    framing: TOKENS_PER_MESSAGE + (message.name ? TOKENS_PER_NAME : 0),
    texts: [
      messageText(message),
      ...(message.tool_calls ?? []).flatMap((call) => [
        call.function.name,
        call.function.arguments,
      ]),
    ],
  }));
}

export function countChatPrompt(parts: readonly ChatPromptPart[]): number {
  let total = TOKENS_REPLY_PRIMING;
  for (const part of parts) {
    total += part.framing;
    for (const text of part.texts) total += countTokens(text);
  }
  return total;
}

/** Whether a prompt could reach `minTokens` at all: a token is at least one character. */
export function mayReach(parts: readonly ChatPromptPart[], minTokens: number): boolean {
  let bound = TOKENS_REPLY_PRIMING;
  for (const part of parts) {
    bound += part.framing;
    for (const text of part.texts) bound += text.length;
    if (bound >= minTokens) return true;
  }
  return false;
}

export interface ChatChoicePlan {
  text: string;
  tokens: number;
  finishReason: ChatFinishReason;
  /** The blocked term that ended this choice, when the content filter did. */
  filtered?: BlockedTerm;
}

const FINISH: Record<FinishReason, ChatFinishReason> = {
  end: 'stop',
  stop_sequence: 'stop',
  max_tokens: 'length',
};

export interface ChatPlan {
  parts: ChatPromptPart[];
  promptTokens: number;
  choices: ChatChoicePlan[];
}

export function planChat(
  body: ChatCompletionRequest,
  replies: Replies,
  filter: ContentFilter,
): ChatPlan {
  const stop = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  const maxTokens = body.max_completion_tokens ?? body.max_tokens ?? undefined;
  const prompt = replyPrompt(body.messages, messageText);
  const choices: ChatChoicePlan[] = [];
  for (let variant = 0; variant < (body.n ?? 1); variant++) {
    const chosen = replies.reply({ api: 'chat', model: body.model, prompt, variant });
    const done = finishText(chosen, stop, maxTokens);
    const blocked = filter.find(done.text);
    if (blocked) {
      const text = done.text.slice(0, blocked.at);
      const tokens = countTokens(text);
      choices.push({ text, tokens, finishReason: 'content_filter', filtered: blocked.term });
      continue;
    }
    const scripted = done.reason === 'end' ? chosen.rule?.finish_reason : undefined;
    choices.push({
      text: done.text,
      tokens: done.tokens,
      finishReason: scripted ?? FINISH[done.reason],
    });
  }
  const parts = chatPromptParts(body.messages);
  return { parts, promptTokens: countChatPrompt(parts), choices };
}

export interface ChatIdentity {
  id: string;
  created: number;
  model: string;
}

export function chatUsage(plan: ChatPlan, cachedTokens = 0): ChatUsage {
  const completion = plan.choices.reduce((sum, c) => sum + c.tokens, 0);
  return {
    prompt_tokens: plan.promptTokens,
    completion_tokens: completion,
    total_tokens: plan.promptTokens + completion,
    completion_tokens_details: {
      accepted_prediction_tokens: 0,
      audio_tokens: 0,
      reasoning_tokens: 0,
      rejected_prediction_tokens: 0,
    },
    prompt_tokens_details: { audio_tokens: 0, cached_tokens: cachedTokens },
  };
}

/** The key list and order of a chat completion. @see https://platform.openai.com/docs/api-reference/chat/object */
export function buildChatCompletion(
  who: ChatIdentity,
  plan: ChatPlan,
  usage: ChatUsage,
): ChatCompletion {
  return {
    id: who.id,
    object: 'chat.completion',
    created: who.created,
    model: who.model,
    system_fingerprint: systemFingerprint(who.model),
    choices: plan.choices.map((choice, index) => ({
      index,
      finish_reason: choice.finishReason,
      logprobs: null,
      message: { role: 'assistant', content: choice.text, refusal: null, annotations: [] },
      content_filter_results: choice.filtered
        ? choiceFilterResults(choice.filtered)
        : SAFE_CHOICE_FILTERS,
    })),
    prompt_filter_results: SAFE_PROMPT_FILTERS,
    usage,
  };
}
