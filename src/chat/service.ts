import type { MatchContext } from '../harness/match.js';
import { GatewayError } from '../platform/errors.js';
import { fnv1a } from '../platform/hash.js';
import type { Ids } from '../platform/ids.js';
import { countTokens, splitTokens } from '../platform/tokens.js';
import type { ContentFilter } from '../text/content-filter.js';
import { finishText } from '../text/finish.js';
import type { BlockedTerm } from '../text/fixtures.js';
import type { Replies } from '../text/replies.js';
import { categoryResults, choiceFilterResults, promptFilterResults } from './filter-results.js';
import { type ChatPrompt, messageText } from './prompt.js';
import type {
  ChatCompletion,
  ChatCompletionRequest,
  ChatFinishReason,
  ChatMessage,
  ChatResponseMessage,
  ChatUsage,
  ChoiceFilterResults,
  ChoiceLogprobs,
  PromptFilterResults,
  TokenLogprob,
} from './schemas.js';

export const SAFE_CHOICE_FILTERS: ChoiceFilterResults = choiceFilterResults();
export const SAFE_PROMPT_FILTERS: PromptFilterResults[] = promptFilterResults();

/**
 * Azure's refusal of a prompt that trips the content filter.
 * @see https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/content-filter
 */
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

export interface ChatCall {
  id: string;
  /** A function's call, or a custom tool's (docs/agents.md "Custom tools"). */
  type: 'function' | 'custom';
  name: string;
  /** The arguments' JSON; a custom tool's input text. */
  arguments: string;
}

export interface ChatChoicePlan {
  /** The content; null when the choice only calls tools. */
  text: string | null;
  /** Completion tokens of the choice: text, calls and reasoning. */
  tokens: number;
  reasoningTokens: number;
  finishReason: ChatFinishReason;
  calls: ChatCall[];
  /** The blocked term that ended this choice, when the content filter did. */
  filtered?: BlockedTerm;
}

export interface ChatPlan {
  prompt: ChatPrompt;
  choices: ChatChoicePlan[];
}

/** countTokens, remembering the last text counted (the same string is counted once). */
function lastCounted(): (text: string) => number {
  let last: string | undefined;
  let tokens = 0;
  return (text) => {
    if (text !== last) {
      last = text;
      tokens = countTokens(text);
    }
    return tokens;
  };
}

/** Reasoning tokens per thinking token, by `reasoning_effort`. */
const EFFORT_FACTOR: Record<string, number> = {
  minimal: 0.25,
  low: 0.5,
  medium: 1,
  high: 2,
  xhigh: 3,
  max: 4,
};

const NO_NAMES: ReadonlySet<string> = new Set();

/**
 * Each choice's reply, cut as a model would cut it: reasoning first (it counts against
 * `max_completion_tokens`), then content (stop sequences, the limit, the content filter), then
 * tool calls if they still fit whole.
 * @see https://platform.openai.com/docs/guides/function-calling
 * @see https://platform.openai.com/docs/guides/reasoning
 */
