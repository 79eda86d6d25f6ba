import { type Static, Type } from '@sinclair/typebox';
import { Literals, Nullable } from '../platform/schema-helpers.js';

/** @see https://github.com/openai/openai-node/blob/master/src/resources/chat/completions/completions.ts */

export const ChatTextPartSchema = Type.Object({
  type: Type.Literal('text'),
  text: Type.String(),
});

export const ChatRoleSchema = Literals(['system', 'developer', 'user', 'assistant', 'tool']);

export const ChatMessageSchema = Type.Object({
  role: ChatRoleSchema,
  content: Type.Optional(
    Type.Union([Type.String(), Type.Array(ChatTextPartSchema), Type.Null()], {
      description: 'a string, an array of text content parts, or null',
    }),
  ),
  name: Type.Optional(Type.String({ minLength: 1, maxLength: 64 })),
  tool_call_id: Type.Optional(Type.String({ minLength: 1 })),
  tool_calls: Type.Optional(
    Type.Array(
      Type.Object({
        id: Type.String(),
        type: Type.Literal('function'),
        function: Type.Object({ name: Type.String(), arguments: Type.String() }),
      }),
    ),
  ),
  refusal: Type.Optional(Nullable(Type.String())),
});

export const ChatCompletionRequestSchema = Type.Object({
  model: Type.String({ minLength: 1, maxLength: 256 }),
  messages: Type.Array(ChatMessageSchema, { minItems: 1, maxItems: 100_000 }),
  max_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  max_completion_tokens: Type.Optional(Nullable(Type.Integer({ minimum: 1 }))),
  temperature: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 2 }))),
  top_p: Type.Optional(Nullable(Type.Number({ minimum: 0, maximum: 1 }))),
  n: Type.Optional(Nullable(Type.Integer({ minimum: 1, maximum: 128 }))),
  stop: Type.Optional(
    Type.Union(
      [
        Type.String({ minLength: 1 }),
        Type.Array(Type.String({ minLength: 1 }), { maxItems: 4 }),
        Type.Null(),
      ],
      { description: 'a string, an array of up to 4 strings, or null' },
    ),
  ),
  presence_penalty: Type.Optional(Nullable(Type.Number({ minimum: -2, maximum: 2 }))),
  frequency_penalty: Type.Optional(Nullable(Type.Number({ minimum: -2, maximum: 2 }))),
  seed: Type.Optional(Nullable(Type.Integer())),
  user: Type.Optional(Nullable(Type.String())),
  logprobs: Type.Optional(Nullable(Type.Boolean())),
  top_logprobs: Type.Optional(Nullable(Type.Integer({ minimum: 0, maximum: 20 }))),
  logit_bias: Type.Optional(
    Nullable(Type.Record(Type.String(), Type.Number({ minimum: -100, maximum: 100 }))),
  ),
  tools: Type.Optional(
    Type.Array(
      Type.Object({
        type: Type.Literal('function'),
        function: Type.Object({
          name: Type.String({ pattern: '^[a-zA-Z0-9_-]{1,64}$' }),
          description: Type.Optional(Type.String()),
          parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          strict: Type.Optional(Nullable(Type.Boolean())),
        }),
      }),
      { maxItems: 128 },
    ),
  ),
  tool_choice: Type.Optional(
    Type.Union(
      [
        Literals(['none', 'auto', 'required']),
        Type.Object({
          type: Type.Literal('function'),
          function: Type.Object({ name: Type.String() }),
        }),
      ],
      { description: '"none", "auto", "required" or {type: "function", function: {name}}' },
    ),
  ),
  parallel_tool_calls: Type.Optional(Type.Boolean()),
  response_format: Type.Optional(
    Type.Object({
      type: Literals(['text', 'json_object', 'json_schema']),
      json_schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
    }),
  ),
  metadata: Type.Optional(
    Nullable(Type.Record(Type.String(), Type.String({ maxLength: 512 }), { maxProperties: 16 })),
  ),
  service_tier: Type.Optional(Nullable(Literals(['auto', 'default', 'flex', 'scale', 'priority']))),
  store: Type.Optional(Nullable(Type.Boolean())),
  reasoning_effort: Type.Optional(Nullable(Literals(['none', 'minimal', 'low', 'medium', 'high']))),
  modalities: Type.Optional(Nullable(Type.Array(Literals(['text', 'audio'])))),
  stream: Type.Optional(Nullable(Type.Boolean())),
  stream_options: Type.Optional(
    Nullable(Type.Object({ include_usage: Type.Optional(Type.Boolean()) })),
  ),
});

