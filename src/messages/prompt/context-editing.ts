import { fieldError, GatewayError } from '../../platform/errors.js';
import { countTokens } from '../../platform/tokens.js';
import { keepsAllThinking } from '../../text/models.js';
import { countPrompt, type PromptBlock } from '../../text/prompt-cache.js';
import type { ClearToolUsesEdit, ContextManagementResponse } from '../schemas.js';
import { COMPACT, CONTEXT_MANAGEMENT } from './betas.js';
import { type Compaction, readCompaction } from './compaction.js';
import type { Request } from './request.js';

type AppliedEdit = ContextManagementResponse['applied_edits'][number];

const NO_CLEARED: ReadonlySet<string> = new Set();

/** The default: the model's thinking rule, nothing cleared. */
const keepTurnsByModel = (model: string, thinking: boolean) =>
  thinking && keepsAllThinking(model) ? Number.POSITIVE_INFINITY : 1;

/** A request without `context_management` (most): nothing to allocate. */
const NOT_EDITED: Editing = {
  compaction: undefined,
  keepTurns: keepTurnsByModel,
  thinkingCleared: () => {},
  toolUse: () => {},
  toolResult: () => {},
  apply: () => ({ cleared: NO_CLEARED }),
};

/** The same with the beta: its answers say no edit applied. */
const NOT_EDITED_BETA: Editing = {
  ...NOT_EDITED,
  apply: () => ({ cleared: NO_CLEARED, applied: [] }),
};

/**
 * What replaces a tool result context editing clears (upstream says only that a placeholder
 * tells the model the result was removed; its words are not published).
 */
export const CLEARED_RESULT = '[cleared]';

/** The defaults of `clear_tool_uses_20250919`: past 100 000 input tokens, keep 3 tool uses. */
export const CLEAR_TOOL_USES_TRIGGER = 100_000;
export const CLEAR_TOOL_USES_KEEP = 3;

interface ToolUseSeen {
  id: string;
  name: string;
  /** Its prompt block (its name and input). */
  block: number;
}

/** What context editing needs to see of the prompt as it is read, and what it then does. */
export interface Editing {
  /** A `compact_20260112` edit, applied once the prompt is read and counted (routes). */
  compaction: Compaction | undefined;
  /** How many of the latest assistant turns with thinking keep it in the context. */
  keepTurns(model: string, thinking: boolean): number;
  /** A thinking block left out of the context, in message `turn`. */
  thinkingCleared(turn: number, text: string): void;
  /** A `tool_use` block, read into prompt block `block` (its name and input). */
  toolUse(id: string, name: string, block: number): void;
  /** A `tool_result` block, read into prompt blocks `from` to `to` (excluded). */
  toolResult(id: string, from: number, to: number): void;
  /** Clears tool uses as asked (the blocks change in place), and says what was applied. */
  apply(blocks: PromptBlock[]): {
    cleared: ReadonlySet<string>;
    applied?: AppliedEdit[];
    originalTokens?: number;
  };
}

/**
 * `context_management` (docs/messages.md "Context editing"): taken with its beta only (without it
 * upstream's validator refuses the field), `clear_thinking_20251015` first when given, each
 * strategy once, thinking clearing only with thinking on.
 * @see https://platform.claude.com/docs/en/build-with-claude/context-editing
 * @see https://github.com/anthropics/claude-code/issues/14135
 * @see https://github.com/anthropics/claude-code/issues/11971
 */
