import { fieldError, type PathSegment } from '../platform/errors.js';
import {
  deltaFrames,
  frameTemplate,
  type Pacing,
  type SseFrame,
  sseEvent,
} from '../platform/sse.js';
import { splitTokens } from '../platform/tokens.js';
import { type Finished, type FinishReason, finishText } from '../text/finish.js';
import { type CacheUsage, MAX_BREAKPOINTS, type PromptBlock } from '../text/prompt-cache.js';
import type { Replies } from '../text/replies.js';
import { replyPrompt } from '../text/replies.js';
import type {
  CountTokensRequest,
  Message,
  MessageParam,
  MessagesRequest,
  StopReason,
  TextBlock,
  Usage,
} from './schemas.js';

/**
 * Rules of a messages request beyond its JSON schema.
 * @see https://platform.claude.com/docs/en/api/messages
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching
 */
export function checkMessagesRequest(body: CountTokensRequest): void {
  const withCache: Array<{ path: PathSegment[]; ttl: '5m' | '1h' }> = [];
  const visit = (blocks: string | TextBlock[], path: PathSegment[]) => {
    if (typeof blocks === 'string') {
      if (blocks.trim() === '' && path[0] === 'messages') {
        throw fieldError(path, 'must contain non-whitespace text');
      }
      return;
    }
    blocks.forEach((block, i) => {
      if (block.text.trim() === '') {
        throw fieldError([...path, i, 'text'], 'must contain non-whitespace text');
      }
      if (block.cache_control) {
        withCache.push({
          path: [...path, i, 'cache_control'],
          ttl: block.cache_control.ttl ?? '5m',
        });
      }
    });
  };
  if (body.system !== undefined) visit(body.system, ['system']);
  body.messages.forEach((message, i) => {
    visit(message.content, ['messages', i, 'content']);
  });
  if (withCache.length > MAX_BREAKPOINTS) {
    throw fieldError(
      (withCache[MAX_BREAKPOINTS] as { path: PathSegment[] }).path,
      `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${withCache.length}.`,
    );
  }
  // Longer-lived breakpoints must come before shorter-lived ones.
  const firstShort = withCache.findIndex((c) => c.ttl === '5m');
  const lateLong = withCache.findIndex(
    (c, i) => c.ttl === '1h' && firstShort !== -1 && i > firstShort,
  );
  if (lateLong !== -1) {
    throw fieldError(
      [...(withCache[lateLong] as { path: PathSegment[] }).path, 'ttl'],
      'a "1h" cache_control may not come after a "5m" one',
    );
  }
}

const blocksOf = (content: string | TextBlock[]): TextBlock[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : content;

/** The prompt in prefix order: system, then messages; breakpoints where `cache_control` is. */
export function promptBlocks(body: CountTokensRequest): PromptBlock[] {
  const blocks: PromptBlock[] = [];
  const add = (block: TextBlock, opens?: MessageParam['role']) => {
    const entry: PromptBlock = { text: block.text };
    if (opens) entry.opens = opens;
    if (block.cache_control) entry.cache = block.cache_control.ttl ?? '5m';
    blocks.push(entry);
  };
  if (body.system !== undefined) {
    for (const block of blocksOf(body.system)) add(block);
  }
  for (const message of body.messages) {
    blocksOf(message.content).forEach((block, i) => {
      add(block, i === 0 ? message.role : undefined);
    });
  }
  return blocks;
}

const textOf = (content: string | TextBlock[]) =>
  typeof content === 'string' ? content : content.map((b) => b.text).join('\n');

const STOP_REASON: Record<FinishReason, StopReason> = {
  end: 'end_turn',
  stop_sequence: 'stop_sequence',
  max_tokens: 'max_tokens',
};

export function planMessage(
  body: MessagesRequest,
  replies: Replies,
): Finished & { stopReason: StopReason } {
  const prompt = replyPrompt(body.messages, (m) => textOf(m.content));
  const chosen = replies.reply({ api: 'messages', model: body.model, prompt, variant: 0 });
  const done = finishText(chosen, body.stop_sequences ?? [], body.max_tokens);
  const scripted = done.reason === 'end' ? chosen.rule?.stop_reason : undefined;
  return { ...done, stopReason: scripted ?? STOP_REASON[done.reason] };
}

export function messageUsage(cache: CacheUsage, outputTokens: number): Usage {
  return {
    input_tokens: cache.input,
    cache_creation_input_tokens: cache.creation,
    cache_read_input_tokens: cache.read,
    cache_creation: {
      ephemeral_5m_input_tokens: cache.creation5m,
      ephemeral_1h_input_tokens: cache.creation1h,
    },
    output_tokens: outputTokens,
  };
}

export interface MessageIdentity {
  id: string;
  model: string;
}

/** The key list and order of a message. @see https://platform.claude.com/docs/en/api/messages */
export function buildMessage(
  who: MessageIdentity,
  done: Finished & { stopReason: StopReason },
  usage: Usage,
): Message {
  return {
    id: who.id,
    type: 'message',
    role: 'assistant',
    content: [{ type: 'text', text: done.text }],
    model: who.model,
    stop_reason: done.stopReason,
    stop_sequence: done.stopSequence,
    usage,
  };
}

/** Tokens per content_block_delta: upstream streams small multi-token deltas. */
export const TOKENS_PER_DELTA = 4;

const DELTA = frameTemplate('content_block_delta', (text) => ({
  type: 'content_block_delta',
  index: 0,
  delta: { type: 'text_delta', text },
}));

/**
 * The event stream: message_start, content_block_start, a ping, one
 * content_block_delta per 4 tokens, content_block_stop, message_delta (cumulative usage),
 * message_stop. Delta frames come from a template: they are most of a stream.
 */
export function messageStreamFrames(
  who: MessageIdentity,
  done: Finished & { stopReason: StopReason },
  usage: Usage,
  pacing: Pacing,
  /** Batch unpaced deltas into one write (off when a fault must count single events). */
  batch = true,
): SseFrame[] {
  const start = {
    type: 'message_start',
    message: {
      id: who.id,
      type: 'message',
      role: 'assistant',
      content: [],
      model: who.model,
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: Math.min(1, usage.output_tokens) },
    },
  };
  const frames: SseFrame[] = [
    sseEvent('message_start', JSON.stringify(start)),
    sseEvent(
      'content_block_start',
      '{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}',
    ),
    sseEvent('ping', '{"type":"ping"}'),
  ];
  const pieces = splitTokens(done.text, TOKENS_PER_DELTA);
  frames.push(...deltaFrames(pieces, DELTA, pacing, batch));
  const after = pieces.length === 0 ? pacing.firstMs : pacing.betweenMs;
  frames.push(
    sseEvent('content_block_stop', '{"type":"content_block_stop","index":0}', after),
    sseEvent(
      'message_delta',
      JSON.stringify({
        type: 'message_delta',
        delta: { stop_reason: done.stopReason, stop_sequence: done.stopSequence },
        usage: {
          input_tokens: usage.input_tokens,
          cache_creation_input_tokens: usage.cache_creation_input_tokens,
          cache_read_input_tokens: usage.cache_read_input_tokens,
          output_tokens: usage.output_tokens,
        },
      }),
    ),
    sseEvent('message_stop', '{"type":"message_stop"}'),
  );
  return frames;
}
