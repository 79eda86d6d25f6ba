import { type Static, Type } from '@sinclair/typebox';
import { Literals, Nullable } from '../../platform/schema-helpers.js';
import { STOP_REASONS } from '../../text/agent.js';
import { TOOL_SEARCH_ERRORS, WEB_FETCH_ERRORS, WEB_SEARCH_ERRORS } from './content.js';

/** A reply's stop reasons, and `compaction` (a compaction that pauses, docs/messages.md "Compaction"). */
export const StopReasonSchema = Literals([...STOP_REASONS, 'compaction']);
export type StopReason = Static<typeof StopReasonSchema>;

const iterationFields = {
  input_tokens: Type.Integer(),
  output_tokens: Type.Integer(),
  cache_creation_input_tokens: Type.Integer(),
  cache_read_input_tokens: Type.Integer(),
  cache_creation: Type.Object({
    ephemeral_5m_input_tokens: Type.Integer(),
    ephemeral_1h_input_tokens: Type.Integer(),
  }),
};

/** One sampling step of a request. @see https://platform.claude.com/docs/en/build-with-claude/compaction */
export const IterationSchema = Type.Union([
  Type.Object({ type: Type.Literal('compaction'), ...iterationFields }),
  Type.Object({ type: Type.Literal('message'), ...iterationFields, model: Type.String() }),
]);

export type Iteration = Static<typeof IterationSchema>;

/** The web searches and fetches a reply ran. */
export const ServerToolUsageSchema = Type.Object({
  web_search_requests: Type.Integer(),
  web_fetch_requests: Type.Integer(),
});

/** The output tokens spent thinking (counted in `output_tokens` too). */
export const OutputTokensDetailsSchema = Type.Object({ thinking_tokens: Type.Integer() });

/**
 * A reply's usage. Every field the SDKs type as required is sent, null where there is nothing
 * to say, in upstream's order (captured answers: the cache fields, `output_tokens`, then
 * `service_tier` and `inference_geo`).
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
 */
export const UsageSchema = Type.Object({
  input_tokens: Type.Integer({
    description:
      'uncached prompt tokens, and the pages a web search found (docs/agents.md "Web search")',
  }),
  cache_creation_input_tokens: Type.Integer(),
  cache_read_input_tokens: Type.Integer(),
  cache_creation: Type.Object({
    ephemeral_5m_input_tokens: Type.Integer(),
    ephemeral_1h_input_tokens: Type.Integer(),
  }),
  output_tokens: Type.Integer(),
  output_tokens_details: Nullable(OutputTokensDetailsSchema),
  server_tool_use: Nullable(
    Type.Object(ServerToolUsageSchema.properties, {
      description: 'when the reply ran a web search or fetch: the searches and fetches run',
    }),
  ),
  service_tier: Literals(['standard', 'priority', 'batch']),
  inference_geo: Nullable(
    Type.String({ description: "the request's `inference_geo`, else `global`" }),
  ),
  speed: Literals(['standard', 'fast']),
  iterations: Type.Optional(
    Type.Array(IterationSchema, {
      description:
        "with the compact-2026-01-12 beta, and in an on-demand compaction's answer: each sampling step (a compaction, the message); the top-level tokens are the message steps'",
    }),
  ),
});

export type Usage = Static<typeof UsageSchema>;

/**
 * Where a cited text is, in a document or search result of the request (docs/agents.md "Citations"):
 * characters of a plain-text document, blocks of a custom-content one, blocks of a search
 * result; indexes from 0, ends exclusive.
 * @see https://platform.claude.com/docs/en/build-with-claude/citations
 */
