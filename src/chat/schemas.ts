import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Literals, Nullable, Tagged, Worded } from '../platform/schema-helpers.js';
import { FINISH_REASONS } from '../text/agent.js';

/** @see https://github.com/openai/openai-node/blob/master/src/resources/chat/completions/completions.ts */

const N = <T extends TSchema>(schema: T) => Type.Optional(Nullable(schema));

/**
 * An explicit prompt-cache breakpoint: the end of a prefix to cache (`mode` is always
 * `explicit`; `ttl` defaults to the request's `prompt_cache_options.ttl`).
 * @see https://developers.openai.com/api/docs/guides/prompt-caching
 */
const Breakpoint = Type.Optional(
  Type.Object({
    mode: Type.Literal('explicit'),
    ttl: Type.Optional(Literals(['30m', '12h'])),
  }),
);

export const ChatTextPartSchema = Type.Object({
  type: Type.Literal('text'),
  text: Type.String(),
  prompt_cache_breakpoint: Breakpoint,
});

const ImagePart = Type.Object({
  type: Type.Literal('image_url'),
  image_url: Type.Object({
    url: Type.String({ minLength: 1, description: 'an http(s) URL or a data: URL' }),
    detail: Type.Optional(Literals(['auto', 'low', 'high', 'original'])),
  }),
  prompt_cache_breakpoint: Breakpoint,
});
const AudioPart = Type.Object({
  type: Type.Literal('input_audio'),
  input_audio: Type.Object({
    data: Type.String({ minLength: 1 }),
    format: Literals(['wav', 'mp3']),
  }),
  prompt_cache_breakpoint: Breakpoint,
});
const FilePart = Type.Object({
  type: Type.Literal('file'),
  file: Type.Object({
    file_data: Type.Optional(Type.String({ minLength: 1 })),
    file_id: Type.Optional(Type.String({ minLength: 1 })),
    filename: Type.Optional(Type.String()),
  }),
  prompt_cache_breakpoint: Breakpoint,
});
const RefusalPart = Type.Object({ type: Type.Literal('refusal'), refusal: Type.String() });

const TextOnly = Type.Union([Type.String(), Type.Array(ChatTextPartSchema)], {
  description: 'a string or an array of text parts',
});

export const FunctionToolCallSchema = Type.Object({
  id: Type.String({ minLength: 1 }),
  type: Type.Literal('function'),
  function: Type.Object({ name: Type.String(), arguments: Type.String() }),
});
/** A call of a custom tool: its input is free text (or what the tool's grammar derives). */
export const CustomToolCallSchema = Type.Object({
  id: Type.String({ minLength: 1 }),
  type: Type.Literal('custom'),
  custom: Type.Object({ name: Type.String(), input: Type.String() }),
});
export const ToolCallSchema = Tagged('type', [FunctionToolCallSchema, CustomToolCallSchema]);

const name = Type.Optional(Type.String({ minLength: 1, maxLength: 64 }));

export const ChatMessageSchema = Tagged('role', [
  Type.Object({ role: Type.Literal('system'), content: TextOnly, name }),
  Type.Object({ role: Type.Literal('developer'), content: TextOnly, name }),
  Type.Object({
    role: Type.Literal('user'),
    content: Type.Union(
      [
        Type.String(),
        Type.Array(Tagged('type', [ChatTextPartSchema, ImagePart, AudioPart, FilePart])),
      ],
      { description: 'a string or an array of text, image_url, input_audio and file parts' },
    ),
    name,
  }),
  Type.Object({
    role: Type.Literal('assistant'),
    content: N(
      Type.Union([Type.String(), Type.Array(Tagged('type', [ChatTextPartSchema, RefusalPart]))], {
        description: 'a string or an array of text and refusal parts',
      }),
    ),
    name,
    tool_calls: Type.Optional(Type.Array(ToolCallSchema, { minItems: 1 })),
    function_call: N(Type.Object({ name: Type.String(), arguments: Type.String() })),
    refusal: N(Type.String()),
    audio: N(Type.Object({ id: Type.String() })),
  }),
  Type.Object({
    role: Type.Literal('tool'),
    content: TextOnly,
    tool_call_id: Type.String({ minLength: 1 }),
  }),
  Type.Object({
    role: Type.Literal('function'),
    content: Nullable(Type.String()),
    name: Type.String({ minLength: 1 }),
  }),
]);

