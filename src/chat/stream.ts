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
    const shape = streamShape(who, body, plan);
    let started = false;
    const pause = () => {
      const ms = started ? pacing.betweenMs : pacing.firstMs;
      if (!started) sink.content();
      started = true;
      return ms;
    };
    sink.data(FIRST_FRAME);

    for (let index = 0; index < plan.choices.length; index++) {
      const choice = plan.choices[index] as Choice;
      sink.data(roleFrame(shape, index, choice));
      const text = choice.text ?? '';
      if (text !== '') {
        const filters = choiceFilters(choice);
        if (shape.top >= 0) {
          // Each token carries its own log probability: one frame each, no template.
          for (const entry of logprobEntries(text, shape.top)) {
            const ms = pause();
            if (ms > 0 || sink.due) yield ms;
            if (sink.stopped) return;
            sink.data(logprobFrame(shape, index, entry, filters));
          }
        } else {
          const content = frameTemplate(undefined, (piece) =>
            chunkOf(shape, index, { content: piece }, { content_filter_results: filters }),
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
        const call = choice.calls[k] as Call;
        let ms = pause();
        if (ms > 0 || sink.due) yield ms;
        if (sink.stopped) return;
        sink.data(openingFrame(shape, index, k, call));
        const args = argumentsTemplate(shape, index, k, call);
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
      sink.data(finishFrame(shape, index, choice));
    }
    if (shape.includeUsage) {
      const ms = pause();
      if (ms > 0 || sink.due) yield ms;
      sink.data(JSON.stringify({ ...shape.head, choices: [], usage }));
    }
    sink.closing('data: [DONE]\n\n');
  };

type Choice = ChatPlan['choices'][number];
type Call = Choice['calls'][number];

/** What every chunk of one stream shares. */
interface StreamShape {
  head: Record<string, unknown>;
  /** `usage: null` on every chunk, with `include_usage`. */
  tail: Record<string, unknown>;
  includeUsage: boolean;
  /** `top_logprobs` with `logprobs: true`, else -1. */
  top: number;
  /** `functions` (the legacy form): calls stream as `function_call`. */
  legacy: boolean;
}

function streamShape(who: ChatIdentity, body: ChatCompletionRequest, plan: ChatPlan): StreamShape {
  const includeUsage = body.stream_options?.include_usage === true;
  const tier = servedTier(body);
  return {
    head: {
      id: who.id,
      object: 'chat.completion.chunk',
      created: who.created,
      model: who.model,
      system_fingerprint: systemFingerprint(who.model),
      ...(tier ? { service_tier: tier } : {}),
    },
    tail: includeUsage ? { usage: null } : {},
    includeUsage,
    top: body.logprobs === true ? (body.top_logprobs ?? 0) : -1,
    legacy: plan.prompt.legacy,
  };
}

/** A chunk of choice `index` with `delta` (`extra` overrides its other fields). */
const chunkOf = (shape: StreamShape, index: number, delta: object, extra: object = {}) => ({
  ...shape.head,
  choices: [
    {
      index,
      delta,
      logprobs: null,
      finish_reason: null,
      content_filter_results: {},
      ...extra,
    },
  ],
  ...shape.tail,
});

function roleFrame(shape: StreamShape, index: number, choice: Choice): string {
  const role = { role: 'assistant', content: choice.text === null ? null : '', refusal: null };
  const extra = shape.top >= 0 ? { logprobs: { content: [], refusal: null } } : {};
  return JSON.stringify(chunkOf(shape, index, role, extra));
}

function logprobFrame(
  shape: StreamShape,
  index: number,
  entry: { token: string },
  filters: object,
): string {
  return JSON.stringify(
    chunkOf(
      shape,
      index,
      { content: entry.token },
      { logprobs: { content: [entry], refusal: null }, content_filter_results: filters },
    ),
  );
}

/** A call's first frame: its id, type and name (arguments follow in pieces). */
function openingFrame(shape: StreamShape, index: number, k: number, call: Call): string {
  const opening = shape.legacy
    ? { function_call: { name: call.name, arguments: '' } }
    : { tool_calls: [{ index: k, id: call.id, ...wireCall(call, '') }] };
  return JSON.stringify(chunkOf(shape, index, opening));
}

/**
 * The frames of a call's arguments. A custom tool's call streams its input as a function's
 * does its arguments.
 * @see https://github.com/openai/openai-openapi/issues/576
 */
function argumentsTemplate(shape: StreamShape, index: number, k: number, call: Call) {
  const custom = call.type === 'custom';
  return frameTemplate(undefined, (piece) =>
    chunkOf(
      shape,
      index,
      shape.legacy
        ? { function_call: { arguments: piece } }
        : custom
          ? { tool_calls: [{ index: k, custom: { input: piece } }] }
          : { tool_calls: [{ index: k, function: { arguments: piece } }] },
    ),
  );
}

function finishFrame(shape: StreamShape, index: number, choice: Choice): string {
  return JSON.stringify(
    chunkOf(
      shape,
      index,
      {},
      {
        finish_reason: choice.finishReason,
        content_filter_results:
          choice.calls.length === 0 && choice.filtered ? choiceFilters(choice) : {},
      },
    ),
  );
}