export const CitationSchema = Type.Union([
  Type.Object({
    type: Type.Literal('char_location'),
    cited_text: Type.String(),
    document_index: Type.Integer(),
    document_title: Type.Union([Type.String(), Type.Null()]),
    start_char_index: Type.Integer(),
    end_char_index: Type.Integer(),
    file_id: Type.Null(),
  }),
  Type.Object({
    type: Type.Literal('content_block_location'),
    cited_text: Type.String(),
    document_index: Type.Integer(),
    document_title: Type.Union([Type.String(), Type.Null()]),
    start_block_index: Type.Integer(),
    end_block_index: Type.Integer(),
    file_id: Type.Null(),
  }),
  Type.Object({
    type: Type.Literal('search_result_location'),
    cited_text: Type.String(),
    search_result_index: Type.Integer(),
    source: Type.String(),
    title: Type.Union([Type.String(), Type.Null()]),
    start_block_index: Type.Integer(),
    end_block_index: Type.Integer(),
  }),
  Type.Object({
    type: Type.Literal('web_search_result_location'),
    url: Type.String(),
    title: Type.Union([Type.String(), Type.Null()]),
    encrypted_index: Type.String(),
    cited_text: Type.String({ description: 'at most 150 characters of the page' }),
  }),
]);

export type Citation = Static<typeof CitationSchema>;

/** A page a web search found. @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool */
export const WebSearchResultSchema = Type.Object({
  type: Type.Literal('web_search_result'),
  url: Type.String(),
  title: Type.String(),
  encrypted_content: Type.String({ description: 'send it back as it is' }),
  page_age: Type.Union([Type.String(), Type.Null()]),
});

export type WebSearchResult = Static<typeof WebSearchResultSchema>;

/** A page a web fetch read: its text as a plain-text document. */
export const WebFetchResultSchema = Type.Object({
  type: Type.Literal('web_fetch_result'),
  url: Type.String(),
  content: Type.Object({
    type: Type.Literal('document'),
    source: Type.Object({
      type: Type.Literal('text'),
      media_type: Type.Literal('text/plain'),
      data: Type.String(),
    }),
    title: Type.Union([Type.String(), Type.Null()]),
    // Left out when off (not null, which @anthropic-ai/sdk's type would take): the Vercel AI
    // SDK, written against upstream's answers, refuses a null here.
    citations: Type.Optional(
      Type.Object({ enabled: Type.Boolean() }, { description: "with the tool's citations on" }),
    ),
  }),
  retrieved_at: Type.Union([Type.String(), Type.Null()]),
});

export type WebFetchResult = Static<typeof WebFetchResultSchema>;

/** Who called a tool in an answer: the model (the emulator runs no code that calls tools). */
export const DirectCallerSchema = Type.Object({ type: Type.Literal('direct') });
export const DIRECT = { type: 'direct' } as const;

export const ResponseBlockSchema = Type.Union([
  Type.Object({
    type: Type.Literal('thinking'),
    thinking: Type.String(),
    signature: Type.String(),
  }),
  Type.Object({ type: Type.Literal('redacted_thinking'), data: Type.String() }),
  Type.Object({
    type: Type.Literal('text'),
    text: Type.String(),
    citations: Nullable(
      Type.Array(CitationSchema, {
        description: 'with citations enabled: where the text is from; else null',
      }),
    ),
  }),
  Type.Object({
    type: Type.Literal('tool_use'),
    id: Type.String(),
    name: Type.String(),
    input: Type.Unknown(),
    caller: DirectCallerSchema,
  }),
  Type.Object({
    type: Type.Literal('server_tool_use'),
    id: Type.String({ description: 'srvtoolu_...' }),
    name: Type.String(),
    input: Type.Unknown(),
    caller: DirectCallerSchema,
  }),
  Type.Object({
    type: Type.Literal('web_search_tool_result'),
    tool_use_id: Type.String(),
    content: Type.Union([
      Type.Array(WebSearchResultSchema),
      Type.Object({
        type: Type.Literal('web_search_tool_result_error'),
        error_code: Literals(WEB_SEARCH_ERRORS),
      }),
    ]),
    caller: DirectCallerSchema,
  }),
  Type.Object({
    type: Type.Literal('web_fetch_tool_result'),
    tool_use_id: Type.String(),
    content: Type.Union([
      WebFetchResultSchema,
      Type.Object({
        type: Type.Literal('web_fetch_tool_result_error'),
        error_code: Literals(WEB_FETCH_ERRORS),
      }),
    ]),
    caller: DirectCallerSchema,
  }),
  Type.Object({
    type: Type.Literal('tool_search_tool_result'),
    tool_use_id: Type.String(),
    content: Type.Union([
      Type.Object({
        type: Type.Literal('tool_search_tool_search_result'),
        tool_references: Type.Array(
          Type.Object({ type: Type.Literal('tool_reference'), tool_name: Type.String() }),
        ),
      }),
      Type.Object({
        type: Type.Literal('tool_search_tool_result_error'),
        error_code: Literals(TOOL_SEARCH_ERRORS),
        error_message: Type.Union([Type.String(), Type.Null()]),
      }),
    ]),
  }),
  Type.Object({
    type: Type.Literal('compaction'),
    content: Type.Union([Type.String(), Type.Null()]),
    signature: Type.Optional(
      Type.String({ description: 'on demand (compact-2026-09-04): send the block back as it is' }),
    ),
  }),
]);