/** A function's, custom tool's or response format's name: upstream's pattern and length. */
export const NAME_PATTERN = '^[a-zA-Z0-9_-]+$';
export const NAME_MAX = 64;
/** The most tools a request may offer. */
export const MAX_TOOLS = 128;
const Name = Worded(
  Type.String({ pattern: NAME_PATTERN, maxLength: NAME_MAX }),
  {
    pattern: `Invalid '{param}': string does not match pattern. Expected a string that matches the pattern '${NAME_PATTERN}'.`,
    maxLength: `Invalid '{param}': string too long. Expected a string with maximum length ${NAME_MAX}, but got a string with length {length} instead.`,
  },
  { pattern: 'invalid_value', maxLength: 'string_above_max_length' },
);

export const FunctionDefinitionSchema = Type.Object({
  name: Name,
  description: Type.Optional(Type.String()),
  parameters: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  strict: N(Type.Boolean()),
});

export const ChatToolSchema = Type.Object({
  type: Type.Literal('function'),
  function: FunctionDefinitionSchema,
});

/**
 * A tool whose input is free text, or text of a grammar (Lark or a regex).
 * @see https://platform.openai.com/docs/guides/function-calling#custom-tools
 * @see https://github.com/openai/openai-node/blob/master/src/resources/chat/completions/completions.ts
 */
export const CustomToolSchema = Type.Object({
  type: Type.Literal('custom'),
  custom: Type.Object({
    name: Name,
    description: Type.Optional(Type.String()),
    format: Type.Optional(
      Tagged('type', [
        Type.Object({ type: Type.Literal('text') }),
        Type.Object({
          type: Type.Literal('grammar'),
          grammar: Type.Object({
            definition: Type.String({ minLength: 1 }),
            syntax: Literals(['lark', 'regex']),
          }),
        }),
      ]),
    ),
  }),
});

const NamedFunction = Type.Object({ name: Type.String() });
const NamedTool = Tagged('type', [
  Type.Object({ type: Type.Literal('function'), function: NamedFunction }),
  Type.Object({ type: Type.Literal('custom'), custom: NamedFunction }),
]);

