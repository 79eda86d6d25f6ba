import type { ReplyApi } from './agent.js';

/**
 * What each text model takes and gives: its context window and the most output tokens one reply
 * may have. Requests beyond them are refused as upstream refuses them, and every reply (an echo
 * of a long prompt included) stops at the output limit, so a request's memory stays bounded. A
 * model the table does not know gets its API's default row.
 * @see https://platform.openai.com/docs/models
 * @see https://platform.claude.com/docs/en/about-claude/models/overview
 */

export interface ModelLimits {
  contextWindow: number;
  maxOutput: number;
}

type Row = readonly [prefix: string, contextWindow: number, maxOutput: number];

/**
 * The highest token id a chat model's `logit_bias` may name: its encoding's `<|endoftext|>`.
 * cl100k_base (GPT-4, GPT-4 Turbo, GPT-3.5 Turbo) ends at 100257, as upstream's refusal says;
 * o200k_base (GPT-4o and later, the o-series) has its `<|endoftext|>` at 199999.
 * @see https://github.com/openai/openai-python/issues/572
 * @see https://github.com/openai/tiktoken/blob/main/tiktoken_ext/openai_public.py
 */
const CL100K_LAST = 100_257;
const O200K_LAST = 199_999;
const CL100K_MODELS: readonly string[] = ['gpt-4-', 'gpt-3.5-turbo'];

/** Longest prefix first wins, so `gpt-4o-mini` is read before `gpt-4o`. */
const CHAT_MODELS: readonly Row[] = [
  ['gpt-5', 400_000, 128_000],
  ['gpt-4.1', 1_047_576, 32_768],
  ['gpt-4o', 128_000, 16_384],
  ['gpt-4-turbo', 128_000, 4_096],
  ['gpt-4', 8_192, 8_192],
  ['gpt-3.5-turbo', 16_385, 4_096],
  ['o4-mini', 200_000, 100_000],
  ['o3', 200_000, 100_000],
  ['o1', 200_000, 100_000],
];

/**
 * @see https://platform.claude.com/docs/en/models/opus-4-6/overview
 * @see https://platform.claude.com/docs/en/models/sonnet-4-6/overview
 */
const MESSAGES_MODELS: readonly Row[] = [
  ['claude-opus-4-7', 1_000_000, 128_000],
  ['claude-opus-4-6', 1_000_000, 128_000],
  ['claude-sonnet-4-6', 1_000_000, 128_000],
  ['claude-opus-4-1', 200_000, 32_000],
  ['claude-opus-4-0', 200_000, 32_000],
  ['claude-opus-4-20250514', 200_000, 32_000],
  ['claude-opus-4', 200_000, 64_000],
  ['claude-sonnet-4', 200_000, 64_000],
  ['claude-haiku-4', 200_000, 64_000],
  ['claude-3-7-sonnet', 200_000, 64_000],
  ['claude-3-5-haiku', 200_000, 8_192],
  ['claude-3-5-sonnet', 200_000, 8_192],
  ['claude-3-haiku', 200_000, 4_096],
];

/**
 * Models the table does not know (`chat-model`, `claude-like`, ...). A messages reply may have
 * 128 000 tokens, as the current models' may: the Vercel AI SDK asks that many of a model it
 * does not know when no `maxOutputTokens` is set.
 */
export const DEFAULT_LIMITS: Record<ReplyApi, ModelLimits> = {
  chat: { contextWindow: 128_000, maxOutput: 16_384 },
  messages: { contextWindow: 200_000, maxOutput: 128_000 },
};

const sorted = (rows: readonly Row[]) => [...rows].sort((a, b) => b[0].length - a[0].length);
const TABLES: Record<ReplyApi, readonly Row[]> = {
  chat: sorted(CHAT_MODELS),
  messages: sorted(MESSAGES_MODELS),
};

export function limitsOf(api: ReplyApi, model: string): ModelLimits {
  const row = TABLES[api].find(([prefix]) => model.startsWith(prefix));
  return row ? { contextWindow: row[1], maxOutput: row[2] } : DEFAULT_LIMITS[api];
}

/** The last token id `logit_bias` may name for a chat model (`gpt-4` itself is cl100k too). */
export function lastTokenIdOf(model: string): number {
  const cl100k = model === 'gpt-4' || CL100K_MODELS.some((prefix) => model.startsWith(prefix));
  return cl100k ? CL100K_LAST : O200K_LAST;
}

/**
 * Whether a chat model takes images (`image_url` parts): all but GPT-3.5 Turbo (`gpt-35-turbo`
 * in Azure's spelling), the GPT-4 of 2023 (`gpt-4`, `gpt-4-0613`, `gpt-4-32k`,
 * `gpt-4-1106-preview`, `gpt-4-turbo-preview`... but `gpt-4-turbo` and
 * `gpt-4-1106-vision-preview`, which see) and the o-series' `o1-mini` and `o3-mini`. A name the
 * table does not know (a deployment's) takes them.
 * @see https://github.com/vllm-project/vllm/issues/11629
 * @see https://github.com/browser-use/web-ui/issues/274
 * @see https://platform.openai.com/docs/guides/images-vision
 */
