import { fieldError } from '../../platform/errors.js';
import type { ContentBlockParam, MessageParam } from '../schemas.js';
import { blocksOf } from './request.js';

/** Text of a tool result, as the reply engine reads it. */
export function resultText(
  content: Extract<ContentBlockParam, { type: 'tool_result' }>['content'],
) {
  if (content === undefined) return '';
  if (typeof content === 'string') return content;
  return content.map((b) => (b.type === 'text' ? b.text : `[${b.type}]`)).join('\n');
}

/** What a `tool_use` id may be made of (upstream's pattern). */
const TOOL_USE_ID = /^[a-zA-Z0-9_-]+$/;

/**
 * Tool use and results must pair up, turn by turn (consecutive messages of one role are one
 * turn): every `tool_use` is answered by `tool_result` blocks at the start of the next turn,
 * and every `tool_result` answers a `tool_use` of the turn before.
 */
export function checkToolPairs(messages: readonly MessageParam[]): void {
  let previousUses = new Map<string, number>();
  /** Every `tool_use` id of the conversation: one may not come twice, in a turn or across. */
  const everyUse = new Set<string>();
  let i = 0;
  while (i < messages.length) {
    const role = (messages[i] as MessageParam).role;
    const uses = new Map<string, number>();
    const answered = new Set<string>();
    let leading = true;
    for (; i < messages.length && (messages[i] as MessageParam).role === role; i++) {
      blocksOf((messages[i] as MessageParam).content).forEach((block, j) => {
        if (block.type === 'tool_use') {
          if (!TOOL_USE_ID.test(block.id)) {
            throw fieldError(
              ['messages', i, 'content', j, 'id'],
              `String should match pattern '${TOOL_USE_ID.source}'`,
            );
          }
          if (everyUse.has(block.id)) {
            throw fieldError(['messages', i, 'content', j], '`tool_use` ids must be unique');
          }
          everyUse.add(block.id);
          uses.set(block.id, i);
        }
        if (block.type !== 'tool_result') {
          leading = false;
          return;
        }
        if (!previousUses.has(block.tool_use_id)) {
          throw fieldError(
            ['messages', i, 'content', j],
            `unexpected \`tool_use_id\` found in \`tool_result\` blocks: ${block.tool_use_id}. Each \`tool_result\` block must have a corresponding \`tool_use\` block in the previous message.`,
          );
        }
        if (leading) answered.add(block.tool_use_id);
      });
    }
    const missing = [...previousUses.keys()].filter((id) => !answered.has(id));
    if (missing.length > 0) {
      throw fieldError(
        ['messages', previousUses.get(missing[0] as string) as number],
        `\`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${missing.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
      );
    }
    previousUses = role === 'assistant' ? uses : new Map();
  }
  if (previousUses.size > 0) {
    const ids = [...previousUses.keys()];
    throw fieldError(
      ['messages', previousUses.get(ids[0] as string) as number],
      `\`tool_use\` ids were found without \`tool_result\` blocks immediately after: ${ids.join(', ')}. Each \`tool_use\` block must have a corresponding \`tool_result\` block in the next message.`,
    );
  }
}