export const ChatCompletionRequestSchema = Type.Object({
  model: Type.String({ minLength: 1, maxLength: 256 }),
  messages: Type.Array(ChatMessageSchema, { minItems: 1, maxItems: 100_000 }),
  max_tokens: N(Type.Integer({ minimum: 1 })),
  max_completion_tokens: N(Type.Integer({ minimum: 1 })),
  temperature: N(Type.Number({ minimum: 0, maximum: 2 })),
  top_p: N(Type.Number({ minimum: 0, maximum: 1 })),
  n: N(Type.Integer({ minimum: 1, maximum: 128 })),
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
  presence_penalty: N(Type.Number({ minimum: -2, maximum: 2 })),
  frequency_penalty: N(Type.Number({ minimum: -2, maximum: 2 })),
  seed: N(Type.Integer()),
  user: N(Type.String()),
  safety_identifier: N(Type.String({ maxLength: 64 })),
  prompt_cache_key: N(Type.String()),
  prompt_cache_retention: N(Literals(['in_memory', '24h'])),
  logprobs: N(Type.Boolean()),
  top_logprobs: N(Type.Integer({ minimum: 0, maximum: 20 })),
  logit_bias: N(Type.Record(Type.String(), Type.Number({ minimum: -100, maximum: 100 }))),
  tools: Type.Optional(
    Worded(
      Type.Array(Tagged('type', [ChatToolSchema, CustomToolSchema]), {
        minItems: 1,
        maxItems: MAX_TOOLS,
      }),
      {
        maxItems: `Invalid '{param}': array too long. Expected an array with maximum length ${MAX_TOOLS}, but got an array with length {length} instead.`,
      },
      { maxItems: 'array_above_max_length' },
    ),
  ),
  tool_choice: N(
    Type.Union(
      [
        Literals(['none', 'auto', 'required']),
        Type.Object({ type: Type.Literal('function'), function: NamedFunction }),
        Type.Object({ type: Type.Literal('custom'), custom: NamedFunction }),
        Type.Object({
          type: Type.Literal('allowed_tools'),
          allowed_tools: Type.Object({
            mode: Literals(['auto', 'required']),
            tools: Type.Array(NamedTool),
          }),
        }),
      ],
      {
        description:
          '"none", "auto", "required", {type: "function", function: {name}}, {type: "custom", custom: {name}} or {type: "allowed_tools", ...}',
      },
    ),
  ),
  parallel_tool_calls: N(Type.Boolean()),
  functions: Type.Optional(Type.Array(FunctionDefinitionSchema, { minItems: 1, maxItems: 128 })),
  function_call: Type.Optional(
    Type.Union([Literals(['none', 'auto']), NamedFunction], {
      description: '"none", "auto" or {name}',
    }),
  ),
  response_format: Type.Optional(
    Tagged('type', [
      Type.Object({ type: Type.Literal('text') }),
      Type.Object({ type: Type.Literal('json_object') }),
      Type.Object({
        type: Type.Literal('json_schema'),
        json_schema: Type.Object({
          name: Name,
          description: Type.Optional(Type.String()),
          schema: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
          strict: N(Type.Boolean()),
        }),
      }),
    ]),
  ),
  metadata: N(Type.Record(Type.String(), Type.String({ maxLength: 512 }), { maxProperties: 16 })),
  /**
   * `fast` asks for fast mode, served (and answered) as `priority`.
   * @see https://developers.openai.com/api/docs/guides/fast-mode
   */
  service_tier: N(Literals(['auto', 'default', 'flex', 'scale', 'priority', 'fast'])),
  store: N(Type.Boolean()),
  reasoning_effort: N(Literals(['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'])),
  verbosity: N(Literals(['low', 'medium', 'high'])),
  modalities: N(Type.Array(Literals(['text', 'audio']))),
  audio: N(
    Type.Object({
      format: Literals(['wav', 'aac', 'mp3', 'flac', 'opus', 'pcm16']),
      voice: Type.Union([Type.String(), Type.Object({ id: Type.String() })], {
        description: 'a voice name (`alloy`, ...) or a custom voice `{id}`',
      }),
    }),
  ),
  prediction: N(
    Type.Object({
      type: Type.Literal('content'),
      content: TextOnly,
    }),
  ),
  /** @see https://developers.openai.com/api/docs/guides/tools-web-search */
  web_search_options: N(
    Type.Object({
      search_context_size: Type.Optional(Literals(['low', 'medium', 'high'])),
      user_location: N(
        Type.Object({
          type: Type.Literal('approximate'),
          approximate: Type.Object({
            city: Type.Optional(Type.String()),
            country: Type.Optional(Type.String()),
            region: Type.Optional(Type.String()),
            timezone: Type.Optional(Type.String()),
          }),
        }),
      ),
    }),
  ),
  /**
   * Moderated completions: the moderation model and, per side, whether it only scores
   * (`score`) or also blocks (`block`).
   * @see https://github.com/openai/openai-node/blob/master/src/resources/chat/completions/completions.ts
   */
  moderation: N(
    Type.Object({
      model: Type.String({ minLength: 1 }),
      policy: N(
        Type.Object({
          input: N(Type.Object({ mode: Literals(['score', 'block']) })),
          output: N(Type.Object({ mode: Literals(['score', 'block']) })),
        }),
      ),
    }),
  ),
  /**
   * Whether the request caches its prefix itself (`implicit`, the default) or only at its
   * explicit breakpoints (`explicit`), and for how long at least (`30m`).
   * @see https://developers.openai.com/api/docs/guides/prompt-caching
   */
  prompt_cache_options: N(
    Type.Object({
      mode: Type.Optional(Literals(['implicit', 'explicit'])),
      ttl: Type.Optional(Literals(['30m'])),
    }),
  ),
  stream: N(Type.Boolean()),
  stream_options: N(
    Type.Object({
      include_usage: Type.Optional(Type.Boolean()),
      include_obfuscation: Type.Optional(Type.Boolean()),
    }),
  ),
});

export type ChatCompletionRequest = Static<typeof ChatCompletionRequestSchema>;
export type ChatMessage = Static<typeof ChatMessageSchema>;
export type ChatTool = Static<typeof ChatToolSchema>;
export type CustomTool = Static<typeof CustomToolSchema>;
export type FunctionDefinition = Static<typeof FunctionDefinitionSchema>;

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

export const ChatFinishReasonSchema = Literals(FINISH_REASONS);

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

const TopLogprob = Type.Object({
  token: Type.String(),
  logprob: Type.Number(),
  bytes: Nullable(Type.Array(Type.Integer())),
});

export const TokenLogprobSchema = Type.Object({
  token: Type.String(),
  logprob: Type.Number(),
  bytes: Nullable(Type.Array(Type.Integer())),
  top_logprobs: Type.Array(TopLogprob),
});
export type TokenLogprob = Static<typeof TokenLogprobSchema>;

export const ChoiceLogprobsSchema = Type.Object({
  content: Nullable(Type.Array(TokenLogprobSchema)),
  refusal: Nullable(Type.Array(TokenLogprobSchema)),
});
export type ChoiceLogprobs = Static<typeof ChoiceLogprobsSchema>;

/** Azure leaves a choice's filter results empty when it calls tools. */
const EmptyFilterResults = Type.Object({}, { additionalProperties: false });

/**
 * The serializer writes required keys before optional ones; `refusal` and `annotations` are
 * always sent but declared optional, so that they follow `tool_calls` as upstream orders them.
 */
