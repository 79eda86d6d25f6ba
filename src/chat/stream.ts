import { frameTemplate, jsonPieces, type Pacing, type SseProducer } from '../platform/sse.js';
import type { ChatCompletionRequest, ChatUsage } from './schemas.js';
import {
  type ChatIdentity,
  type ChatPlan,
  choiceFilters,
  logprobEntries,
  SAFE_PROMPT_FILTERS,
  servedTier,
  systemFingerprint,
  wireCall,
} from './service.js';

/** Tokens of tool-call arguments per delta. */
export const ARGUMENT_TOKENS_PER_DELTA = 4;

const FIRST_FRAME = JSON.stringify({
  choices: [],
  created: 0,
  id: '',
  model: '',
  object: '',
  prompt_filter_results: SAFE_PROMPT_FILTERS,
});

/**
 * The `chat.completion.chunk` frames of a streamed completion, Azure-style: a first frame with
 * only prompt filter results, then per choice a role frame, its content (one frame per token)
 * or its tool calls (per call index: id, type and name first, then `arguments` in pieces), and
 * a finish frame; with `include_usage` a usage frame with no choices; then `[DONE]`. The first
 * content frame waits `firstMs`, every later frame `betweenMs`.
 * @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming
 * @see https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/content-filter
 */
export const chatStream = (
  who: ChatIdentity,
  body: ChatCompletionRequest,
  plan: ChatPlan,
  usage: ChatUsage,
  pacing: Pacing,
): SseProducer =>
  function* (sink) {
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
    const chunk = (choice: Record<string, unknown>) => ({ ...head, choices: [choice], ...tail });
    let started = false;
    const pause = () => {
      const ms = started ? pacing.betweenMs : pacing.firstMs;
      if (!started) sink.content();
      started = true;
      return ms;
    };
    sink.data(FIRST_FRAME);

    for (let index = 0; index < plan.choices.length; index++) {
      const choice = plan.choices[index] as ChatPlan['choices'][number];
      const frame = (delta: object, extra: object = {}) =>
        chunk({
          index,
          delta,
          logprobs: null,
          finish_reason: null,
          content_filter_results: {},
          ...extra,
        });
      const role = { role: 'assistant', content: choice.text === null ? null : '', refusal: null };
      sink.data(
        JSON.stringify(frame(role, top >= 0 ? { logprobs: { content: [], refusal: null } } : {})),
      );
      const text = choice.text ?? '';
      if (text !== '') {
        const filters = choiceFilters(choice);
        if (top >= 0) {
          // Each token carries its own log probability: one frame each, no template.
          for (const entry of logprobEntries(text, top)) {
            const ms = pause();
            if (ms > 0 || sink.due) yield ms;
            if (sink.stopped) return;
            sink.data(
              JSON.stringify(
                frame(
                  { content: entry.token },
                  {
                    logprobs: { content: [entry], refusal: null },
                    content_filter_results: filters,
                  },
                ),
              ),
            );
          }
        } else {
          const content = frameTemplate(undefined, (piece) =>
            frame({ content: piece }, { content_filter_results: filters }),
          );
          const pieces = jsonPieces(text, 1);
          for (let i = 0; i < pieces.ends.length; i++) {
            const ms = pause();
            if (ms > 0 || sink.due) yield ms;
            if (sink.stopped) return;
            sink.piece(content, pieces, i);
          }
        }
      }
      for (let k = 0; k < choice.calls.length; k++) {
        const call = choice.calls[k] as ChatPlan['choices'][number]['calls'][number];
        // A custom tool's call streams its input as a function's does its arguments.
        // @see https://github.com/openai/openai-openapi/issues/576
        const custom = call.type === 'custom';
        const opening = legacy
          ? { function_call: { name: call.name, arguments: '' } }
          : { tool_calls: [{ index: k, id: call.id, ...wireCall(call, '') }] };
        let ms = pause();
        if (ms > 0 || sink.due) yield ms;
        if (sink.stopped) return;
        sink.data(JSON.stringify(frame(opening)));
        const args = frameTemplate(undefined, (piece) =>
          frame(
            legacy
              ? { function_call: { arguments: piece } }
              : custom
                ? { tool_calls: [{ index: k, custom: { input: piece } }] }
                : { tool_calls: [{ index: k, function: { arguments: piece } }] },
          ),
        );
        const pieces = jsonPieces(call.arguments, ARGUMENT_TOKENS_PER_DELTA);
        for (let i = 0; i < pieces.ends.length; i++) {
          ms = pause();
          if (ms > 0 || sink.due) yield ms;
          if (sink.stopped) return;
          sink.piece(args, pieces, i);
        }
      }
      const ms = pause();
      if (ms > 0 || sink.due) yield ms;
      sink.data(
        JSON.stringify(
          frame(
            {},
            {
              finish_reason: choice.finishReason,
              content_filter_results:
                choice.calls.length === 0 && choice.filtered ? choiceFilters(choice) : {},
            },
          ),
        ),
      );
    }
    if (includeUsage) {
      const ms = pause();
      if (ms > 0 || sink.due) yield ms;
      sink.data(JSON.stringify({ ...head, choices: [], usage }));
    }
    sink.closing('data: [DONE]\n\n');
  };
