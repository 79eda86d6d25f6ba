import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Literals, Nullable, Tagged } from '../../platform/schema-helpers.js';
import { Cache, MAX_MESSAGES_TOOLS, obj } from './shared.js';

const DocumentTitle = Type.Union([Type.String(), Type.Null()]);
/** What an answer's citation adds (sent back with it): the cited file, when one was. */
const FileId = Type.Optional(Nullable(Type.String()));

/**
 * Where a text sent back (an earlier answer's) quotes from: the closed list of citation
 * locations. An answer's `file_id` comes back with it.
 * @see https://platform.claude.com/docs/en/build-with-claude/citations
 */
export const CitationParamSchema = Tagged('type', [
  obj({
    type: Type.Literal('char_location'),
    cited_text: Type.String(),
    document_index: Type.Integer({ minimum: 0 }),
    document_title: DocumentTitle,
    start_char_index: Type.Integer({ minimum: 0 }),
    end_char_index: Type.Integer({ minimum: 0 }),
    file_id: FileId,
  }),
  obj({
    type: Type.Literal('page_location'),
    cited_text: Type.String(),
    document_index: Type.Integer({ minimum: 0 }),
    document_title: DocumentTitle,
    start_page_number: Type.Integer({ minimum: 1 }),
    end_page_number: Type.Integer({ minimum: 1 }),
    file_id: FileId,
  }),
  obj({
    type: Type.Literal('content_block_location'),
    cited_text: Type.String(),
    document_index: Type.Integer({ minimum: 0 }),
    document_title: DocumentTitle,
    start_block_index: Type.Integer({ minimum: 0 }),
    end_block_index: Type.Integer({ minimum: 0 }),
    file_id: FileId,
  }),
  obj({
    type: Type.Literal('web_search_result_location'),
    cited_text: Type.String(),
    encrypted_index: Type.String(),
    title: DocumentTitle,
    url: Type.String(),
  }),
  obj({
    type: Type.Literal('search_result_location'),
    cited_text: Type.String(),
    search_result_index: Type.Integer({ minimum: 0 }),
    source: Type.String(),
    title: DocumentTitle,
    start_block_index: Type.Integer({ minimum: 0 }),
    end_block_index: Type.Integer({ minimum: 0 }),
  }),
]);

export const TextBlockSchema = obj({
  type: Type.Literal('text'),
  text: Type.String(),
  cache_control: Cache,
  citations: Type.Optional(Nullable(Type.Array(CitationParamSchema))),
});

export const IMAGE_MEDIA_TYPES = ['image/jpeg', 'image/png', 'image/gif', 'image/webp'] as const;

const Base64ImageSource = obj({
  type: Type.Literal('base64'),
  media_type: Literals(IMAGE_MEDIA_TYPES),
  data: Type.String({ minLength: 1 }),
});

const UrlSource = obj({ type: Type.Literal('url'), url: Type.String({ minLength: 1 }) });
const FileSource = obj({ type: Type.Literal('file'), file_id: Type.String({ minLength: 1 }) });

export const ImageBlockSchema = obj({
  type: Type.Literal('image'),
  source: Tagged('type', [Base64ImageSource, UrlSource, FileSource]),
  cache_control: Cache,
  /**
   * What an image over the size limit gets: scaled down to fit (`downsize`, the default), or a
   * 400 naming its size and the largest that fits (`error`).
   * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
   */
  transformations: Type.Optional(
    Nullable(obj({ oversized_image: Type.Optional(Literals(['downsize', 'error'])) })),
  ),
});

const Base64PdfSource = obj({
  type: Type.Literal('base64'),
  media_type: Type.Literal('application/pdf'),
  data: Type.String({ minLength: 1 }),
});

const PlainTextSource = obj({
  type: Type.Literal('text'),
  media_type: Type.Literal('text/plain'),
  data: Type.String(),
});

const ContentSource = obj({
  type: Type.Literal('content'),
  content: Type.Union(
    [Type.String(), Type.Array(Tagged('type', [TextBlockSchema, ImageBlockSchema]))],
    {
      description: 'a string or an array of text and image blocks',
    },
  ),
});

export const DocumentBlockSchema = obj({
  type: Type.Literal('document'),
  source: Tagged('type', [Base64PdfSource, PlainTextSource, ContentSource, UrlSource, FileSource]),
  title: Type.Optional(Nullable(Type.String({ maxLength: 500 }))),
  context: Type.Optional(Nullable(Type.String())),
  citations: Type.Optional(Nullable(obj({ enabled: Type.Optional(Type.Boolean()) }))),
  cache_control: Cache,
});

