import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Literals, Nullable, Refusal, Tagged } from '../platform/schema-helpers.js';
import { STOP_REASONS } from '../text/agent.js';

/** The web tools' names and limits (web-search.ts and web-fetch.ts check the rest). */
export const WEB_SEARCH_TOOL = 'web_search';
export const WEB_FETCH_TOOL = 'web_fetch';
/** The most entries one domain list may have (upstream: a long list is `request_too_large`). */
export const MAX_DOMAINS = 100;
/** The longest domain entry: a host name's 253 characters and a path. */
export const MAX_DOMAIN_CHARS = 1000;

/** The most tools one messages request may offer (README "What is refused"). */
export const MAX_MESSAGES_TOOLS = 1000;

/**
 * The messages API's request and response shapes, as upstream's wire has them.
 * @see https://platform.claude.com/docs/en/api/messages
 * @see https://platform.claude.com/docs/en/build-with-claude/streaming
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use
 * @see https://platform.claude.com/docs/en/build-with-claude/vision
 * @see https://platform.claude.com/docs/en/build-with-claude/pdf-support
 * @see https://platform.claude.com/docs/en/build-with-claude/extended-thinking
 * @see https://platform.claude.com/docs/en/build-with-claude/structured-outputs
 */

const closed = { additionalProperties: false } as const;
const obj = <P extends Record<string, TSchema>>(properties: P) => Type.Object(properties, closed);