export const ChatResponseMessageSchema = Type.Object({
  role: Type.Literal('assistant'),
  content: Nullable(Type.String()),
  tool_calls: Type.Optional(Type.Array(ToolCallSchema)),
  function_call: Type.Optional(Type.Object({ name: Type.String(), arguments: Type.String() })),
  refusal: Type.Optional(Type.Null({ description: 'always sent' })),
  annotations: Type.Optional(Type.Array(Type.Unknown(), { description: 'always sent' })),
});
export type ChatResponseMessage = Static<typeof ChatResponseMessageSchema>;

export const ChatCompletionSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('chat.completion'),
  created: Type.Integer(),
  model: Type.String(),
  system_fingerprint: Type.String(),
  service_tier: Type.Optional(Literals(['auto', 'default', 'flex', 'scale', 'priority'])),
  choices: Type.Array(
    Type.Object({
      index: Type.Integer(),
      finish_reason: ChatFinishReasonSchema,
      logprobs: Nullable(ChoiceLogprobsSchema),
      message: ChatResponseMessageSchema,
      content_filter_results: Type.Union([ChoiceFilterResultsSchema, EmptyFilterResults]),
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

/**
 * What Azure's own front answers before the API is reached (a missing or unknown
 * `api-version`): `{"error":{"code","message"}}`.
 * @see https://github.com/MicrosoftDocs/azure-docs/issues/114602
 */
export const AzureGatewayErrorSchema = Type.Object({
  error: Type.Object({ code: Type.String(), message: Type.String() }),
});

/** What one streamed choice adds: the role first, then content or tool-call pieces. */
const ChunkDelta = Type.Object({
  role: Type.Optional(Type.Literal('assistant')),
  content: N(Type.String()),
  refusal: N(Type.String()),
  tool_calls: Type.Optional(
    Type.Array(
      Type.Object({
        index: Type.Integer(),
        id: Type.Optional(Type.String()),
        type: Type.Optional(Literals(['function', 'custom'])),
        function: Type.Optional(
          Type.Object({
            name: Type.Optional(Type.String()),
            arguments: Type.String({ description: 'a piece of the arguments JSON' }),
          }),
        ),
        custom: Type.Optional(
          Type.Object({
            name: Type.Optional(Type.String()),
            input: Type.String({ description: "a piece of a custom tool's input" }),
          }),
        ),
      }),
    ),
  ),
  function_call: Type.Optional(
    Type.Object({ name: Type.Optional(Type.String()), arguments: Type.String() }),
  ),
});

/** @see https://platform.openai.com/docs/api-reference/chat-streaming/streaming */
export const ChatCompletionChunkSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('chat.completion.chunk'),
  created: Type.Integer(),
  model: Type.String(),
  system_fingerprint: Type.String(),
  service_tier: Type.Optional(Literals(['auto', 'default', 'flex', 'scale', 'priority'])),
  choices: Type.Array(
    Type.Object({
      index: Type.Integer(),
      delta: ChunkDelta,
      logprobs: Nullable(ChoiceLogprobsSchema),
      finish_reason: Nullable(ChatFinishReasonSchema),
      content_filter_results: Type.Union([ChoiceFilterResultsSchema, EmptyFilterResults]),
    }),
    { description: 'one choice; none in the usage chunk' },
  ),
  usage: N(
    Type.Object(ChatUsageSchema.properties, {
      description: 'with `stream_options.include_usage`: null, and set in the usage chunk',
    }),
  ),
});

/**
 * The JSON of each `data:` frame of a streamed completion (`stream: true`). Documentation
 * only: the stream is written by `chatStream`.
 */
export const ChatStreamFrameSchema = Type.Union(
  [
    Type.Object(
      {
        id: Type.Literal(''),
        object: Type.Literal(''),
        created: Type.Literal(0),
        model: Type.Literal(''),
        choices: Type.Array(Type.Unknown(), { maxItems: 0 }),
        prompt_filter_results: Type.Array(PromptFilterResultsSchema),
      },
      { description: "the first frame: the prompt's content filter results (Azure)" },
    ),
    ChatCompletionChunkSchema,
    Type.Object(ChatErrorSchema.properties, {
      description: 'the last frame of a stream an injected `stream_error` fault cuts',
    }),
  ],
  {
    description:
      'One frame: `data: <this JSON>`, no `event:` line. In order: the prompt filter frame; per choice a role chunk, content chunks (one token each) or tool-call chunks, a finish chunk; with `stream_options.include_usage` a usage chunk; then the literal `data: [DONE]`. A stream an injected `stream_error` fault cuts ends with an error frame instead.',
  },
);
