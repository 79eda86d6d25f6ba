import {
  deltaFrames,
  frameTemplate,
  type Pacing,
  type SseFrame,
  sseData,
} from '../platform/sse.js';
import { splitTokens } from '../platform/tokens.js';
import type { ChatCompletionRequest, ChatUsage } from './schemas.js';
import {
  type ChatIdentity,
  type ChatPlan,
  choiceFilters,
  SAFE_PROMPT_FILTERS,
  servedTier,
  systemFingerprint,
  tokenLogprobs,
} from './service.js';

/** Tokens of tool-call arguments per delta. */
export const ARGUMENT_TOKENS_PER_DELTA = 4;

/**
 * The `chat.completion.chunk` frames of a streamed completion, Azure-style: a first frame with
 * only prompt filter results, then per choice a role frame, its content (one frame per token)
 * or its tool calls (per call index: id, type and name first, then `arguments` in pieces), and
 * a finish frame; with `include_usage` a usage frame with no choices; then `[DONE]`.
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 * @see https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/content-filter
 */
export function chatStreamFrames(
  who: ChatIdentity,
  body: ChatCompletionRequest,
  plan: ChatPlan,
  usage: ChatUsage,
  options: {
    pacing: Pacing;
    /** Batch unpaced content frames into one write (off when a fault must count events). */
    batch?: boolean;
  },
): SseFrame[] {
  const includeUsage = body.stream_options?.include_usage === true;
  const tier = servedTier(body);
  const top = body.logprobs === true ? (body.top_logprobs ?? 0) : -1;
  const legacy = plan.prompt.legacy;
  const head = {
    id: who.id,
    object: 'chat.completion.chunk',
    created: who.created,
    model: who.model,
    system_fingerprint: systemFingerprint(who.model),
    ...(tier ? { service_tier: tier } : {}),
  };
  const tail = includeUsage ? { usage: null } : {};
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
  const { pacing } = options;
  let started = false;
  const paced = (data: unknown): SseFrame => {
    const delayMs = started ? pacing.betweenMs : pacing.firstMs;
    started = true;
    return sseData(JSON.stringify(data), delayMs);
  };
  const chunk = (choice: Record<string, unknown>) => ({ ...head, choices: [choice], ...tail });

  plan.choices.forEach((choice, index) => {
    const calls = choice.calls;
    const callChunk = (delta: object) =>
      chunk({ index, delta, logprobs: null, finish_reason: null, content_filter_results: {} });
    const text = choice.text ?? '';
    const logprobs = top >= 0 ? { content: [], refusal: null } : null;
    const role = { role: 'assistant', content: choice.text === null ? null : '', refusal: null };
    frames.push(
      sseData(
        JSON.stringify(
          chunk({
            index,
            delta: role,
            logprobs,
            finish_reason: null,
            content_filter_results: {},
          }),
        ),
      ),
    );
    if (text !== '') {
      const filters = choiceFilters(choice);
      if (top >= 0) {
        // Each token carries its own log probability: one frame each, no template.
        for (const entry of tokenLogprobs(text, top)) {
          frames.push(
            paced(
              chunk({
                index,
                delta: { content: entry.token },
                logprobs: { content: [entry], refusal: null },
                finish_reason: null,
                content_filter_results: filters,
              }),
            ),
          );
        }
      } else {
        const content = frameTemplate(undefined, (piece) =>
          chunk({
            index,
            delta: { content: piece },
            logprobs: null,
            finish_reason: null,
            content_filter_results: filters,
          }),
        );
        const firstMs = started ? pacing.betweenMs : pacing.firstMs;
        frames.push(
          ...deltaFrames(
            splitTokens(text, 1),
            content,
            { firstMs, betweenMs: pacing.betweenMs },
            options.batch ?? true,
          ),
        );
        started = true;
      }
    }
    calls.forEach((call, k) => {
      const opening = legacy
        ? { function_call: { name: call.name, arguments: '' } }
        : {
            tool_calls: [
              {
                index: k,
                id: call.id,
                type: 'function',
                function: { name: call.name, arguments: '' },
              },
            ],
          };
      frames.push(paced(callChunk(opening)));
      const args = frameTemplate(undefined, (piece) =>
        callChunk(
          legacy
            ? { function_call: { arguments: piece } }
            : { tool_calls: [{ index: k, function: { arguments: piece } }] },
        ),
      );
      const pieces = splitTokens(call.arguments, ARGUMENT_TOKENS_PER_DELTA);
      const pacing = { firstMs: options.pacing.betweenMs, betweenMs: options.pacing.betweenMs };
      frames.push(...deltaFrames(pieces, args, pacing, options.batch ?? true));
    });
    frames.push(
      paced(
        chunk({
          index,
          delta: {},
          logprobs: null,
          finish_reason: choice.finishReason,
          content_filter_results:
            calls.length > 0 ? {} : choice.filtered ? choiceFilters(choice) : {},
        }),
      ),
    );
  });
  if (includeUsage) frames.push(paced({ ...head, choices: [], usage }));
  frames.push(sseData('[DONE]'));
  return frames;
}
