import { countTokens, truncateTokens } from '../platform/tokens.js';
import type { CacheUsage, PromptBlock } from '../text/prompt-cache.js';
import type { Compaction } from './prompt.js';
import type { Iteration, MessageParam } from './schemas.js';

/**
 * Compaction (`compact_20260112`, README "Compaction"): past its trigger, the conversation is
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

/** The text a message's text blocks hold. */
const textOf = (message: MessageParam): string =>
  typeof message.content === 'string'
    ? message.content
    : message.content
        .map((block) => (block.type === 'text' ? block.text : ''))
        .filter((text) => text !== '')
        .join('\n');

/**
 * The summary of a conversation: what came after its last summary (the messages before one
 * are already in it), that summary itself, and the user's latest message, in a few lines.
 */
export function summarize(messages: readonly MessageParam[]): string {
  let from = 0;
  let earlier: string | undefined;
  messages.forEach((message, i) => {
    if (typeof message.content === 'string') return;
    for (const block of message.content) {
      if (block.type === 'compaction' && typeof block.content === 'string') {
        from = i;
        earlier = block.content;
      }
    }
  });
  const counts = { user: 0, assistant: 0 };
  const calls = new Map<string, number>();
  let latest = '';
  for (const message of messages.slice(from)) {
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
  if (earlier !== undefined) {
    lines.push(`Before that: ${truncateTokens(earlier, EARLIER_SUMMARY_TOKENS).text}`);
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
export const compactedPrompt = (
  blocks: readonly PromptBlock[],
  head: number,
  summary: string,
): PromptBlock[] => [
  ...blocks.slice(0, head).map((block) => ({ ...block })),
  { text: summary, opens: 'assistant' },
];

/** One step's usage, as `usage.iterations` lists it. */
export function iteration(
  cache: Pick<CacheUsage, 'input' | 'creation' | 'read' | 'creation5m' | 'creation1h'>,
  outputTokens: number,
  model?: string,
): Iteration {
  const fields = {
    input_tokens: cache.input,
    output_tokens: outputTokens,
    cache_creation_input_tokens: cache.creation,
    cache_read_input_tokens: cache.read,
    cache_creation: {
      ephemeral_5m_input_tokens: cache.creation5m,
      ephemeral_1h_input_tokens: cache.creation1h,
    },
  };
  return model === undefined
    ? { type: 'compaction', ...fields }
    : { type: 'message', ...fields, model };
}

/** The compaction step: it reads the whole prompt and the summarizing prompt, writes the summary. */
export const compactionIteration = (
  cache: CacheUsage,
  compaction: Compaction,
  summary: string,
): Iteration =>
  iteration(
    {
      ...cache,
      input: cache.input + countTokens(compaction.instructions ?? DEFAULT_COMPACTION_PROMPT),
    },
    countTokens(summary),
  );
