import { fieldError, GatewayError } from '../../platform/errors.js';
import { takesSystemMessages } from '../../text/models.js';
import { type MessageParam, SERVER_TOOL_RESULTS } from '../schemas.js';
import { blocksOf } from './request.js';

/**
 * Mid-conversation system messages: a model that takes them, text only, and where upstream
 * places them: not first (the top-level `system` is for that), right after a user turn (or an
 * assistant turn ending in a server tool's result), and last or right before an assistant
 * turn. Consecutive ones are one section, placed as a whole. Upstream's wording of these
 * refusals is not published; these are the words its API was seen to answer.
 * @see https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages
 */
export function checkSystemMessages(messages: readonly MessageParam[], model: string): void {
  let i = 0;
  while (i < messages.length) {
    if ((messages[i] as MessageParam).role !== 'system') {
      i++;
      continue;
    }
    if (!takesSystemMessages(model)) {
      throw new GatewayError(
        400,
        'messages: Unexpected role "system". The Messages API accepts a top-level `system` parameter, not "system" as an input message role.',
      );
    }
    const start = i;
    for (; i < messages.length && (messages[i] as MessageParam).role === 'system'; i++) {
      blocksOf((messages[i] as MessageParam).content).forEach((block, j) => {
        if (block.type !== 'text') {
          throw fieldError(
            ['messages', i, 'content', j, 'type'],
            "role 'system' supports text blocks only",
          );
        }
      });
    }
    if (start === 0) {
      throw fieldError(
        ['messages', 0],
        "use the top-level 'system' parameter for the initial system prompt",
      );
    }
    const before = messages[start - 1] as MessageParam;
    const last = blocksOf(before.content).at(-1)?.type ?? '';
    if (before.role !== 'user' && !SERVER_RESULT_TYPES.has(last)) {
      throw fieldError(
        ['messages', start],
        "role 'system' must follow a 'user' message or an 'assistant' message ending in a server tool result",
      );
    }
    const after = messages[i];
    if (after !== undefined && after.role !== 'assistant') {
      throw fieldError(
        ['messages', i - 1],
        "role 'system' must precede an 'assistant' message or end the array",
      );
    }
  }
}

const SERVER_RESULT_TYPES: ReadonlySet<string> = new Set(SERVER_TOOL_RESULTS);
