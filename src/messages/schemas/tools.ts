import { type Static, Type } from '@sinclair/typebox';
import { Literals, Nullable, Tagged } from '../../platform/schema-helpers.js';
import { Cache, MAX_MESSAGES_TOOLS, obj } from './shared.js';

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

/** A tool the client runs: its input is described by a JSON Schema. */
export const CustomToolSchema = obj({
  type: Type.Optional(Nullable(Type.Literal('custom'))),
  name: Type.String({ description: "matches '^[a-zA-Z0-9_-]{1,64}$'" }),
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
 * client runs (bash, text editor, memory, computer) is (see prompt/tools.ts).
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
 */
const ServerToolFields = Type.Object(
  {
    type: Type.String({
      pattern: '^((?![a-z0-9_]*_toolset_)[a-z][a-z0-9_]*_\\d{8}|tool_search_tool_(bm25|regex))$',
    }),
    name: Type.String({ minLength: 1 }),
    cache_control: Cache,
  },
  { additionalProperties: true },
);

// `name` is left to readTools (a tool without one is refused there): a type of no tool, with
// no name, is then refused for its type.
export const ServerToolSchema = Type.Unsafe<Static<typeof ServerToolFields>>({
  ...ServerToolFields,
  required: ['type'],
});

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

const Display = Type.Optional(Nullable(Literals(['summarized', 'omitted'])));
export const ThinkingConfigSchema = Tagged('type', [
  obj({
    type: Type.Literal('enabled'),
    budget_tokens: Type.Integer({ description: 'at least 1024 and less than max_tokens' }),
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