export const SearchResultBlockSchema = obj({
  type: Type.Literal('search_result'),
  source: Type.String(),
  title: Type.String(),
  content: Type.Array(TextBlockSchema),
  citations: Type.Optional(obj({ enabled: Type.Optional(Type.Boolean()) })),
  cache_control: Cache,
});

/**
 * Who called a tool: the model (`direct`), or code it ran with a code execution tool (that
 * call's id). An answer's calls carry it, and come back with it.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/programmatic-tool-calling
 */
export const CALLERS = ['direct', 'code_execution_20250825', 'code_execution_20260120'] as const;
const CallerSchema = Tagged('type', [
  obj({ type: Type.Literal('direct') }),
  obj({ type: Type.Literal('code_execution_20250825'), tool_id: Type.String() }),
  obj({ type: Type.Literal('code_execution_20260120'), tool_id: Type.String() }),
]);

const Caller = Type.Optional(CallerSchema);

export const ToolUseBlockSchema = obj({
  type: Type.Literal('tool_use'),
  id: Type.String({ minLength: 1 }),
  name: Type.String({ minLength: 1 }),
  input: Type.Record(Type.String(), Type.Unknown()),
  cache_control: Cache,
  caller: Caller,
  /** A toolset member's call: the toolset (`browser`, `computer`). */
  toolset_name: Type.Optional(Nullable(Type.String())),
});

/**
 * A tool a search found, named in a `tool_result` (a client's own tool search) or in upstream's
 * `tool_search_tool_result`: its definition is read into the prompt there.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool
 */
export const ToolReferenceBlockSchema = obj({
  type: Type.Literal('tool_reference'),
  tool_name: Type.String({ minLength: 1 }),
  cache_control: Cache,
});

/**
 * The client's browser after a browser toolset member's call (at most one, in that call's
 * result): every open tab, and what the call changed. Read as its JSON.
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
 */
export const BrowserStateBlockSchema = obj({
  type: Type.Literal('browser_state'),
  tabs: Type.Array(
    obj({
      tab_id: Type.String(),
      title: Type.String(),
      url: Type.String(),
      active: Type.Optional(Type.Boolean()),
    }),
    { maxItems: 1000 },
  ),
  state_changes: Type.Optional(
    Nullable(
      Type.Array(
        Tagged('type', [
          obj({ type: Type.Literal('tab_opened'), tab_id: Type.String() }),
          obj({
            type: Type.Literal('download_started'),
            download_id: Type.String(),
            url: Type.String(),
          }),
          obj({
            type: Type.Literal('download_completed'),
            download_id: Type.String(),
            url: Type.String(),
            path: Type.Optional(Nullable(Type.String())),
            size_bytes: Type.Optional(Nullable(Type.Integer({ minimum: 0 }))),
          }),
          obj({
            type: Type.Literal('download_failed'),
            download_id: Type.String(),
            url: Type.String(),
            error: Type.Optional(Nullable(Type.String())),
          }),
        ]),
        { maxItems: 1000 },
      ),
    ),
  ),
  cache_control: Cache,
});

export const ToolResultBlockSchema = obj({
  type: Type.Literal('tool_result'),
  tool_use_id: Type.String({ minLength: 1 }),
  content: Type.Optional(
    Type.Union(
      [
        Type.String(),
        Type.Array(
          Tagged('type', [
            TextBlockSchema,
            ImageBlockSchema,
            DocumentBlockSchema,
            SearchResultBlockSchema,
            ToolReferenceBlockSchema,
            BrowserStateBlockSchema,
          ]),
        ),
      ],
      {
        description:
          'a string or an array of text, image, document, search_result, tool_reference and browser_state blocks',
      },
    ),
  ),
  is_error: Type.Optional(Type.Boolean()),
  cache_control: Cache,
});

export const ThinkingBlockSchema = obj({
  type: Type.Literal('thinking'),
  thinking: Type.String(),
  signature: Type.String(),
});

export const RedactedThinkingBlockSchema = obj({
  type: Type.Literal('redacted_thinking'),
  data: Type.String(),
});

/**
 * Blocks of upstream's own tools (web search, web fetch, code execution, tool search), as an
 * assistant turn that used them comes back in the history: taken, each result's content of
 * its closed list of shapes, and counted as their JSON.
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
 */