export async function planChat(
  body: ChatCompletionRequest,
  prompt: ChatPrompt,
  replies: Replies,
  filter: ContentFilter,
  ids: Ids,
  context?: MatchContext,
): Promise<ChatPlan> {
  const stop = body.stop == null ? [] : typeof body.stop === 'string' ? [body.stop] : body.stop;
  const { turn, legacy, maxTokens } = prompt;
  const chosen = await replies.replies(turn, body.n ?? 1, context);
  // A scripted reply is the same for every choice: its (possibly long) thinking counted once.
  const thinkingTokens = lastCounted();
  const custom: ReadonlySet<string> = turn.tools.some((tool) => tool.custom)
    ? new Set(turn.tools.flatMap((tool) => (tool.custom ? [tool.name] : [])))
    : NO_NAMES;
  /** A call's text: a custom tool's input as it is (a string), a function's arguments as JSON. */
  const textOf = (call: { name: string; input: unknown }) =>
    custom.has(call.name) && typeof call.input === 'string'
      ? call.input
      : JSON.stringify(call.input);
  const choices = chosen.map((reply): ChatChoicePlan => {
    let reasoningTokens = 0;
    if (turn.thinking && reply.thinking !== undefined) {
      const factor = EFFORT_FACTOR[prompt.effort] ?? 1;
      reasoningTokens = Math.ceil(thinkingTokens(reply.thinking) * factor);
      if (maxTokens !== undefined) reasoningTokens = Math.min(reasoningTokens, maxTokens);
    }
    const budget = maxTokens === undefined ? undefined : maxTokens - reasoningTokens;
    const done = finishText(reply, stop, budget);
    const blocked = filter.find(done.text);
    if (blocked) {
      const text = done.text.slice(0, blocked.at);
      return {
        text,
        tokens: countTokens(text) + reasoningTokens,
        reasoningTokens,
        finishReason: 'content_filter',
        calls: [],
        filtered: blocked.term,
      };
    }
    const args = reply.calls.map(textOf);
    const callTokens = reply.calls.reduce(
      (sum, call, i) => sum + countTokens(call.name) + countTokens(args[i] as string),
      0,
    );
    const fits = budget === undefined || callTokens <= budget - done.tokens;
    const made = done.reason === 'end' && fits ? reply.calls : [];
    const calls = (legacy ? made.slice(0, 1) : made).map((call, i) => ({
      id: ids.next('tool_call'),
      type: custom.has(call.name) ? ('custom' as const) : ('function' as const),
      name: call.name,
      arguments: args[i] as string,
    }));
    // Calls that no longer fit were being written when the limit came (after a stop sequence,
    // none were begun): the reply stops for the limit, and their tokens are the rest of it.
    const callsCut = done.reason === 'end' && reply.calls.length > 0 && !fits;
    let finishReason: ChatFinishReason =
      done.reason === 'max_tokens' || callsCut
        ? 'length'
        : calls.length === 0
          ? 'stop'
          : turn.choice.mode === 'named'
            ? 'stop'
            : legacy
              ? 'function_call'
              : 'tool_calls';
    const scripted = reply.step?.finish_reason;
    if (scripted && (finishReason === 'stop' || calls.length > 0)) finishReason = scripted;
    const spentOnCalls = calls.length > 0 ? callTokens : callsCut ? (budget ?? 0) - done.tokens : 0;
    return {
      text: calls.length > 0 && done.text === '' ? null : done.text,
      tokens: done.tokens + spentOnCalls + reasoningTokens,
      reasoningTokens,
      finishReason,
      calls,
    };
  });
  return { prompt, choices };
}

export interface ChatIdentity {
  id: string;
  created: number;
  model: string;
}

export function chatUsage(plan: ChatPlan, cachedTokens = 0): ChatUsage {
  const completion = plan.choices.reduce((sum, c) => sum + c.tokens, 0);
  const reasoning = plan.choices.reduce((sum, c) => sum + c.reasoningTokens, 0);
  const { promptTokens, audioTokens } = plan.prompt;
  return {
    prompt_tokens: promptTokens,
    completion_tokens: completion,
    total_tokens: promptTokens + completion,
    completion_tokens_details: {
      accepted_prediction_tokens: 0,
      audio_tokens: 0,
      reasoning_tokens: reasoning,
      rejected_prediction_tokens: 0,
    },
    prompt_tokens_details: { audio_tokens: audioTokens, cached_tokens: cachedTokens },
  };
}

/** Tokens a model might have said instead, for `top_logprobs`. */
const ALTERNATIVES = [' the', ' a', ',', '.', ' and', ' of', ' to', ' in', ' is', ' it'];

/**
 * Deterministic log probabilities: one entry per token of the text, each a pure function of
 * the token and its position; `top` alternatives below it, the token itself first. Made one
 * at a time: a stream holds the entry it writes, not 16 000 tokens' twenty alternatives each.
 */
export function* logprobEntries(text: string, top: number): Generator<TokenLogprob> {
  const tokens = splitTokens(text, 1);
  for (let i = 0; i < tokens.length; i++) {
    const token = tokens[i] as string;
    const logprob = -((fnv1a(`${i}:${token}`) % 2000) / 1000);
    const alternatives = Array.from({ length: top }, (_, k) => {
      const alt = k === 0 ? token : (ALTERNATIVES[(i + k) % ALTERNATIVES.length] as string);
      const value = k === 0 ? logprob : logprob - 1.5 - k;
      return { token: alt, logprob: value, bytes: [...Buffer.from(alt)] };
    });
    yield { token, logprob, bytes: [...Buffer.from(token)], top_logprobs: alternatives };
  }
}

/** Every entry of `logprobEntries`, for a JSON answer. */
export const tokenLogprobs = (text: string, top: number): TokenLogprob[] => [
  ...logprobEntries(text, top),
];

export const choiceLogprobs = (choice: ChatChoicePlan, top: number): ChoiceLogprobs => ({
  content: tokenLogprobs(choice.text ?? '', top),
  refusal: null,
});

/**
 * A call as the wire names it, with `text` as its arguments (a function's) or input (a custom
 * tool's): the message's whole call, or a stream's opening of it (`text` empty).
 */
