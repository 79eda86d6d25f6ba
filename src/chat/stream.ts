import {
  deltaFrames,
  frameTemplate,
  type Pacing,
  type SseFrame,
  sseData,
} from '../platform/sse.js';
import { splitTokens } from '../platform/tokens.js';
import { choiceFilterResults } from '../text/content-filter.js';
import type { ChatUsage } from './schemas.js';
import {
  type ChatIdentity,
  type ChatPlan,
  SAFE_CHOICE_FILTERS,
  SAFE_PROMPT_FILTERS,
  systemFingerprint,
} from './service.js';

/**
 * The `chat.completion.chunk` frames of a streamed completion, Azure-style: a first frame with
 * only prompt filter results, then per choice a role frame, one frame per token and a finish
 * frame; with `include_usage` a usage frame with no choices; then `[DONE]`.
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 * @see https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/content-filter
 */
export function chatStreamFrames(
  who: ChatIdentity,
  plan: ChatPlan,
  usage: ChatUsage,
  options: {
    includeUsage: boolean;
    pacing: Pacing;
    /** Batch unpaced content frames into one write (off when a fault must count events). */
    batch?: boolean;
  },
): SseFrame[] {
  const head = {
    id: who.id,
    object: 'chat.completion.chunk',
    created: who.created,
    model: who.model,
    system_fingerprint: systemFingerprint(who.model),
  };
  const tail = options.includeUsage ? { usage: null } : {};
  const frames: SseFrame[] = [
    sseData(
      JSON.stringify({
        choices: [],
        created: 0,
        id: '',
        model: '',
        object: '',
        prompt_filter_results: SAFE_PROMPT_FILTERS,
      }),
    ),
  ];
  let started = false;
  const paced = (data: unknown): SseFrame => {
    const delayMs = started ? options.pacing.betweenMs : options.pacing.firstMs;
    started = true;
    return sseData(JSON.stringify(data), delayMs);
  };
  const chunk = (choice: Record<string, unknown>) => ({ ...head, choices: [choice], ...tail });

  plan.choices.forEach((choice, index) => {
    frames.push(
      sseData(
        JSON.stringify(
          chunk({
            index,
            delta: { role: 'assistant', content: '', refusal: null },
            logprobs: null,
            finish_reason: null,
            content_filter_results: {},
          }),
        ),
      ),
    );
    const content = frameTemplate(undefined, (text) =>
      chunk({
        index,
        delta: { content: text },
        logprobs: null,
        finish_reason: null,
        content_filter_results: SAFE_CHOICE_FILTERS,
      }),
    );
    const pieces = splitTokens(choice.text);
    const { betweenMs } = options.pacing;
    const firstMs = started ? betweenMs : options.pacing.firstMs;
    frames.push(...deltaFrames(pieces, content, { firstMs, betweenMs }, options.batch ?? true));
    if (pieces.length > 0) started = true;
    frames.push(
      paced(
        chunk({
          index,
          delta: {},
          logprobs: null,
          finish_reason: choice.finishReason,
          content_filter_results: choice.filtered ? choiceFilterResults(choice.filtered) : {},
        }),
      ),
    );
  });
  if (options.includeUsage) frames.push(paced({ ...head, choices: [], usage }));
  frames.push(sseData('[DONE]'));
  return frames;
}
