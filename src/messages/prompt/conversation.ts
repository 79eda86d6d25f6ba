import { fieldError, type PathSegment } from '../../platform/errors.js';
import { verifyThinking } from '../../text/agent.js';
import type { Role } from '../../text/prompt-cache.js';
import { type ContentBlockParam, type MessageParam, SERVER_TOOL_RESULTS } from '../schemas.js';
import type { BlockReader } from './block-reader.js';
import { isSigned } from './compaction.js';
import type { Editing } from './context-editing.js';

/** Blocks that only one role may send. */
const ASSISTANT_ONLY = new Set<string>([
  'compaction',
  'tool_use',
  'thinking',
  'redacted_thinking',
  'server_tool_use',
  ...SERVER_TOOL_RESULTS,
]);
const USER_ONLY = new Set(['tool_result']);

/** What reading the messages needs, and what it fills in (`toolNames`). */
export interface ConversationScan {
  reader: BlockReader;
  editing: Editing;
  /** Where the last compaction summary is (-1: none): the blocks before it are dropped. */
  compactedAt: number;
  compactedBlock: number;
  /** The first message whose thinking stays in the context (see firstKeptThinking). */
  keptFrom: number;
  /** Reads in the definition of a tool a search found (see toolReferences). */
  reference: (name: unknown, at: PathSegment[]) => void;
  /** Each `tool_use` id's tool name. */
  toolNames: Map<string, string>;
}

/** Reads every message's blocks into the reader, checking them as upstream does. */
export function readMessages(messages: readonly MessageParam[], scan: ConversationScan): void {
  messages.forEach((message, i) => {
    readMessage(scan, message, i, i === messages.length - 1);
  });
  scan.reader.dropping = false;
}

function readMessage(scan: ConversationScan, message: MessageParam, i: number, last: boolean) {
  const { reader } = scan;
  const path: PathSegment[] = ['messages', i, 'content'];
  reader.dropping = i < scan.compactedAt;
  if (typeof message.content === 'string') {
    // "all messages must have non-empty content except for the optional final assistant
    // message": an empty last assistant turn prefills nothing. @see
    // https://github.com/anthropics/claude-code/issues/3196
    if (message.content === '' && message.role === 'assistant' && last) {
      return;
    }
    if (message.content.trim() === '') throw fieldError(path, 'must contain non-whitespace text');
    reader.text(message.content, path, undefined, message.role);
    return;
  }
  let opens: Role | undefined = message.role;
  // (a block left out before a compaction does not open the turn)
  const first = () => {
    if (reader.dropping) return undefined;
    const role = opens;
    opens = undefined;
    return role;
  };
  message.content.forEach((block, j) => {
    const at = [...path, j];
    reader.dropping = i < scan.compactedAt || (i === scan.compactedAt && j < scan.compactedBlock);
    // (a signed compaction may open a user turn: lastCompaction checked that it comes first)
    if (message.role === 'user' && ASSISTANT_ONLY.has(block.type) && !isSigned(block)) {
      throw fieldError(
        [...at, 'type'],
        `"${block.type}" blocks may only appear in assistant messages`,
      );
    }
    if (message.role === 'assistant' && USER_ONLY.has(block.type)) {
      throw fieldError([...at, 'type'], `"${block.type}" blocks may only appear in user messages`);
    }
    readBlock(scan, block, at, i, first);
  });
  // A turn whose every block was left out (earlier thinking) is still a turn: its framing.
  if (opens !== undefined) reader.add({ text: '', tokens: 0, opens }, path, undefined);
}

