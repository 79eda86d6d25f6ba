import type {
  ContentBlockParam,
  CountTokensRequest,
  MessageParam,
  MessagesRequest,
} from '../schemas.js';

/** What one request may carry besides the prompt count_tokens also takes. */
export type Request = CountTokensRequest & Partial<MessagesRequest>;

/** A message's blocks as written: a string is one text block. */
export const blocksOf = (content: MessageParam['content']): ContentBlockParam[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : content;

/** The text of a message's text blocks (a string content as it is). */
export const textOf = (message: MessageParam) =>
  blocksOf(message.content)
    .map((b) => (b.type === 'text' ? b.text : ''))
    .filter((t) => t !== '')
    .join('\n');

/**
 * Where the turn that ends with message `last` starts: consecutive messages of one role are one
 * turn, as upstream merges them.
 */
export function turnStart(messages: readonly MessageParam[], last: number): number {
  let i = last;
  while (i > 0 && messages[i - 1]?.role === messages[last]?.role) i--;
  return i;
}
