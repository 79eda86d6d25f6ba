import { fieldError, GatewayError } from '../../platform/errors.js';
import { compacts } from '../../text/models.js';
import type { CompactEdit, ContentBlockParam, MessageParam } from '../schemas.js';
import { compactionError, ON_DEMAND, verifyCompaction } from '../signed-compaction.js';
import { COMPACT } from './betas.js';
import type { Request } from './request.js';

/** What a `compact_20260112` edit asks for. */
export interface Compaction {
  /** Input tokens past which the conversation is summarized first. */
  trigger: number;
  /** The reply stops after the summary (`stop_reason: "compaction"`). */
  pause: boolean;
  /** The prompt the summary is written with (the default's, when none is sent). */
  instructions: string | undefined;
}

/**
 * A top-level `compaction` (on demand): its beta, and the instructions that replace the
 * summarizing prompt (blank ones count as absent). count_tokens takes it too, and ignores it.
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand
 */
export function readSummarize(body: Request, betas: ReadonlySet<string>) {
  if (body.compaction === undefined || body.compaction === null) return undefined;
  if (!betas.has(ON_DEMAND)) {
    throw fieldError(
      ['compaction'],
      `requires the ${ON_DEMAND} beta (msgapi-beta or anthropic-beta)`,
    );
  }
  const instructions = body.compaction.instructions ?? undefined;
  return { instructions: instructions?.trim() ? instructions : undefined };
}

/** A compaction block signed by an on-demand compaction. */
export const isSigned = (block: ContentBlockParam) =>
  block.type === 'compaction' && typeof block.signature === 'string';

/**
 * A turn of compaction blocks only: what a paused compaction is sent back as, or an on-demand
 * summary sent back as a turn of its own.
 */
export const onlyCompaction = (message: MessageParam) =>
  typeof message.content !== 'string' && message.content.every((b) => b.type === 'compaction');

/**
 * Checks the `compaction` blocks of the conversation and finds the last one with a summary:
 * upstream drops everything before it. Undefined when there is none. A threshold compaction's
 * block (unsigned) needs a `compact_20260112` edit; an on-demand one (signed) its beta, to come
 * first in `messages` (what it summarizes is not sent again), alone, and unchanged.
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand
 */
export function lastCompaction(
  messages: readonly MessageParam[],
  betas: ReadonlySet<string>,
  compaction: Compaction | undefined,
): { message: number; block: number; summary: string } | undefined {
  const blocks: Array<{ i: number; j: number; block: CompactionBlock }> = [];
  messages.forEach((message, i) => {
    if (typeof message.content === 'string') return;
    message.content.forEach((block, j) => {
      if (block.type === 'compaction') blocks.push({ i, j, block });
    });
  });
  const first = blocks[0];
  if (first === undefined) return undefined;
  if (!betas.has(COMPACT) && !betas.has(ON_DEMAND)) {
    throw fieldError(
      ['messages', first.i, 'content', first.j],
      `Input tag 'compaction' found using 'type' does not match any of the expected tags (a compaction block takes the ${COMPACT} or ${ON_DEMAND} beta)`,
    );
  }
  if (
    blocks.some(({ block }) => isSigned(block)) &&
    blocks.filter(({ block }) => typeof block.content === 'string').length > 1
  ) {
    throw compactionError(
      'compaction_block_ambiguous',
      'messages: more than one `compaction` block has content; send only the block the conversation returned last',
    );
  }
  let found: { message: number; block: number; summary: string } | undefined;
  for (const { i, j, block } of blocks) {
    const at = ['messages', i, 'content', j];
    if (block.content === '') {
      throw fieldError([...at, 'compaction', 'content'], "content can't be empty");
    }
    if (isSigned(block)) checkSigned(block, i, j, betas, compaction);
    else if (!compaction) {
      throw new GatewayError(
        400,
        '`compaction` blocks require a `compact_20260112` strategy in `context_management.edits`.',
      );
    }
    if (typeof block.content === 'string') {
      found = { message: i, block: j, summary: block.content };
    }
  }
  return found;
}

type CompactionBlock = Extract<ContentBlockParam, { type: 'compaction' }>;

/** A signed (on-demand) compaction block sent back, at `messages[i].content[j]`. */
function checkSigned(
  block: CompactionBlock,
  i: number,
  j: number,
  betas: ReadonlySet<string>,
  compaction: Compaction | undefined,
): void {
  const at = ['messages', i, 'content', j];
  if (!betas.has(ON_DEMAND)) {
    throw fieldError([...at, 'compaction', 'signature'], `requires the ${ON_DEMAND} beta`);
  }
  if (i !== 0 || j !== 0) {
    throw compactionError(
      'compaction_block_misplaced',
      '`compaction` block must be sent first, in place of the messages it summarizes; remove those messages',
      at,
    );
  }
  if (compaction) {
    throw fieldError(
      ['context_management', 'edits'],
      '`compact_20260112` cannot run on a request that carries a signed `compaction` block',
    );
  }
  verifyCompaction(block.content, block.signature as string, at);
  if (block.tool_changes && block.tool_changes.length > 0) {
    throw compactionError(
      'compaction_tool_changes_mismatch',
      '`tool_changes` differs from what was returned with the block',
      [...at, 'tool_changes'],
    );
  }
}

/** A `compact_20260112` edit's default trigger, and the least one it takes (input tokens). */
const COMPACTION_TRIGGER = 150_000;
const COMPACTION_MIN_TRIGGER = 50_000;

/**
 * A `compact_20260112` edit: its beta, a model that compacts, a trigger of at least
 * COMPACTION_MIN_TRIGGER input tokens (upstream's words).
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction
 */
export function readCompaction(
  edit: CompactEdit,
  i: number,
  model: string,
  betas: ReadonlySet<string>,
): Compaction {
  const at = ['context_management', 'edits', i];
  if (!betas.has(COMPACT)) {
    throw fieldError(
      at,
      "Input tag 'compact_20260112' found using 'type' does not match any of the expected tags: 'clear_thinking_20251015', 'clear_tool_uses_20250919'",
    );
  }
  if (!compacts(model)) {
    throw fieldError(at, `\`compact_20260112\` is not supported on ${model}`);
  }
  const trigger = edit.trigger?.value ?? COMPACTION_TRIGGER;
  if (trigger < COMPACTION_MIN_TRIGGER) {
    throw fieldError(
      [...at, 'compact_20260112'],
      `trigger.value must be at least ${COMPACTION_MIN_TRIGGER}`,
    );
  }
  return {
    trigger,
    pause: edit.pause_after_compaction === true,
    instructions: edit.instructions ?? undefined,
  };
}