export function readContextManagement(
  body: Request,
  betas: ReadonlySet<string>,
  thinking: boolean,
): Editing {
  const config = body.context_management;
  const beta = betas.has(CONTEXT_MANAGEMENT) || betas.has(COMPACT);
  if (config !== undefined && !beta) {
    throw new GatewayError(400, 'context_management: Extra inputs are not permitted');
  }
  if (config === undefined) return betas.has(CONTEXT_MANAGEMENT) ? NOT_EDITED_BETA : NOT_EDITED;
  const edits = config?.edits ?? [];
  const seen = new Set<string>();
  let compaction: Compaction | undefined;
  edits.forEach((edit, i) => {
    if (edit.type === 'compact_20260112') compaction = readCompaction(edit, i, body.model, betas);
    if (seen.has(edit.type)) {
      throw fieldError(
        ['context_management', 'edits', i],
        `duplicate context management strategy \`${edit.type}\``,
      );
    }
    seen.add(edit.type);
    if (edit.type === 'clear_thinking_20251015' && i > 0) {
      throw new GatewayError(
        400,
        'context_management: `clear_thinking_20251015` must be the first strategy in `context_management.edits` when provided',
      );
    }
  });
  const thinkingEdit = edits.find((e) => e.type === 'clear_thinking_20251015');
  if (thinkingEdit && !thinking) {
    throw new GatewayError(
      400,
      '`clear_thinking_20251015` strategy requires `thinking` to be enabled or adaptive',
    );
  }
  const toolsEdit = edits.find(
    (e): e is ClearToolUsesEdit => e.type === 'clear_tool_uses_20250919',
  );
  const clearedTurns = new Set<number>();
  let clearedThinkingTokens = 0;
  const uses: ToolUseSeen[] = [];
  const results = new Map<string, Array<readonly [number, number]>>();
  return {
    compaction,
    keepTurns(model) {
      if (!thinkingEdit) return keepTurnsByModel(model, thinking);
      const keep = thinkingEdit.keep;
      if (keep === undefined) return 1;
      return keep === 'all' || keep.type === 'all' ? Number.POSITIVE_INFINITY : keep.value;
    },
    thinkingCleared(turn, text) {
      if (!thinkingEdit) return;
      clearedTurns.add(turn);
      clearedThinkingTokens += countTokens(text);
    },
    toolUse(id, name, block) {
      if (toolsEdit) uses.push({ id, name, block });
    },
    toolResult(id, from, to) {
      if (!toolsEdit) return;
      const ranges = results.get(id);
      if (ranges) ranges.push([from, to]);
      else results.set(id, [[from, to]]);
    },
    apply(blocks) {
      const applied: AppliedEdit[] = [];
      if (clearedTurns.size > 0) {
        applied.push({
          type: 'clear_thinking_20251015',
          cleared_thinking_turns: clearedTurns.size,
          cleared_input_tokens: clearedThinkingTokens,
        });
      }
      // (the prompt as thinking clearing left it: what tool clearing's trigger reads)
      const total = countPrompt(blocks);
      const cleared = toolsEdit
        ? clearToolUses(toolsEdit, blocks, total, uses, results, applied)
        : NO_CLEARED;
      // (a compaction is not an applied edit: its summary block says it happened)
      return {
        cleared,
        ...(beta ? { applied } : {}),
        ...(config ? { originalTokens: total + clearedThinkingTokens } : {}),
      };
    },
  };
}

const tokensOf = (block: PromptBlock) => block.tokens ?? countTokens(block.text);

/**
 * `clear_tool_uses_20250919`: once the prompt is past its trigger (input tokens, or tool uses),
 * the results of the oldest tool uses but the `keep` latest (`exclude_tools` apart) are
 * replaced by CLEARED_RESULT, and their inputs by `{}` when `clear_tool_inputs` says so (true,
 * or a list of tool names); a use whose clearing would free nothing (a result no longer than
 * the placeholder) is left as it is; nothing is cleared unless at least `clear_at_least` tokens
 * would be. Returns the ids of the tool uses cleared.
 */
function clearToolUses(
  edit: ClearToolUsesEdit,
  blocks: PromptBlock[],
  total: number,
  uses: readonly ToolUseSeen[],
  results: ReadonlyMap<string, ReadonlyArray<readonly [number, number]>>,
  applied: AppliedEdit[],
): Set<string> {
  const cleared = new Set<string>();
  const trigger = edit.trigger ?? { type: 'input_tokens', value: CLEAR_TOOL_USES_TRIGGER };
  const reached =
    trigger.type === 'tool_uses' ? uses.length > trigger.value : total > trigger.value;
  if (!reached) return cleared;
  const excluded = new Set(edit.exclude_tools ?? []);
  const eligible = uses.filter((use) => !excluded.has(use.name));
  const keep = edit.keep?.value ?? CLEAR_TOOL_USES_KEEP;
  const chosen = eligible.slice(0, Math.max(0, eligible.length - keep));
  const inputs = edit.clear_tool_inputs ?? false;
  const listed = new Set(Array.isArray(inputs) ? inputs : []);
  const clearsInput = (name: string) => inputs === true || listed.has(name);
  const changes = new Map<number, PromptBlock>();
  let freed = 0;
  for (const use of chosen) {
    // This use's blocks as cleared: its results (every one sent for its id), its input if asked.
    const mine: Array<[number, PromptBlock]> = [];
    for (const [from, to] of results.get(use.id) ?? []) {
      for (let k = from; k < to; k++) {
        const { tokens: _, ...block } = blocks[k] as PromptBlock;
        mine.push([
          k,
          k === from
            ? { ...block, text: `${use.id}\n${CLEARED_RESULT}` }
            : { ...block, text: '', tokens: 0 },
        ]);
      }
    }
    if (clearsInput(use.name)) {
      mine.push([use.block, { ...(blocks[use.block] as PromptBlock), text: `${use.name}\n{}` }]);
    }
    let gain = 0;
    for (const [index, next] of mine)
      gain += tokensOf(blocks[index] as PromptBlock) - tokensOf(next);
    // A result no longer than the placeholder is left as it is: clearing it would add tokens.
    if (gain <= 0) continue;
    for (const [index, next] of mine) changes.set(index, next);
    freed += gain;
    cleared.add(use.id);
  }
  if (cleared.size === 0) return cleared;
  if (edit.clear_at_least && freed < edit.clear_at_least.value) return new Set();
  for (const [index, block] of changes) blocks[index] = block;
  applied.push({
    type: 'clear_tool_uses_20250919',
    cleared_tool_uses: cleared.size,
    cleared_input_tokens: freed,
  });
  return cleared;
}