export type ResponseBlock = Static<typeof ResponseBlockSchema>;

/** The edits context editing applied (see ContextManagementSchema). */
export const ContextManagementResponseSchema = Type.Object({
  applied_edits: Type.Array(
    Type.Union([
      Type.Object({
        type: Type.Literal('clear_tool_uses_20250919'),
        cleared_tool_uses: Type.Integer(),
        cleared_input_tokens: Type.Integer(),
      }),
      Type.Object({
        type: Type.Literal('clear_thinking_20251015'),
        cleared_thinking_turns: Type.Integer(),
        cleared_input_tokens: Type.Integer(),
      }),
    ]),
  ),
});

export type ContextManagementResponse = Static<typeof ContextManagementResponseSchema>;

/** Why a reply stopped, said more precisely: a refusal's category and explanation. */
export const StopDetailsSchema = Type.Object({
  type: Type.Literal('refusal'),
  category: Nullable(
    Literals(['cyber', 'bio', 'frontier_llm', 'reasoning_extraction', 'general_harms']),
  ),
  explanation: Nullable(Type.String()),
});

export type StopDetails = Static<typeof StopDetailsSchema>;

/**
 * Why the prompt cache missed the request `diagnostics.previous_message_id` names: the
 * emulator says it cannot tell (`unavailable`) when the prompt read nothing from the cache.
 * @see https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics
 */
export const DiagnosticsSchema = Type.Object({
  cache_miss_reason: Type.Object({ type: Literals(['unavailable']) }),
});

export type Diagnostics = Static<typeof DiagnosticsSchema>;

/**
 * A message, its fields in upstream's order (captured answers: `model` first, `container`
 * after `content`, `stop_details` after `stop_sequence`, `diagnostics` after `usage`); every
 * field the SDKs type as required is sent, null where upstream sends null.
 * @see https://platform.claude.com/docs/en/api/messages
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
 */
export const MessageSchema = Type.Object({
  model: Type.String(),
  id: Type.String(),
  type: Type.Literal('message'),
  role: Type.Literal('assistant'),
  content: Type.Array(ResponseBlockSchema),
  container: Type.Null({
    description: 'the code execution container used: none (the emulator runs no code)',
  }),
  stop_reason: StopReasonSchema,
  stop_sequence: Type.Union([Type.String(), Type.Null()]),
  stop_details: Nullable(StopDetailsSchema),
  usage: UsageSchema,
  diagnostics: Nullable(DiagnosticsSchema),
  context_management: Type.Optional(
    Type.Union([ContextManagementResponseSchema, Type.Null()], {
      description: 'with the context-management beta only',
    }),
  ),
});