export const SERVER_TOOL_RESULTS = [
  'web_search_tool_result',
  'web_fetch_tool_result',
  'code_execution_tool_result',
  'bash_code_execution_tool_result',
  'text_editor_code_execution_tool_result',
  'tool_search_tool_result',
] as const;

/** The tools upstream runs: a `server_tool_use` block calls one of them. */
export const SERVER_TOOL_NAMES = [
  'web_search',
  'web_fetch',
  'code_execution',
  'bash_code_execution',
  'text_editor_code_execution',
  'tool_search_tool_regex',
  'tool_search_tool_bm25',
] as const;

const ServerToolUseBlockSchema = obj({
  type: Type.Literal('server_tool_use'),
  id: Type.String({ minLength: 1 }),
  name: Literals(SERVER_TOOL_NAMES),
  input: Type.Record(Type.String(), Type.Unknown()),
  cache_control: Cache,
  caller: Caller,
});

/** Why a search found nothing (HTTP 200: the error is the result). */
export const WEB_SEARCH_ERRORS = [
  'invalid_tool_input',
  'unavailable',
  'max_uses_exceeded',
  'too_many_requests',
  'query_too_long',
  'request_too_large',
] as const;

/** Why a fetch read nothing (HTTP 200: the error is the result). @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-fetch-tool */
export const WEB_FETCH_ERRORS = [
  'invalid_tool_input',
  'url_too_long',
  'url_not_allowed',
  'url_not_in_prior_context',
  'url_not_accessible',
  'too_many_requests',
  'unsupported_content_type',
  'max_uses_exceeded',
  'unavailable',
  'content_too_large',
] as const;

/** Why a tool search, or code that ran, gave nothing. */
export const TOOL_SEARCH_ERRORS = [
  'invalid_tool_input',
  'unavailable',
  'too_many_requests',
  'execution_time_exceeded',
] as const;

const CODE_ERRORS = TOOL_SEARCH_ERRORS;

const resultError = <T extends string>(type: T, codes: readonly string[], message = false) =>
  obj({
    type: Type.Literal(type),
    error_code: Literals(codes),
    ...(message ? { error_message: Type.Optional(Nullable(Type.String())) } : {}),
  });
const serverResult = <T extends string, C extends TSchema>(type: T, content: C, caller = false) =>
  obj({
    type: Type.Literal(type),
    tool_use_id: Type.String({ minLength: 1 }),
    content,
    cache_control: Cache,
    ...(caller ? { caller: Caller } : {}),
  });
const CodeOutput = <T extends string>(type: T) =>
  Type.Array(obj({ type: Type.Literal(type), file_id: Type.String() }), { maxItems: 1000 });

const ServerToolResultSchemas = [
  serverResult(
    'web_search_tool_result',
    Type.Union(
      [
        Type.Array(
          obj({
            type: Type.Literal('web_search_result'),
            url: Type.String(),
            title: Type.String(),
            encrypted_content: Type.String(),
            page_age: Type.Optional(Nullable(Type.String())),
          }),
          { maxItems: 1000 },
        ),
        resultError('web_search_tool_result_error', WEB_SEARCH_ERRORS),
      ],
      { description: 'the pages found, or why none were' },
    ),
    true,
  ),
  serverResult(
    'web_fetch_tool_result',
    Tagged('type', [
      obj({
        type: Type.Literal('web_fetch_result'),
        url: Type.String(),
        content: DocumentBlockSchema,
        retrieved_at: Type.Optional(Nullable(Type.String())),
      }),
      resultError('web_fetch_tool_result_error', WEB_FETCH_ERRORS),
    ]),
    true,
  ),
  serverResult(
    'code_execution_tool_result',
    Tagged('type', [
      resultError('code_execution_tool_result_error', CODE_ERRORS),
      obj({
        type: Type.Literal('code_execution_result'),
        content: CodeOutput('code_execution_output'),
        return_code: Type.Integer(),
        stderr: Type.String(),
        stdout: Type.String(),
      }),
      obj({
        type: Type.Literal('encrypted_code_execution_result'),
        content: CodeOutput('code_execution_output'),
        encrypted_stdout: Type.String(),
        return_code: Type.Integer(),
        stderr: Type.String(),
      }),
    ]),
  ),
  serverResult(
    'bash_code_execution_tool_result',
    Tagged('type', [
      resultError('bash_code_execution_tool_result_error', [
        ...CODE_ERRORS,
        'output_file_too_large',
      ]),
      obj({
        type: Type.Literal('bash_code_execution_result'),
        content: CodeOutput('bash_code_execution_output'),
        return_code: Type.Integer(),
        stderr: Type.String(),
        stdout: Type.String(),
      }),
    ]),
  ),
  serverResult(
    'text_editor_code_execution_tool_result',
    Tagged('type', [
      resultError(
        'text_editor_code_execution_tool_result_error',
        [...CODE_ERRORS, 'file_not_found'],
        true,
      ),
      obj({
        type: Type.Literal('text_editor_code_execution_view_result'),
        content: Type.String(),
        file_type: Literals(['text', 'image', 'pdf']),
        num_lines: Type.Optional(Nullable(Type.Integer())),
        start_line: Type.Optional(Nullable(Type.Integer())),
        total_lines: Type.Optional(Nullable(Type.Integer())),
      }),
      obj({
        type: Type.Literal('text_editor_code_execution_create_result'),
        is_file_update: Type.Boolean(),
      }),
      obj({
        type: Type.Literal('text_editor_code_execution_str_replace_result'),
        lines: Type.Optional(Nullable(Type.Array(Type.String(), { maxItems: 100_000 }))),
        new_lines: Type.Optional(Nullable(Type.Integer())),
        new_start: Type.Optional(Nullable(Type.Integer())),
        old_lines: Type.Optional(Nullable(Type.Integer())),
        old_start: Type.Optional(Nullable(Type.Integer())),
      }),
    ]),
  ),
  serverResult(
    'tool_search_tool_result',
    Tagged('type', [
      resultError('tool_search_tool_result_error', TOOL_SEARCH_ERRORS, true),
      obj({
        type: Type.Literal('tool_search_tool_search_result'),
        tool_references: Type.Array(ToolReferenceBlockSchema, { maxItems: MAX_MESSAGES_TOOLS }),
      }),
    ]),
  ),
];