export const seesImages = (model: string): boolean =>
  !/^(gpt-3\.?5-turbo|gpt-4(-0314|-0613|-32k|-\d{4}-preview$|-turbo-preview$|$)|o1-mini|o3-mini)/.test(
    model,
  );

/**
 * The reasoning models (the o-series, GPT-5 but its `gpt-5-chat` snapshots): they take
 * `max_completion_tokens` only, and the default `temperature` only.
 * @see https://learn.microsoft.com/en-us/azure/ai-services/openai/how-to/reasoning
 */
export function isReasoningModel(model: string): boolean {
  return /^(o1|o3|o4|gpt-5)/.test(model) && !model.startsWith('gpt-5-chat');
}

/** A model name, with or without a dated snapshot suffix (`-2025-08-07`). */
const SNAPSHOT = '(?:-\\d{4}-\\d{2}-\\d{2})?$';

/**
 * The `reasoning_effort` values each reasoning model takes, and the one it reasons with when
 * the request names none: the o-series `low` to `high`; GPT-5 (and mini, nano) `minimal` too;
 * `gpt-5-pro` only `high`; GPT-5.1 `none` to `high`, by default `none`; GPT-5.2 `xhigh` too (it
 * is taken by the models after `gpt-5.1-codex-max`). The models before GPT-5.1 reason at
 * `medium` by default. Other reasoning names (codex variants, later versions) take every value.
 * @see https://learn.microsoft.com/en-us/javascript/api/@azure/ai-projects/reasoningeffort
 * @see https://docs.rs/openai-tools/3.0.0/openai_tools/responses/request/enum.ReasoningEffort.html
 * @see https://github.com/openai/openai-agents-python/issues/2089
 */
const EFFORTS: ReadonlyArray<readonly [RegExp, readonly string[], string]> = [
  [new RegExp(`^(?:o1|o3-mini|o3|o4-mini)${SNAPSHOT}`), ['low', 'medium', 'high'], 'medium'],
  [new RegExp(`^gpt-5(?:-mini|-nano)?${SNAPSHOT}`), ['minimal', 'low', 'medium', 'high'], 'medium'],
  [new RegExp(`^gpt-5-pro${SNAPSHOT}`), ['high'], 'high'],
  [new RegExp(`^gpt-5\\.1${SNAPSHOT}`), ['none', 'low', 'medium', 'high'], 'none'],
  [new RegExp(`^gpt-5\\.2${SNAPSHOT}`), ['none', 'low', 'medium', 'high', 'xhigh'], 'none'],
];

/**
 * What a chat model makes of `reasoning_effort`: the values it takes; `'refused'` for a model
 * the table knows that does not reason (GPT-4o, GPT-4.1, `gpt-5-chat`...), which refuses the
 * parameter; undefined (every value) for a name the table does not know, as a deployment's.
 */
export function reasoningEffortsOf(model: string): readonly string[] | 'refused' | undefined {
  for (const [pattern, efforts] of EFFORTS) if (pattern.test(model)) return efforts;
  const known = TABLES.chat.some(([prefix]) => model.startsWith(prefix));
  return known && !isReasoningModel(model) ? 'refused' : undefined;
}

/**
 * The effort a chat model reasons with when the request names none: its row's; `medium` for
 * another reasoning model; `none` for a model that does not reason or a name the table does
 * not know (a deployment's: it reasons when asked to).
 */
export function defaultEffortOf(model: string): string {
  for (const [pattern, , effort] of EFFORTS) if (pattern.test(model)) return effort;
  return isReasoningModel(model) ? 'medium' : 'none';
}

/**
 * The Claude models that keep the thinking of every earlier turn in the context by default:
 * Opus 4.5 and later, Sonnet 4.6 and later; the others (Haiku, earlier Opus and Sonnet, an
 * unknown name) keep only the last turn's.
 * @see https://platform.claude.com/docs/en/build-with-claude/context-editing
 */
export const keepsAllThinking = (model: string): boolean =>
  /^claude-(opus-(4-[5-9]|[5-9])|sonnet-(4-[6-9]|[5-9]))/.test(model);

/** The Claude 4.6 models and later (an unknown name is not one of them). */
const CLAUDE_4_6_ON = /^claude-(opus|sonnet|haiku)-(4-[6-9]|[5-9])/;

/**
 * The Claude models that take `temperature` or `top_p`, not both: Opus 4.1, the 4.5 models and
 * later.
 * @see https://github.com/browseros-ai/BrowserOS/issues/208
 * @see https://github.com/open-webui/functions/pull/9
 */
const ONE_SAMPLER = ['claude-opus-4-1', 'claude-sonnet-4-5', 'claude-haiku-4-5', 'claude-opus-4-5'];

