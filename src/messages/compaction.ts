import { fieldError, type PathSegment } from '../platform/errors.js';
import { countTokens, truncateTokens } from '../platform/tokens.js';
import { compacts } from '../text/models.js';
import type { CacheUsage, PromptBlock } from '../text/prompt-cache.js';
import { type MessagesPrompt, onlyCompaction, textOf } from './prompt/index.js';
import type { Iteration, MessageParam, MessagesRequest, Usage } from './schemas.js';
import { cacheTokens, type MessageDone, messageUsage, outputDemand } from './service.js';
import { signCompaction } from './signed-compaction.js';

/**
 * Compaction (`compact_20260112`, docs/messages.md "Compaction"): past its trigger, the conversation is
 * summarized first, and the reply is written from the tools, the system prompt and that summary.
 * The summary is the emulator's own, made from the conversation (never the model's words): how
 * many messages and tool calls it held, the summary before it, and the user's latest message.
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction
 */

/**
 * What the summary is written with when the edit sends no `instructions`, counted into the
 * compaction step's input tokens (upstream's own prompt is not published word for word).
 */
export const DEFAULT_COMPACTION_PROMPT =
  'Write a summary of the transcript above that lets you continue the task: the request, what was done and found, the decisions made, and what is left to do. Wrap it in <summary></summary>.';

/** Tokens of the summary an earlier compaction wrote that a new summary repeats, at most. */
const EARLIER_SUMMARY_TOKENS = 2000;
/** Tokens of the user's latest message a summary quotes, at most. */
const LATEST_MESSAGE_TOKENS = 500;

/**
 * The summary of a conversation: what came after its last summary (`summarized`, which
 * readPrompt found: the messages before it are already in it), that summary itself, and the
 * user's latest message, in a few lines.
 */
export function summarize(
  messages: readonly MessageParam[],
  summarized: MessagesPrompt['summarized'],
): string {
  const counts = { user: 0, assistant: 0 };
  const calls = new Map<string, number>();
  let latest = '';
  for (const message of messages.slice(summarized?.message ?? 0)) {
    // (a turn of compaction blocks alone is the earlier summary, quoted below, not a message;
    // a system message is the operator's, neither side's)
    if (onlyCompaction(message) || message.role === 'system') continue;
    counts[message.role]++;
    if (message.role === 'user') {
      const text = textOf(message);
      if (text !== '') latest = text;
    }
    if (typeof message.content === 'string') continue;
    for (const block of message.content) {
      if (block.type === 'tool_use') calls.set(block.name, (calls.get(block.name) ?? 0) + 1);
    }
  }
  const used = [...calls].map(([name, n]) => `${name} ×${n}`).join(', ');
  const total = counts.user + counts.assistant;
  const lines = [
    `Summary of the conversation so far: ${total} message${total === 1 ? '' : 's'} (${counts.user} from the user, ${counts.assistant} from the assistant)${used === '' ? '' : `; tool calls: ${used}`}.`,
  ];
  if (summarized !== undefined) {
    lines.push(`Before that: ${truncateTokens(summarized.summary, EARLIER_SUMMARY_TOKENS).text}`);
  }
  if (latest !== '') {
    lines.push(`The user's latest message: ${truncateTokens(latest, LATEST_MESSAGE_TOKENS).text}`);
  }
  return lines.join('\n');
}

/**
 * The prompt the reply is written from once the conversation is summarized: what comes before
 * the messages (tools, system; their cache breakpoints kept), then the summary.
 */
export const compactedPrompt = (prompt: MessagesPrompt, summary: string): PromptBlock[] => [
  ...prompt.blocks.slice(0, prompt.head),
  { text: summary, opens: 'assistant' },
];

/** One step's usage, as `usage.iterations` lists it: a compaction's, or (with a model) the message's. */
export function iteration(cache: CacheUsage, outputTokens: number, model?: string): Iteration {
  const { input_tokens, ...cached } = cacheTokens(cache);
  const fields = { input_tokens, output_tokens: outputTokens, ...cached };
  return model === undefined
    ? { type: 'compaction', ...fields }
    : { type: 'message', ...fields, model };
}

/** The summarizing step: the whole prompt and the summarizing prompt in, `output` tokens out. */
const summarizing = (read: CacheUsage, instructions: string | undefined, output: number) =>
  iteration(
    { ...read, input: read.input + countTokens(instructions ?? DEFAULT_COMPACTION_PROMPT) },
    output,
  );

/** No tokens: a paused compaction's top-level usage, which counts message steps only. */
const NO_TOKENS: CacheUsage = {
  total: 0,
  input: 0,
  creation: 0,
  read: 0,
  creation5m: 0,
  creation1h: 0,
};

/**
 * The usage of a compacted reply: the summarizing step (the whole prompt and the summarizing
 * prompt in, the summary out; `read` its cache account), then the message step (`reply`, the
 * compacted prompt's account), whose tokens are the top-level ones; a paused compaction has no
 * message step, and 0 at the top.
 */
export function compactedUsage(
  read: CacheUsage,
  reply: CacheUsage | undefined,
  compaction: { instructions: string | undefined },
  summary: string,
  outputTokens: number,
  model: string,
): Usage {
  const steps = [summarizing(read, compaction.instructions, countTokens(summary))];
  if (reply === undefined) return { ...messageUsage(NO_TOKENS, 0), iterations: steps };
  steps.push(iteration(reply, outputTokens, model));
  return { ...messageUsage(reply, outputTokens), iterations: steps };
}

/**
 * What a compaction request (top-level `compaction`, on demand) may not carry, in the order
 * upstream lists it: `context_management`, `stop_sequences`, a structured-output format, a
 * forced tool; a model from before compaction. (readPrompt refuses an empty conversation,
 * with nothing to summarize, and one ending on a tool call with no result yet.)
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand
 */
export function checkCompactionRequest(body: MessagesRequest): void {
  const refuse = (path: PathSegment[]) => {
    throw fieldError(path, 'cannot be combined with `compaction`');
  };
  if (body.context_management != null) refuse(['context_management']);
  if (body.stop_sequences?.length) refuse(['stop_sequences']);
  const demand = outputDemand(body);
  if (demand) refuse(demand);
  if (!compacts(body.model)) {
    throw fieldError(['compaction'], `not supported on ${body.model}`);
  }
}

/**
 * The answer to a compaction request: the signed summary alone (`stop_reason: "compaction"`),
 * or, when the summary does not fit `limit` (max_tokens, or what the context window leaves),
 * no block and the reason it stopped. Usage: zero at the top, the summarizing step in
 * `iterations` (`read`: the conversation's cache account).
 */
export function compactionAnswer(
  messages: readonly MessageParam[],
  prompt: MessagesPrompt,
  read: CacheUsage,
  limit: number,
  maxTokens: number,
): { done: MessageDone; usage: Usage } {
  const summary = summarize(messages, prompt.summarized);
  const tokens = countTokens(summary);
  const fits = tokens <= limit;
  const done: MessageDone = {
    content: fits
      ? [{ type: 'compaction', content: summary, signature: signCompaction(summary) }]
      : [],
    stopReason: fits
      ? 'compaction'
      : limit < maxTokens
        ? 'model_context_window_exceeded'
        : 'max_tokens',
    stopSequence: null,
    outputTokens: 0,
  };
  const step = summarizing(read, prompt.summarize?.instructions, fits ? tokens : limit);
  return { done, usage: { ...messageUsage(NO_TOKENS, 0), iterations: [step] } };
}
