import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Literals, Nullable, Refusal, Tagged } from '../../platform/schema-helpers.js';
import { Cache, MAX_MESSAGES_TOOLS, obj } from './shared.js';

/** The web tools' names and limits (web-search.ts and web-fetch.ts check the rest). */
export const WEB_SEARCH_TOOL = 'web_search';
export const WEB_FETCH_TOOL = 'web_fetch';
/** The most entries one domain list may have (upstream: a long list is `request_too_large`). */
export const MAX_DOMAINS = 100;
/** The longest domain entry: a host name's 253 characters and a path. */
export const MAX_DOMAIN_CHARS = 1000;

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

/** Who may call a server tool: its closed list, in upstream's words. */
const CALLERS = `${ALLOWED_CALLERS.slice(0, -1)
  .map((c) => `'${c}'`)
  .join(', ')} or '${ALLOWED_CALLERS.at(-1)}'`;
const Callers = Type.Optional(
  Refusal(
    Type.Array(Refusal(Literals(ALLOWED_CALLERS), `Input should be ${CALLERS}`, { depth: 2 })),
    { type: 'Input should be a valid list' },
    { depth: 1 },
  ),
);

/**
 * A versioned tool (`web_search_20250305`, `bash_20250124`, `tool_search_tool_bm25_20251119`
 * or its unversioned name, ...): accepted and counted. Web search and web fetch run within the
 * request (server-run.ts); the others upstream runs are never called by the emulator; one the
 * client runs (bash, text editor, memory, computer) is (see prompt/tools.ts).
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
 */
const ServerToolFields = Type.Object(
  {
    type: Type.String({
      pattern:
        '^(?!web_search_\\d{8}$|web_fetch_\\d{8}$|tool_search_tool_(bm25|regex)(_\\d{8})?$|(bash|memory|computer|code_execution|text_editor)_\\d{8}$)((?![a-z0-9_]*_toolset_)[a-z][a-z0-9_]*_\\d{8})$',
    }),
    name: Type.String({ minLength: 1 }),
    cache_control: Cache,
    allowed_callers: Callers,
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

/**
 * The text editor's name changed with its 2025-04-29 version: the versions before it.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool
 */
const EDITOR_BEFORE_20250429 =
  '(1\\d{7}|20[01]\\d{5}|202[0-4]\\d{4}|20250[1-3]\\d{2}|202504([01]\\d|2[0-8]))';

const webTool = {
  max_uses: Positive,
  allowed_domains: Domains,
  blocked_domains: Domains,
  allowed_callers: Callers,
};
const called = { allowed_callers: Callers };
const UserLocationField = under(Type.String(), { type: VALID.string }, 2);

/**
 * The server tools, one schema per kind (docs/agents.md): web search, web fetch, tool
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
    serverTool('^tool_search_tool_regex(_\\d{8})?$', 'tool_search_tool_regex', called),
    serverTool('^tool_search_tool_bm25(_\\d{8})?$', 'tool_search_tool_bm25', called),
    // The Anthropic-defined tools the client runs, and code execution: each its fixed name.
    serverTool('^bash_\\d{8}$', 'bash', called),
    serverTool('^memory_\\d{8}$', 'memory', called),
    serverTool('^computer_\\d{8}$', 'computer', called),
    serverTool('^code_execution_\\d{8}$', 'code_execution', called),
    serverTool(`^text_editor_${EDITOR_BEFORE_20250429}$`, 'str_replace_editor', called),
    serverTool(
      `^text_editor_(?!${EDITOR_BEFORE_20250429}$)\\d{8}$`,
      'str_replace_based_edit_tool',
      called,
    ),
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

export const Tool = Type.Union([CustomToolSchema, ToolsetSchema, ServerToolSchema], {
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

export const JsonOutputFormat = obj({
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
