import { fieldError, GatewayError } from '../../platform/errors.js';
import type { ToolChoice } from '../../text/agent.js';
import type { ContentBlockParam, MessageParam } from '../schemas.js';
import { type Request, turnStart } from './request.js';

const DOCS = 'https://docs.claude.com/en/docs/build-with-claude/extended-thinking';

/**
 * Thinking's rules; true when thinking is on. `interleaved`: thinking interleaves (adaptive
 * thinking, or the interleaved-thinking beta on a model it works on) with tools, where the
 * budget covers every thinking block of the turn and may exceed `max_tokens`.
 * @see https://platform.claude.com/docs/en/build-with-claude/extended-thinking#interleaved-thinking
 */
export function readThinking(body: Request, choice: ToolChoice, interleaved: boolean): boolean {
  const thinking = body.thinking;
  if (!thinking || thinking.type === 'disabled') return false;
  if (thinking.type === 'enabled') {
    // (the least budget, 1024, is the schema's: schemas/tools.ts THINKING_MIN_BUDGET_TOKENS)
    if (
      !interleaved &&
      body.max_tokens !== undefined &&
      body.max_tokens <= thinking.budget_tokens
    ) {
      throw new GatewayError(
        400,
        `\`max_tokens\` must be greater than \`thinking.budget_tokens\`. Please consult our documentation at ${DOCS}#max-tokens-and-context-window-size`,
      );
    }
  }
  // "Adaptive thinking, including on models where thinking is on by default, supports forced
  // tool use": only manual thinking refuses it.
  // @see https://platform.claude.com/docs/en/build-with-claude/extended-thinking#extended-thinking-with-tool-use
  if (thinking.type === 'enabled' && (choice.mode === 'any' || choice.mode === 'named')) {
    throw new GatewayError(400, 'Thinking may not be enabled when tool_choice forces tool use.');
  }
  if (body.temperature !== undefined && body.temperature !== 1) {
    throw new GatewayError(
      400,
      `\`temperature\` may only be set to 1 when thinking is enabled. Please consult our documentation at ${DOCS}#important-considerations-when-using-extended-thinking`,
    );
  }
  if (body.top_k !== undefined) {
    throw fieldError(['top_k'], 'may not be set when thinking is enabled');
  }
  if (body.top_p !== undefined && body.top_p < 0.95) {
    throw fieldError(['top_p'], 'must be between 0.95 and 1 when thinking is enabled');
  }
  return true;
}

/**
 * With thinking on, the last assistant turn, if it called tools, must start with its thinking
 * (an agent loop sends it back with the tool results), in upstream's words.
 * @see https://github.com/mastra-ai/mastra/issues/7799
 * @see https://github.com/anomalyco/opencode/issues/3077
 */
export function checkThinkingLeads(messages: Request['messages'], last: number): void {
  const i = turnStart(messages, last);
  const turn = messages.slice(i, last + 1);
  const calls = turn.some(
    (m) => typeof m.content !== 'string' && m.content.some((block) => block.type === 'tool_use'),
  );
  if (!calls) return;
  const content = messages[i]?.content;
  // (a compaction's summary may come first: the turn starts after it)
  const at =
    typeof content === 'string'
      ? 0
      : Math.max(0, content?.findIndex((b) => b.type !== 'compaction') ?? 0);
  const first = typeof content === 'string' ? { type: 'text' } : content?.[at];
  if (first?.type === 'thinking' || first?.type === 'redacted_thinking') return;
  throw new GatewayError(
    400,
    `messages.${i}.content.${at}.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first?.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at ${DOCS}`,
  );
}

const isThinking = (block: ContentBlockParam) =>
  block.type === 'thinking' || block.type === 'redacted_thinking';

/**
 * The first message whose thinking stays in the context: that of the `keep`-th latest
 * assistant turn that holds thinking (0 when fewer hold some: all stay).
 */
export function firstKeptThinking(messages: readonly MessageParam[], keep: number): number {
  if (keep === Number.POSITIVE_INFINITY) return 0;
  let seen = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as MessageParam;
    if (m.role !== 'assistant' || typeof m.content === 'string' || !m.content.some(isThinking)) {
      continue;
    }
    if (++seen === keep) return i;
  }
  return 0;
}