export type Message = Static<typeof MessageSchema>;

export const CountTokensResponseSchema = Type.Object({
  input_tokens: Type.Integer(),
  context_management: Type.Optional(
    Type.Object(
      { original_input_tokens: Type.Integer() },
      { description: 'with a context_management request: the tokens before its edits' },
    ),
  ),
});

const BlockIndex = Type.Integer({ minimum: 0, description: 'the block in `content`' });

/**
 * The `data:` of each event of a streamed message (`stream: true`); each event's `event:` line
 * repeats its `type`. Documentation only: the stream is written by `messageStream`.
 * @see https://platform.claude.com/docs/en/build-with-claude/streaming
 */
export const MessageStreamEventSchema = Type.Union(
  [
    Type.Object({
      type: Type.Literal('message_start'),
      message: Type.Object({
        ...MessageSchema.properties,
        content: Type.Array(ResponseBlockSchema, { maxItems: 0, description: 'always empty' }),
        stop_reason: Type.Null(),
        stop_sequence: Type.Null(),
        stop_details: Type.Null(),
        usage: Type.Object(UsageSchema.properties, {
          description:
            "the prompt's tokens, `output_tokens` at most 1; `output_tokens_details` and `server_tool_use` null, no iterations (they come with message_delta)",
        }),
      }),
    }),
    Type.Object({
      type: Type.Literal('content_block_start'),
      index: BlockIndex,
      content_block: Type.Union(ResponseBlockSchema.anyOf, {
        description:
          "the block with its text, thinking, signature and input empty (a compaction's content null); a signed compaction (on demand) whole, with no deltas",
      }),
    }),
    Type.Object({ type: Type.Literal('ping') }),
    Type.Object({
      type: Type.Literal('content_block_delta'),
      index: BlockIndex,
      delta: Type.Union([
        Type.Object({ type: Type.Literal('text_delta'), text: Type.String() }),
        Type.Object({ type: Type.Literal('thinking_delta'), thinking: Type.String() }),
        Type.Object({ type: Type.Literal('signature_delta'), signature: Type.String() }),
        Type.Object({ type: Type.Literal('input_json_delta'), partial_json: Type.String() }),
        Type.Object({ type: Type.Literal('compaction_delta'), content: Type.String() }),
        Type.Object({ type: Type.Literal('citations_delta'), citation: CitationSchema }),
      ]),
    }),
    Type.Object({ type: Type.Literal('content_block_stop'), index: BlockIndex }),
    Type.Object({
      type: Type.Literal('message_delta'),
      delta: Type.Object({
        stop_reason: StopReasonSchema,
        stop_sequence: Type.Union([Type.String(), Type.Null()]),
        stop_details: Nullable(StopDetailsSchema),
        container: Type.Null(),
      }),
      usage: Type.Object(
        {
          input_tokens: Type.Integer(),
          cache_creation_input_tokens: Type.Integer(),
          cache_read_input_tokens: Type.Integer(),
          output_tokens: Type.Integer(),
          output_tokens_details: OutputTokensDetailsSchema,
          server_tool_use: Nullable(ServerToolUsageSchema),
          iterations: Type.Optional(Type.Array(IterationSchema)),
        },
        { description: 'cumulative' },
      ),
      context_management: Type.Optional(
        Type.Union([ContextManagementResponseSchema, Type.Null()], {
          description: 'with the context-management beta only: the edits applied',
        }),
      ),
    }),
    Type.Object({ type: Type.Literal('message_stop') }),
    Type.Object({
      type: Type.Literal('error'),
      error: Type.Object({ type: Type.String(), message: Type.String() }),
    }),
  ],
  {
    description:
      'One event: `event: <type>` then `data: <this JSON>`. In order: message_start; per content block content_block_start, its content_block_delta events and content_block_stop (a ping after the first start); message_delta; message_stop. A stream an injected `stream_error` fault cuts ends with an `error` event instead.',
  },
);
