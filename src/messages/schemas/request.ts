import { type Static, Type } from '@sinclair/typebox';
import { Literals, Nullable } from '../../platform/schema-helpers.js';
import {
  type DocumentBlockSchema,
  type ImageBlockSchema,
  MessageParamSchema,
  type SearchResultBlockSchema,
  SummarizeSchema,
  System,
  type TextBlockSchema,
  type ToolResultBlockSchema,
} from './content.js';
import { Cache, type CacheControlSchema, MAX_MESSAGES_TOOLS, obj } from './shared.js';
import {
  ContextManagementSchema,
  type CustomToolSchema,
  JsonOutputFormat,
  OutputConfigSchema,
  ThinkingConfigSchema,
  Tool,
  ToolChoiceSchema,
  type ToolsetSchema,
} from './tools.js';

/** The fields count_tokens shares with messages. */
const prompt = {
  model: Type.String({ minLength: 1, maxLength: 256 }),
  // A compaction request refuses an empty list its own way (routes.ts, emptyCompaction).
  messages: Type.Array(MessageParamSchema, {
    minItems: 1,
    maxItems: 100_000,
    description:
      'an empty list is refused: for a compaction request, with compaction_nothing_to_summarize',
  }),
  system: Type.Optional(System),
  // Upstream publishes no cap; the emulator's bounds what one request makes it read (650 000
  // server tools in 31 MB held the loop for 2 s).
  tools: Type.Optional(Type.Array(Tool, { maxItems: MAX_MESSAGES_TOOLS })),
  tool_choice: Type.Optional(ToolChoiceSchema),
  thinking: Type.Optional(ThinkingConfigSchema),
  output_config: Type.Optional(OutputConfigSchema),
  /**
   * The structured-outputs beta's spelling of `output_config.format`, which upstream still takes
   * (older @ai-sdk/anthropic releases send it); `output_config.format` wins when both are sent.
   * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
   */
  output_format: Type.Optional(Nullable(JsonOutputFormat)),
  cache_control: Cache,
  /** Taken with the `context-management-2025-06-27` beta only (see readPrompt). */
  context_management: Type.Optional(Nullable(ContextManagementSchema)),
  /** Taken with the `compact-2026-09-04` beta only; count_tokens takes it and ignores it. */
  compaction: Type.Optional(Nullable(SummarizeSchema)),
  /**
   * The speed mode (`fast`: more output tokens a second): the answer's `usage.speed`.
   * @see https://platform.claude.com/docs/en/build-with-claude/fast-mode
   */
  speed: Type.Optional(Type.Union([Literals(['standard', 'fast']), Type.Null()])),
};

export const MessagesRequestSchema = obj({
  ...prompt,
  /** 0: the prompt is read and cached, nothing generated (upstream's cache pre-warming). */
  max_tokens: Type.Integer({
    minimum: 0,
    description: '0 populates the prompt cache without generating a response',
  }),
  stream: Type.Optional(Type.Boolean()),
  temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  top_k: Type.Optional(Type.Integer({ minimum: 0 })),
  stop_sequences: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 64 })),
  metadata: Type.Optional(
    obj({ user_id: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()])) }),
  ),
  service_tier: Type.Optional(Literals(['auto', 'standard_only'])),
  /**
   * Standard fields the emulator takes and has no use for: a code-execution container to reuse
   * (an id, or `{id, skills}`), the inference region, and the speed mode.
   * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
   */
  container: Type.Optional(
    Nullable(
      Type.Union([
        Type.String({ maxLength: 256 }),
        obj({
          id: Type.Optional(Nullable(Type.String({ maxLength: 256 }))),
          skills: Type.Optional(
            Nullable(
              Type.Array(
                obj({
                  skill_id: Type.String({ maxLength: 256 }),
                  type: Literals(['anthropic', 'custom']),
                  version: Type.Optional(Type.String({ maxLength: 256 })),
                }),
                { maxItems: 64 },
              ),
            ),
          ),
        }),
      ]),
    ),
  ),
  inference_geo: Type.Optional(Nullable(Type.String({ maxLength: 64 }))),
  /**
   * A previous answer's id, to have this one say why the prompt cache missed it
   * (`diagnostics` in the answer). @see https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics
   */
  diagnostics: Type.Optional(
    Nullable(
      obj({ previous_message_id: Type.Optional(Nullable(Type.String({ maxLength: 256 }))) }),
    ),
  ),
  /** Beta message threads: refused with the error code that makes clients send the history. */
  thread: Type.Optional(Type.Unknown()),
});

export const CountTokensRequestSchema = obj(prompt);

export type MessagesRequest = Static<typeof MessagesRequestSchema>;
export type CountTokensRequest = Static<typeof CountTokensRequestSchema>;
export type MessageParam = Static<typeof MessageParamSchema>;

export type TextBlock = Static<typeof TextBlockSchema>;
export type ImageBlock = Static<typeof ImageBlockSchema>;
export type DocumentBlock = Static<typeof DocumentBlockSchema>;
export type SearchResultBlock = Static<typeof SearchResultBlockSchema>;
export type ToolResultBlock = Static<typeof ToolResultBlockSchema>;
export type CustomTool = Static<typeof CustomToolSchema>;
export type ToolParam = Static<typeof Tool>;
export type Toolset = Static<typeof ToolsetSchema>;
export type CacheControl = Static<typeof CacheControlSchema>;