const ContainerUploadBlockSchema = obj({
  type: Type.Literal('container_upload'),
  file_id: Type.String({ minLength: 1 }),
  cache_control: Cache,
});

/**
 * A summary compaction wrote, sent back: at a threshold (the `compact-2026-01-12` beta) in an
 * assistant turn, everything before it dropped from the context; on demand (the
 * `compact-2026-09-04` beta) signed, first in `messages`, in place of what it summarizes.
 * `content: null` (a compaction that wrote nothing) is kept as a no-op. Like upstream, no
 * `encrypted_content` (which an SDK's block model may add: upstream refuses it as an extra
 * input). `tool_changes` goes back as it came (the emulator never sends any).
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand
 * @see https://github.com/anthropics/anthropic-sdk-python/issues/1828
 */
const CompactionBlockSchema = obj({
  type: Type.Literal('compaction'),
  content: Type.Optional(Nullable(Type.String())),
  signature: Type.Optional(Nullable(Type.String({ maxLength: 1024 }))),
  tool_changes: Type.Optional(Nullable(Type.Array(Type.Unknown(), { maxItems: 1000 }))),
  cache_control: Cache,
});

/**
 * On-demand compaction (the `compact-2026-09-04` beta): the request asks for a summary of the
 * conversation and nothing else. `instructions` replace the summarizing prompt; empty or
 * whitespace counts as absent.
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand
 */
export const SummarizeSchema = obj({
  type: Type.Literal('summarize'),
  instructions: Type.Optional(Nullable(Type.String({ maxLength: 16_384 }))),
});

const ContentBlockParam = Tagged('type', [
  TextBlockSchema,
  ImageBlockSchema,
  DocumentBlockSchema,
  SearchResultBlockSchema,
  ToolUseBlockSchema,
  ToolResultBlockSchema,
  ThinkingBlockSchema,
  RedactedThinkingBlockSchema,
  ServerToolUseBlockSchema,
  ...ServerToolResultSchemas,
  ContainerUploadBlockSchema,
  CompactionBlockSchema,
]);

const Content = Type.Union([Type.String(), Type.Array(ContentBlockParam, { minItems: 1 })], {
  description: 'a string or a non-empty array of content blocks',
});

/**
 * A turn: the user's, the assistant's, or a system message within the conversation (upstream's
 * mid-conversation system messages: text only, placed as readPrompt checks).
 * @see https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages
 */
export const MessageParamSchema = obj({
  role: Literals(['user', 'assistant', 'system']),
  content: Content,
});

export const System = Type.Union([Type.String(), Type.Array(TextBlockSchema)], {
  description: 'a string or an array of text blocks',
});

export type ContentBlockParam = Static<typeof ContentBlockParam>;