export const wireCall = (call: ChatCall, text: string) =>
  call.type === 'custom'
    ? { type: 'custom' as const, custom: { name: call.name, input: text } }
    : { type: 'function' as const, function: { name: call.name, arguments: text } };

/** The message of one choice: content, or tool calls (a `function_call` for legacy functions). */
export function responseMessage(choice: ChatChoicePlan, legacy: boolean): ChatResponseMessage {
  const message: ChatResponseMessage = {
    role: 'assistant',
    content: choice.text,
    refusal: null,
    annotations: [],
  };
  if (choice.calls.length === 0) return message;
  if (legacy) {
    const call = choice.calls[0] as ChatCall;
    return {
      role: 'assistant',
      content: choice.text,
      function_call: { name: call.name, arguments: call.arguments },
      refusal: null,
      annotations: [],
    };
  }
  return {
    role: 'assistant',
    content: choice.text,
    tool_calls: choice.calls.map((call) => ({ id: call.id, ...wireCall(call, call.arguments) })),
    refusal: null,
    annotations: [],
  };
}

/** Azure's per-choice filter results: empty when the choice calls tools. */
export const choiceFilters = (
  choice: ChatChoicePlan,
): ChoiceFilterResults | Record<never, never> =>
  choice.calls.length > 0
    ? {}
    : choice.filtered
      ? choiceFilterResults(choice.filtered)
      : SAFE_CHOICE_FILTERS;

/**
 * The response's `service_tier`: echoed when asked for, `auto` served as `default`, fast mode
 * (`fast`) as `priority`, as upstream says it.
 * @see https://developers.openai.com/api/docs/guides/fast-mode
 */
export const servedTier = (body: ChatCompletionRequest) =>
  body.service_tier == null
    ? undefined
    : body.service_tier === 'auto'
      ? 'default'
      : body.service_tier === 'fast'
        ? 'priority'
        : body.service_tier;

/**
 * The most token entries one JSON answer is built with: a token is one, and with `logprobs`
 * each token and each of its `top_logprobs` is LOGPROB_ENTRY_WEIGHT (an object with a bytes
 * list, serialized: 336 000 of them took 0.9 s). A JSON answer is made whole in memory: `n` ×
 * max tokens × 21 entries of an echoed prompt (n: 32, 16 384 tokens, 20 alternatives) ran the
 * process out of memory. A stream is made lazily and has no such bound.
 */
export const JSON_ANSWER_ENTRIES = 400_000;
export const LOGPROB_ENTRY_WEIGHT = 4;

/**
 * Refuses (400, naming `n`) a JSON answer that would hold more than JSON_ANSWER_ENTRIES token
 * entries (its content and calls); the same request streamed is answered.
 */
export function checkAnswerSize(body: ChatCompletionRequest, plan: ChatPlan): void {
  const perToken =
    body.logprobs === true ? LOGPROB_ENTRY_WEIGHT * (1 + (body.top_logprobs ?? 0)) : 1;
  // (reasoning is reported as a count only: none of its tokens is in the answer)
  const entries =
    plan.choices.reduce((sum, choice) => sum + choice.tokens - choice.reasoningTokens, 0) *
    perToken;
  if (entries > JSON_ANSWER_ENTRIES) {
    throw new GatewayError(
      400,
      `This answer would hold ${entries} token entries (n × completion tokens, × ${LOGPROB_ENTRY_WEIGHT} × (1 + top_logprobs) with logprobs), more than the emulator builds in one JSON answer (${JSON_ANSWER_ENTRIES}): ask for fewer choices, fewer tokens or fewer top_logprobs, or set stream: true.`,
      { extra: { param: 'n', code: 'answer_too_large' } },
    );
  }
}

/**
 * The key list and order of a chat completion.
 * @see https://platform.openai.com/docs/api-reference/chat/object
 */
export function buildChatCompletion(
  who: ChatIdentity,
  body: ChatCompletionRequest,
  plan: ChatPlan,
  usage: ChatUsage,
): ChatCompletion {
  const tier = servedTier(body);
  const top = body.logprobs === true ? (body.top_logprobs ?? 0) : -1;
  return {
    id: who.id,
    object: 'chat.completion',
    created: who.created,
    model: who.model,
    system_fingerprint: systemFingerprint(who.model),
    ...(tier ? { service_tier: tier } : {}),
    choices: plan.choices.map((choice, index) => ({
      index,
      finish_reason: choice.finishReason,
      logprobs: top >= 0 ? choiceLogprobs(choice, top) : null,
      message: responseMessage(choice, plan.prompt.legacy),
      content_filter_results: choiceFilters(choice),
    })),
    prompt_filter_results: SAFE_PROMPT_FILTERS,
    usage,
  };
}