export const CacheControlSchema = obj({
  type: Type.Literal('ephemeral'),
  ttl: Type.Optional(Literals(['5m', '1h'])),
});
const Cache = Type.Optional(Nullable(CacheControlSchema));

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
const SummarizeSchema = obj({
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

const System = Type.Union([Type.String(), Type.Array(TextBlockSchema)], {
  description: 'a string or an array of text blocks',
});

/**
 * Who may call a tool: the model (`direct`), or code the model runs with that version of the
 * code execution tool (programmatic tool calling).
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/programmatic-tool-calling
 */
export const ALLOWED_CALLERS = [
  'direct',
  'code_execution_20250825',
  'code_execution_20260120',
  'code_execution_20260521',
] as const;

/** A custom tool's name (upstream's pattern). */
export const CUSTOM_TOOL_NAME = '^[a-zA-Z0-9_-]{1,64}$';

/** A tool the client runs: its input is described by a JSON Schema. */
export const CustomToolSchema = obj({
  type: Type.Optional(Nullable(Type.Literal('custom'))),
  name: Refusal(
    Type.String({ pattern: CUSTOM_TOOL_NAME }),
    `String should match pattern '${CUSTOM_TOOL_NAME}'`,
    { depth: 1, value: 'custom' },
  ),
  description: Type.Optional(Type.String()),
  input_schema: Type.Object(
    {
      type: Type.Literal('object'),
      properties: Type.Optional(Nullable(Type.Record(Type.String(), Type.Unknown()))),
      required: Type.Optional(Nullable(Type.Array(Type.String()))),
    },
    { additionalProperties: true },
  ),
  cache_control: Cache,
  strict: Type.Optional(Type.Boolean()),
  defer_loading: Type.Optional(Type.Boolean()),
  eager_input_streaming: Type.Optional(Nullable(Type.Boolean())),
  input_examples: Type.Optional(Type.Array(Type.Record(Type.String(), Type.Unknown()))),
  allowed_callers: Type.Optional(Type.Array(Literals(ALLOWED_CALLERS), { maxItems: 16 })),
});

/**
 * A versioned tool (`web_search_20250305`, `bash_20250124`, `tool_search_tool_bm25_20251119`
 * or its unversioned name, ...): accepted and counted. Web search and web fetch run within the
 * request (server-run.ts); the others upstream runs are never called by the emulator; one the
 * client runs (bash, text editor, memory, computer) is (see prompt.ts).
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
 */
const ServerToolFields = Type.Object(
  {
    type: Type.String({
      pattern:
        '^(?!web_search_\\d{8}$|web_fetch_\\d{8}$|tool_search_tool_(bm25|regex)(_\\d{8})?$)((?![a-z0-9_]*_toolset_)[a-z][a-z0-9_]*_\\d{8})$',
    }),
    name: Type.String({ minLength: 1 }),
    cache_control: Cache,
  },
  { additionalProperties: true },
);

/**
 * What a web tool's or tool search's fields are refused with: upstream's words, the field
 * named under the tool's type (`tools.0.web_search_20250305.max_uses`). Rules across fields
 * (one domain list at most, `url_sources` naming tools of the request) and a domain's form
 * stay in web-search.ts and web-fetch.ts.
 */
const under = <T extends TSchema>(
  schema: T,
  problems: string | Record<string, string>,
  depth = 1,
) => Type.Optional(Nullable(Refusal(schema, problems, { depth })));
const VALID = {
  integer: 'Input should be a valid integer',
  string: 'Input should be a valid string',
  boolean: 'Input should be a valid boolean',
  dictionary: 'Input should be a valid dictionary',
};
const Positive = under(Type.Integer({ minimum: 1 }), {
  type: VALID.integer,
  default: 'Input should be greater than 0',
});
const Domains = under(
  Type.Array(
    Refusal(
      Type.String({ maxLength: MAX_DOMAIN_CHARS }),
      { type: VALID.string, default: `String should have at most ${MAX_DOMAIN_CHARS} characters` },
      { depth: 2 },
    ),
    { minItems: 1, maxItems: MAX_DOMAINS },
  ),
  {
    type: 'Input should be a valid list',
    minItems: 'Empty list of domains is ambiguous. Provide at least one domain or null.',
    maxItems: `List should have at most ${MAX_DOMAINS} items`,
  },
);
const Inclusion = under(Literals(['full', 'excluded']), "Input should be 'full' or 'excluded'");

/** A server tool of one kind: its type, its one name, its own fields (others are taken). */
const serverTool = (type: string, name: string, fields: Record<string, TSchema>) =>
  Refusal(
    Type.Object(
      {
        type: Type.String({ pattern: type }),
        name: Refusal(Type.Literal(name), `Input should be '${name}'`, { depth: 1 }),
        cache_control: Cache,
        ...fields,
      },
      { additionalProperties: true },
    ),
    { 'required/name': 'Field required' },
    { depth: 0, of: type },
  );

const webTool = { max_uses: Positive, allowed_domains: Domains, blocked_domains: Domains };
const UserLocationField = under(Type.String(), { type: VALID.string }, 2);

/**
 * The server tools, one schema per kind (README "Server tools"): web search, web fetch, tool
 * search (regex, bm25), and any other versioned tool (`bash_20250124`, ...), which is accepted
 * and counted. A tool of no known type, with no name, is refused by readTools.
 */
export const ServerToolSchema = Type.Union(
  [
    serverTool('^web_search_\\d{8}$', WEB_SEARCH_TOOL, {
      ...webTool,
      user_location: under(
        Type.Object(
          {
            type: Refusal(Type.Literal('approximate'), "Input should be 'approximate'", {
              depth: 2,
            }),
            city: UserLocationField,
            region: UserLocationField,
            country: UserLocationField,
            timezone: UserLocationField,
          },
          { additionalProperties: true },
        ),
        { type: VALID.dictionary, 'required/type': "Input should be 'approximate'" },
      ),
      response_inclusion: Inclusion,
    }),
    serverTool('^web_fetch_\\d{8}$', WEB_FETCH_TOOL, {
      ...webTool,
      citations: under(
        Type.Object(
          {
            enabled: Type.Optional(Refusal(Type.Boolean(), { type: VALID.boolean }, { depth: 2 })),
          },
          { additionalProperties: true },
        ),
        { type: VALID.dictionary },
      ),
      max_content_tokens: Positive,
      use_cache: under(Type.Boolean(), { type: VALID.boolean }),
      response_inclusion: Inclusion,
      url_sources: Type.Optional(Type.Unknown({ description: 'names tools of this request' })),
    }),
    serverTool('^tool_search_tool_regex(_\\d{8})?$', 'tool_search_tool_regex', {}),
    serverTool('^tool_search_tool_bm25(_\\d{8})?$', 'tool_search_tool_bm25', {}),
    // `name` is left to readTools (a tool without one is refused there): a type of no tool,
    // with no name, is then refused for its type.
    Type.Unsafe<Static<typeof ServerToolFields>>({ ...ServerToolFields, required: ['type'] }),
  ],
  { description: 'a versioned server tool ({type, name})' },
);

/**
 * The members of each toolset, by the name their calls carry: what its `configs` may set.
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
 */
export const TOOLSET_MEMBERS = {
  browser_toolset_20260801: [
    'close_tab',
    'double_click',
    'file_upload',
    'find',
    'form_input',
    'get_page_text',
    'hold_key',
    'hover',
    'javascript_exec',
    'key',
    'left_click',
    'left_click_drag',
    'left_mouse_down',
    'left_mouse_up',
    'list_tabs',
    'middle_click',
    'mouse_move',
    'navigate',
    'new_tab',
    'read_console',
    'read_network',
    'read_page',
    'right_click',
    'screenshot',
    'scroll',
    'scroll_to',
    'switch_tab',
    'triple_click',
    'type',
    'wait',
    'zoom',
  ],
  computer_toolset_20260801: [
    'cursor_position',
    'double_click',
    'hold_key',
    'key',
    'left_click',
    'left_click_drag',
    'left_mouse_down',
    'left_mouse_up',
    'middle_click',
    'mouse_move',
    'right_click',
    'screenshot',
    'scroll',
    'triple_click',
    'type',
    'wait',
    'zoom',
  ],
} as const;

const MemberConfig = Type.Optional(
  Nullable(
    obj({
      defer_loading: Type.Optional(Nullable(Type.Boolean())),
      enabled: Type.Optional(Nullable(Type.Boolean())),
    }),
  ),
);

/**
 * A toolset the client runs (a browser, a computer): one definition for a family of tools, each
 * member's call a `tool_use` with its member name and `toolset_name`. No `name`; `configs` sets
 * members apart (`enabled`, `defer_loading`), keyed by member name, unknown keys refused.
 * Accepted and counted; the emulator never calls a member.
 */
export const ToolsetSchema = Tagged(
  'type',
  Object.entries(TOOLSET_MEMBERS).map(([type, members]) =>
    obj({
      type: Type.Literal(type),
      cache_control: Cache,
      configs: Type.Optional(
        Nullable(obj(Object.fromEntries(members.map((member) => [member, MemberConfig])))),
      ),
    }),
  ),
);

const Tool = Type.Union([CustomToolSchema, ToolsetSchema, ServerToolSchema], {
  description:
    'a custom tool ({name, input_schema}), a toolset ({type}) or a versioned server tool ({type, name})',
});

const Parallel = Type.Optional(Type.Boolean());
export const ToolChoiceSchema = Tagged('type', [
  obj({ type: Type.Literal('auto'), disable_parallel_tool_use: Parallel }),
  obj({ type: Type.Literal('any'), disable_parallel_tool_use: Parallel }),
  obj({ type: Type.Literal('tool'), name: Type.String(), disable_parallel_tool_use: Parallel }),
  obj({ type: Type.Literal('none') }),
]);

/** The least thinking budget upstream takes. */
export const THINKING_MIN_BUDGET_TOKENS = 1024;
const Display = Type.Optional(Nullable(Literals(['summarized', 'omitted'])));
export const ThinkingConfigSchema = Tagged('type', [
  obj({
    type: Type.Literal('enabled'),
    budget_tokens: Refusal(
      Type.Integer({
        minimum: THINKING_MIN_BUDGET_TOKENS,
        description: 'less than max_tokens (unless thinking interleaves with tools)',
      }),
      `Input should be greater than or equal to ${THINKING_MIN_BUDGET_TOKENS}`,
      { depth: 1, value: 'enabled' },
    ),
    display: Display,
  }),
  obj({ type: Type.Literal('disabled') }),
  obj({ type: Type.Literal('adaptive'), display: Display }),
  /**
   * No thinking before the first answer; thinking between tool calls (after tool results)
   * only, as adaptive thinking interleaves it.
   * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
   */
  obj({ type: Type.Literal('between_tools') }),
]);

const JsonOutputFormat = obj({
  type: Type.Literal('json_schema'),
  schema: Type.Record(Type.String(), Type.Unknown()),
});

export const OutputConfigSchema = obj({
  effort: Type.Optional(Nullable(Literals(['low', 'medium', 'high', 'xhigh', 'max']))),
  format: Type.Optional(Nullable(JsonOutputFormat)),
});

const Threshold = <T extends string>(type: T, minimum: number) =>
  obj({ type: Type.Literal(type), value: Type.Integer({ minimum }) });
const ToolNames = Type.Array(Type.String({ maxLength: 256 }), { maxItems: MAX_MESSAGES_TOOLS });

/**
 * Context editing (the `context-management-2025-06-27` beta): clearing old tool results (and
 * calls) past a threshold, and thinking from earlier turns; and compaction (`compact_20260112`,
 * the `compact-2026-01-12` beta), which writes a summary of the conversation past its trigger.
 * @see https://platform.claude.com/docs/en/build-with-claude/context-editing
 * @see https://github.com/anthropics/anthropic-sdk-python/blob/main/src/anthropic/types/beta/beta_clear_tool_uses_20250919_edit_param.py
 * @see https://github.com/anthropics/anthropic-sdk-python/blob/main/src/anthropic/types/beta/beta_clear_thinking_20251015_edit_param.py
 */
export const ClearToolUsesEditSchema = obj({
  type: Type.Literal('clear_tool_uses_20250919'),
  trigger: Type.Optional(Tagged('type', [Threshold('input_tokens', 1), Threshold('tool_uses', 1)])),
  keep: Type.Optional(Threshold('tool_uses', 0)),
  clear_at_least: Type.Optional(Nullable(Threshold('input_tokens', 0))),
  exclude_tools: Type.Optional(Nullable(ToolNames)),
  clear_tool_inputs: Type.Optional(Nullable(Type.Union([Type.Boolean(), ToolNames]))),
});
export const ClearThinkingEditSchema = obj({
  type: Type.Literal('clear_thinking_20251015'),
  keep: Type.Optional(
    Type.Union([
      Tagged('type', [Threshold('thinking_turns', 1), obj({ type: Type.Literal('all') })]),
      Type.Literal('all'),
    ]),
  ),
});
/**
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction
 * @see https://github.com/anthropics/anthropic-sdk-python/blob/main/src/anthropic/types/beta/beta_compact_20260112_edit_param.py
 */
export const CompactEditSchema = obj({
  type: Type.Literal('compact_20260112'),
  trigger: Type.Optional(
    Nullable(
      obj({
        type: Type.Literal('input_tokens'),
        value: Type.Integer({ description: 'at least 50000' }),
      }),
    ),
  ),
  pause_after_compaction: Type.Optional(Nullable(Type.Boolean())),
  instructions: Type.Optional(Nullable(Type.String())),
});
export const ContextManagementSchema = obj({
  edits: Type.Optional(
    Type.Array(
      Tagged('type', [ClearToolUsesEditSchema, ClearThinkingEditSchema, CompactEditSchema]),
      {
        maxItems: 8,
      },
    ),
  ),
});
export type ContextManagement = Static<typeof ContextManagementSchema>;
export type ClearToolUsesEdit = Static<typeof ClearToolUsesEditSchema>;
export type ClearThinkingEdit = Static<typeof ClearThinkingEditSchema>;
export type CompactEdit = Static<typeof CompactEditSchema>;

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
export type ContentBlockParam = Static<typeof ContentBlockParam>;
export type TextBlock = Static<typeof TextBlockSchema>;
export type ImageBlock = Static<typeof ImageBlockSchema>;
export type DocumentBlock = Static<typeof DocumentBlockSchema>;
export type SearchResultBlock = Static<typeof SearchResultBlockSchema>;
export type ToolResultBlock = Static<typeof ToolResultBlockSchema>;
export type CustomTool = Static<typeof CustomToolSchema>;
export type ToolParam = Static<typeof Tool>;
export type Toolset = Static<typeof ToolsetSchema>;
export type CacheControl = Static<typeof CacheControlSchema>;

/** A reply's stop reasons, and `compaction` (a compaction that pauses, README "Compaction"). */
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
    description: 'uncached prompt tokens, and the pages a web search found (README "Web search")',
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
 * Where a cited text is, in a document or search result of the request (README "Citations"):
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