export type ChatCompletionRequest = Static<typeof ChatCompletionRequestSchema>;
export type ChatMessage = Static<typeof ChatMessageSchema>;

const Severity = Type.Object({ filtered: Type.Boolean(), severity: Type.String() });
const Detection = Type.Object({ filtered: Type.Boolean(), detected: Type.Boolean() });

export const ChoiceFilterResultsSchema = Type.Object({
  hate: Severity,
  self_harm: Severity,
  sexual: Severity,
  violence: Severity,
  protected_material_code: Detection,
  protected_material_text: Detection,
});

export const PromptFilterResultsSchema = Type.Object({
  prompt_index: Type.Integer(),
  content_filter_results: Type.Object({
    hate: Severity,
    jailbreak: Detection,
    self_harm: Severity,
    sexual: Severity,
    violence: Severity,
  }),
});

export const ChatFinishReasonSchema = Literals(['stop', 'length', 'content_filter', 'tool_calls']);

export const ChatUsageSchema = Type.Object({
  prompt_tokens: Type.Integer(),
  completion_tokens: Type.Integer(),
  total_tokens: Type.Integer(),
  completion_tokens_details: Type.Object({
    accepted_prediction_tokens: Type.Integer(),
    audio_tokens: Type.Integer(),
    reasoning_tokens: Type.Integer(),
    rejected_prediction_tokens: Type.Integer(),
  }),
  prompt_tokens_details: Type.Object({
    audio_tokens: Type.Integer(),
    cached_tokens: Type.Integer(),
  }),
});

export const ChatCompletionSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('chat.completion'),
  created: Type.Integer(),
  model: Type.String(),
  system_fingerprint: Type.String(),
  choices: Type.Array(
    Type.Object({
      index: Type.Integer(),
      finish_reason: ChatFinishReasonSchema,
      logprobs: Type.Null(),
      message: Type.Object({
        role: Type.Literal('assistant'),
        content: Type.String(),
        refusal: Type.Null(),
        annotations: Type.Array(Type.Unknown()),
      }),
      content_filter_results: ChoiceFilterResultsSchema,
    }),
  ),
  prompt_filter_results: Type.Array(PromptFilterResultsSchema),
  usage: ChatUsageSchema,
});

export type ChatCompletion = Static<typeof ChatCompletionSchema>;
export type ChatUsage = Static<typeof ChatUsageSchema>;
export type ChoiceFilterResults = Static<typeof ChoiceFilterResultsSchema>;
export type PromptFilterResults = Static<typeof PromptFilterResultsSchema>;
export type ChatFinishReason = Static<typeof ChatFinishReasonSchema>;

/**
 * `status` and `innererror` come with Azure content-filter refusals.
 * @see https://platform.openai.com/docs/guides/error-codes
 * @see https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/content-filter
 */
export const ChatErrorSchema = Type.Object({
  error: Type.Object({
    message: Type.String(),
    type: Nullable(Type.String()),
    param: Nullable(Type.String()),
    code: Nullable(Type.String()),
    status: Type.Optional(Type.Integer()),
    innererror: Type.Optional(
      Type.Object({
        code: Type.String(),
        content_filter_result: Type.Record(
          Type.String(),
          Type.Object({ filtered: Type.Boolean(), severity: Type.String() }),
        ),
      }),
    ),
  }),
});

export type ChatError = Static<typeof ChatErrorSchema>;