export const takesOneSampler = (model: string): boolean =>
  ONE_SAMPLER.some((prefix) => model.startsWith(prefix)) || CLAUDE_4_6_ON.test(model);

/**
 * The Claude models that refuse a prefill (a conversation ending with an assistant turn): the
 * 4.6 models and later.
 * @see https://github.com/langchain-ai/deepagents/issues/1585
 * @see https://github.com/cortexkit/magic-context/issues/511
 */
export const refusesPrefill = (model: string): boolean => CLAUDE_4_6_ON.test(model);

/**
 * What a Claude model makes of thinking: `none` for the 3 family but 3.7 Sonnet (no extended
 * thinking); `manual` for 3.7 Sonnet and the 4 models before 4.6 (`enabled` with a budget, not
 * `adaptive`); `adaptive` for Opus 4.7 and later and Sonnet 5 and later (`adaptive` only, its
 * depth set by `output_config.effort`); `both` for the 4.6 models and another name (Haiku 5.5, a
 * gateway's own name).
 * @see https://platform.claude.com/docs/en/about-claude/models/extended-thinking-models
 * @see https://platform.claude.com/docs/en/build-with-claude/adaptive-thinking
 * @see https://docs.aws.amazon.com/bedrock/latest/userguide/claude-messages-adaptive-thinking.html
 */
export function thinkingOf(model: string): 'none' | 'manual' | 'adaptive' | 'both' {
  if (/^claude-(3-7-sonnet|(opus|sonnet)-4(-[0-5])?(-\d{8})?$|haiku-4)/.test(model))
    return 'manual';
  if (/^claude-(\d|instant)/.test(model)) return 'none';
  if (/^claude-(opus-(4-([7-9]|\d\d)(?!\d)|[5-9])|sonnet-[5-9])/.test(model)) return 'adaptive';
  return 'both';
}

/**
 * Whether the interleaved-thinking beta (`interleaved-thinking-2025-05-14`) lets a model think
 * between tool calls with manual thinking: the Claude 4 models up to Opus 4.5 and Sonnet 4.6; on
 * Opus 4.6 and later it is ignored (their adaptive thinking interleaves of itself), on Haiku and
 * the 3 family it does nothing. A name the table does not know is taken to interleave.
 * @see https://platform.claude.com/docs/en/build-with-claude/extended-thinking#interleaved-thinking
 */
export const interleavesByBeta = (model: string): boolean =>
  !model.startsWith('claude-') ||
  /^claude-(opus-4(-[015])?|sonnet-4(-[056])?)(-\d{8})?$/.test(model);

/**
 * The Claude models that take no sampling parameters (`temperature`, `top_p`, `top_k`) but at
 * their defaults: Opus 4.7 and later.
 * @see https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7
 * @see https://github.com/UKGovernmentBEIS/inspect_ai/issues/3721
 */
export const refusesSampling = (model: string): boolean =>
  /^claude-opus-(4-([7-9]|\d\d)(?!\d)|[5-9])/.test(model);

/**
 * The Claude models that refuse `output_config.effort`: the 3 family, and the 4 models before
 * Opus 4.5 and Sonnet 4.6 (Haiku 4.5 and Sonnet 4.5 among them).
 * @see https://platform.claude.com/docs/en/build-with-claude/effort
 */
export const refusesEffort = (model: string): boolean =>
  /^claude-(\d|instant|haiku-4|sonnet-4(-[0-5])?(-\d{8})?$|opus-4(-[0-4])?(-\d{8})?$)/.test(model);

/**
 * Claude models from before compaction (`compact_20260112`, and on demand): the 3 family and
 * older, Haiku before 5, Opus and Sonnet before 4.6. Another name (the 4.6 models and later,
 * Haiku 5.5, Mythos, a gateway's own name) may compact.
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction-background
 */
const BEFORE_COMPACTION =
  /^claude-(\d|instant|haiku-[0-4](?!\d)|(opus|sonnet)-4(-[0-5])?(-\d{8})?$)/;

export const compacts = (model: string): boolean => !BEFORE_COMPACTION.test(model);

/**
 * Claude models that refuse `role: "system"` messages in `messages` (mid-conversation system
 * messages): the 3 family and older, Haiku before 5, Sonnet 4 and 5, Opus before 4.8. Another
 * name (Opus 4.8 and later, Sonnet and Haiku 5.5, Fable, Mythos, a gateway's own name) takes them.
 * @see https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages
 */
const BEFORE_SYSTEM_MESSAGES =
  /^claude-(\d|instant|haiku-[0-4](?!\d)|sonnet-4|sonnet-5(-\d{8})?$|opus-4(-[0-7])?(-\d{8})?$)/;

export const takesSystemMessages = (model: string): boolean => !BEFORE_SYSTEM_MESSAGES.test(model);

/** The table, for docs/limits.md and the control surface. */
export const MODEL_TABLE = {
  chat: CHAT_MODELS,
  messages: MESSAGES_MODELS,
  defaults: DEFAULT_LIMITS,
};
