import { signThinking } from '../text/agent.js';
import { signCompaction } from './signed-compaction.js';

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

/**
 * A recorded messages body with its signed blocks signed again with the emulator's key: the
 * thinking and compaction blocks a conversation sends back carry upstream's signatures, which
 * the emulator cannot verify (it would refuse them as edited). Their text is left as recorded.
 */
export function resigned(body: unknown): unknown {
  if (!isObject(body) || !Array.isArray(body.messages)) return body;
  const messages = body.messages.map((message: unknown) => {
    if (!isObject(message) || !Array.isArray(message.content)) return message;
    const content = message.content.map((block: unknown) => {
      if (!isObject(block)) return block;
      if (block.type === 'thinking' && typeof block.thinking === 'string') {
        return { ...block, signature: signThinking(block.thinking) };
      }
      if (block.type === 'compaction' && typeof block.signature === 'string') {
        return typeof block.content === 'string'
          ? { ...block, signature: signCompaction(block.content) }
          : block;
      }
      return block;
    });
    return { ...message, content };
  });
  return { ...body, messages };
}