/** One block of message `i`; `first()` is the role it opens, when it is the turn's first. */
function readBlock(
  scan: ConversationScan,
  block: ContentBlockParam,
  at: PathSegment[],
  i: number,
  first: () => Role | undefined,
): void {
  const { reader, editing } = scan;
  switch (block.type) {
    case 'text':
      if (block.text.trim() === '') {
        throw fieldError([...at, 'text'], 'must contain non-whitespace text');
      }
      reader.text(block.text, at, block.cache_control, first());
      break;
    case 'image':
      reader.image(block, at, first());
      break;
    case 'document':
      reader.document(block, at, first());
      break;
    case 'search_result':
      reader.searchResult(block, at, first());
      break;
    case 'tool_use':
    case 'server_tool_use':
      // A call to upstream's own tool counts as a call does; only a client's is answered.
      if (block.type === 'tool_use') {
        scan.toolNames.set(block.id, block.name);
        if (!reader.dropping) editing.toolUse(block.id, block.name, reader.blocks.length);
      }
      reader.text(
        `${block.name}\n${JSON.stringify(block.input)}`,
        at,
        block.cache_control,
        first(),
      );
      break;
    case 'tool_result':
      readToolResult(scan, block, at, first);
      break;
    case 'thinking':
      if (!verifyThinking(block.thinking, block.signature)) {
        throw fieldError(at, 'Invalid `signature` in `thinking` block');
      }
      if (reader.dropping) break;
      if (i >= scan.keptFrom) reader.text(block.thinking, at, undefined, first());
      else editing.thinkingCleared(i, block.thinking);
      break;
    case 'redacted_thinking':
      if (reader.dropping) break;
      if (i >= scan.keptFrom) reader.text(block.data, at, undefined, first());
      else editing.thinkingCleared(i, block.data);
      break;
    case 'compaction':
      // The summary stands for everything before it (checked by lastCompaction); one that
      // wrote nothing (null) is no block at all.
      if (typeof block.content === 'string') {
        reader.text(block.content, at, block.cache_control, first());
      }
      break;
    case 'container_upload':
      reader.text(block.file_id, at, block.cache_control, first());
      break;
    default:
      readServerResult(scan, block, at, first);
  }
}

function readToolResult(
  scan: ConversationScan,
  block: Extract<ContentBlockParam, { type: 'tool_result' }>,
  at: PathSegment[],
  first: () => Role | undefined,
): void {
  const { reader } = scan;
  const content = block.content;
  const from = reader.blocks.length;
  if (Array.isArray(content)) {
    const role = first();
    reader.text(block.tool_use_id, at, undefined, role);
    content.forEach((item, k) => {
      const inner = [...at, 'tool_result', 'content', k];
      if (item.type === 'image') reader.image(item, inner);
      else if (item.type === 'document') reader.document(item, inner);
      else if (item.type === 'text') reader.text(item.text, inner, item.cache_control);
      else if (item.type === 'tool_reference') scan.reference(item.tool_name, inner);
      // (the browser's state: upstream renders a text of it for the model; its JSON here)
      else if (item.type === 'browser_state') {
        const { cache_control, ...state } = item;
        reader.text(JSON.stringify(state), inner, cache_control);
      } else reader.searchResult(item, inner);
    });
    if (block.cache_control) reader.add({ text: '', tokens: 0 }, at, block.cache_control);
  } else {
    reader.text(`${block.tool_use_id}\n${content ?? ''}`, at, block.cache_control, first());
  }
  if (!reader.dropping) scan.editing.toolResult(block.tool_use_id, from, reader.blocks.length);
}

/** The blocks readBlock reads itself: the rest are server tools' results. */
type ReadInPlace =
  | 'text'
  | 'image'
  | 'document'
  | 'search_result'
  | 'tool_use'
  | 'server_tool_use'
  | 'tool_result'
  | 'thinking'
  | 'redacted_thinking'
  | 'compaction'
  | 'container_upload';

/** A server tool's result, as upstream gave it. */
function readServerResult(
  scan: ConversationScan,
  block: Exclude<ContentBlockParam, { type: ReadInPlace }>,
  at: PathSegment[],
  first: () => Role | undefined,
): void {
  const { reader } = scan;
  if (
    block.type === 'web_fetch_tool_result' &&
    (block.content as { type?: unknown } | null)?.type === 'web_fetch_result'
  ) {
    reader.fetchedDocument();
  }
  if (block.type === 'tool_search_tool_result') {
    const found = (block.content as { tool_references?: unknown } | null)?.tool_references;
    if (Array.isArray(found)) {
      found.forEach((ref: { tool_name?: unknown } | null, k) => {
        scan.reference(ref?.tool_name, [...at, 'content', 'tool_references', k]);
      });
    }
  }
  reader.text(JSON.stringify(block.content) ?? '', at, block.cache_control, first());
}
