import type { MatchContext } from '../harness/match.js';
import { fieldError, GatewayError, type PathSegment } from '../platform/errors.js';
import type { Ids } from '../platform/ids.js';
import type { UsageTokens } from '../platform/request.js';
import {
  type FrameTemplate,
  frameTemplate,
  jsonPieces,
  onePiece,
  type Pacing,
  type SseProducer,
} from '../platform/sse.js';
import { countTokens, truncateTokens } from '../platform/tokens.js';
import { signThinking, type Turn } from '../text/agent.js';
import { finishText } from '../text/finish.js';
import { limitsOf } from '../text/models.js';
import type { CacheUsage } from '../text/prompt-cache.js';
import type { Replies } from '../text/replies.js';
import type { CitedSource } from './citations.js';
import {
  type ContextManagementResponse,
  DIRECT,
  type Diagnostics,
  type Message,
  type MessagesRequest,
  type ResponseBlock,
  type StopDetails,
  type StopReason,
  type Usage,
} from './schemas.js';
import { type ServerContext, ServerRun } from './server-run.js';

/** A finished reply: its content blocks and why it stopped. */
export interface MessageDone {
  content: ResponseBlock[];
  stopReason: StopReason;
  stopSequence: string | null;
  /** Thinking, text and tool-use tokens together. */
  outputTokens: number;
  /** Of them, the thinking's (none when left out). */
  thinkingTokens?: number;
  /** The web searches and fetches the reply ran, and the tokens of what they found. */
  web?: { searches: number; fetches: number; inputTokens: number };
}

/**
 * The reply to a turn, cut as a model would cut it: thinking first (at most its budget), then
 * text (stop sequences, `max_tokens`), then tool calls if they still fit whole; calls that do
 * not fit are dropped and the reply stops for `max_tokens`. A web search or fetch the reply
 * calls runs at once, its result after its call, and the answer follows, quoting what was
 * found (docs/agents.md "Web search", "Web fetch"; server-run.ts); called beside a client's tool, it
 * waits for the client's results, and the next reply starts with its result.
 * @see https://platform.claude.com/docs/en/api/handling-stop-reasons
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-fetch-tool
 */
export async function planMessage(
  body: MessagesRequest,
  turn: Turn,
  replies: Replies,
  ids: Ids,
  /** The tokens the reply may have: `max_tokens`, or less when the context window ends first. */
  limit: number,
  context?: MatchContext,
  /** With citations on: the quotes a finished text answer ends with (see citations.ts). */
  cited: readonly CitedSource[] = [],
  web?: ServerContext,
): Promise<MessageDone> {
  const [chosen] = await replies.replies(turn, 1, context);
  if (!chosen) throw new Error('the reply engine answered nothing');
  const draft: Draft = { content: [], budget: limit, outputTokens: 0, thinkingTokens: 0 };
  const run = web && new ServerRun(web);
  // Calls the last turn made beside a client's tool run now, before anything else.
  if (run)
    for (const { name, id, input } of run.pending) draft.content.push(run.run(name, id, input));
  if (chosen.thinking !== undefined && turn.thinking) writeThinking(draft, body, chosen.thinking);
  const stops = body.stop_sequences ?? [];
  let done = finishText(chosen, stops, draft.budget);
  spend(draft, done.tokens);
  // (the web tools' calls as upstream writes them: see ServerRun.inputs)
  const allCalls = run ? run.inputs(chosen.calls) : chosen.calls;
  const callTokens = allCalls.reduce(
    (sum, call) => sum + countTokens(call.name) + countTokens(JSON.stringify(call.input)),
    0,
  );
  const calls = done.reason === 'end' && callTokens <= draft.budget ? allCalls : [];
  // Nothing visible (a stop sequence at once, a budget too small for the text or the call)
  // is no block at all: upstream answers `content: []`, never an empty text block (which it
  // refuses when a client sends it back).
  // @see https://github.com/anthropics/anthropic-sdk-typescript/issues/399
  if (done.text !== '') draft.content.push({ type: 'text', text: done.text, citations: null });
  const clientCalls = calls.filter((call) => !run?.runs(call.name));
  writeCalls(draft, calls, clientCalls.length, run, ids);
  if (calls.length > 0) spend(draft, callTokens);
  // Calls cut by the limit were being written when it came: their tokens are the rest of it.
  else if (done.reason === 'end' && allCalls.length > 0) draft.outputTokens += draft.budget;
  // (against the calls as written: a tool search may add calls, or leave an unfound one out)
  const cut = done.reason === 'max_tokens' || calls.length < allCalls.length;
  const ranServer = run !== undefined && calls.length > 0 && clientCalls.length === 0;
  if (ranServer) {
    // The answer to what the server tools found, written after their results (with an output
    // format, the format's JSON).
    done = finishText(await run.answer(turn), stops, draft.budget);
    if (done.text !== '') draft.content.push({ type: 'text', text: done.text, citations: null });
    spend(draft, done.tokens);
  }
  // A text answer that ended of itself quotes its sources (a structured answer is the format's
  // JSON alone; a scripted stop has no quotes).
  const quoting =
    !cut &&
    done.reason === 'end' &&
    clientCalls.length === 0 &&
    (calls.length === 0 || ranServer) &&
    turn.output === undefined &&
    chosen.step?.stop_reason === undefined;
  if (quoting) writeQuotes(draft, [...cited, ...(run?.quotes() ?? [])], stops);
  let stopReason: StopReason =
    done.reason === 'stop_sequence'
      ? 'stop_sequence'
      : cut || done.reason === 'max_tokens'
        ? limit < body.max_tokens
          ? 'model_context_window_exceeded'
          : 'max_tokens'
        : clientCalls.length > 0
          ? 'tool_use'
          : 'end_turn';
  const scripted = chosen.step?.stop_reason;
  if (scripted && (stopReason === 'end_turn' || stopReason === 'tool_use')) stopReason = scripted;
  return {
    content: draft.content,
    stopReason,
    stopSequence: done.stopSequence,
    outputTokens: draft.outputTokens,
    thinkingTokens: draft.thinkingTokens,
    ...(run && (run.ran || run.inputTokens > 0)
      ? { web: { searches: run.searches, fetches: run.fetches, inputTokens: run.inputTokens } }
      : {}),
  };
}

/** A reply as planMessage writes it: its blocks so far, and the tokens left and spent. */
interface Draft {
  content: ResponseBlock[];
  budget: number;
  outputTokens: number;
  thinkingTokens: number;
}

type Call = ReplyChoice['calls'][number];
type ReplyChoice = Awaited<ReturnType<Replies['replies']>>[number];

const spend = (draft: Draft, tokens: number) => {
  draft.outputTokens += tokens;
  draft.budget -= tokens;
};

/** The thinking block: at most its budget, and a token less than the reply's. */
function writeThinking(draft: Draft, body: MessagesRequest, text: string): void {
  const thinking = body.thinking;
  const limit = Math.min(
    thinking?.type === 'enabled' ? thinking.budget_tokens : draft.budget,
    draft.budget - 1,
  );
  const cut = truncateTokens(text, Math.max(0, limit));
  const omitted = thinking !== undefined && 'display' in thinking && thinking.display === 'omitted';
  const shown = omitted ? '' : cut.text;
  draft.content.push({ type: 'thinking', thinking: shown, signature: signThinking(shown) });
  draft.thinkingTokens = cut.tokens;
  spend(draft, cut.tokens);
}

/**
 * The calls that fit: a client's tool's as `tool_use`, a server tool's as `server_tool_use`
 * followed by its result when it runs at once (no client call beside it, or a tool that never
 * waits).
 */
function writeCalls(
  draft: Draft,
  calls: readonly Call[],
  clientCalls: number,
  run: ServerRun | undefined,
  ids: Ids,
): void {
  for (const call of calls) {
    if (!run?.runs(call.name)) {
      draft.content.push({
        type: 'tool_use',
        id: ids.next('tool_use'),
        name: call.name,
        input: call.input,
        caller: DIRECT,
      });
      continue;
    }
    const id = ids.next('server_tool_use');
    draft.content.push({
      type: 'server_tool_use',
      id,
      name: call.name,
      input: call.input,
      caller: DIRECT,
    });
    if (clientCalls === 0 || run.runsAtOnce(call.name)) {
      draft.content.push(run.run(call.name, id, call.input));
    }
  }
}

/**
 * The sources quoted, each in a block of its own, as far as the limit lets whole quotes in and
 * up to one a stop sequence would cut: the request's documents with citations on, then the
 * pages searched and fetched.
 */
function writeQuotes(draft: Draft, quotes: readonly CitedSource[], stops: readonly string[]): void {
  for (const { text, citation } of quotes) {
    const tokens = countTokens(text);
    if (tokens > draft.budget || stops.some((stop) => text.includes(stop))) break;
    draft.content.push({ type: 'text', text, citations: [citation] });
    spend(draft, tokens);
  }
}

/**
 * The tokens a reply may have, as upstream limits them: `max_tokens` beyond the model's output
 * limit and a prompt beyond its context window are refused; a reply that would run past the
 * window stops there (`model_context_window_exceeded`).
 * @see https://platform.claude.com/docs/en/build-with-claude/context-windows
 */
export function outputLimit(body: MessagesRequest, inputTokens: number): number {
  const limits = limitsOf('messages', body.model);
  if (body.max_tokens > limits.maxOutput) {
    throw fieldError(
      ['max_tokens'],
      `${body.max_tokens} > ${limits.maxOutput}, which is the maximum allowed number of output tokens for ${body.model}`,
    );
  }
  if (inputTokens > limits.contextWindow) {
    throw new GatewayError(
      400,
      `prompt is too long: ${inputTokens} tokens > ${limits.contextWindow} maximum`,
    );
  }
  return Math.min(body.max_tokens, limits.contextWindow - inputTokens);
}

/**
 * `max_tokens: 0` (cache pre-warming): refused with what implies output a zero budget cannot
 * make, as upstream lists it: `stream`, manual thinking, a structured-output format, a forced
 * tool, and a compaction request.
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching#pre-warming-the-cache
 */
export function checkPrewarm(body: MessagesRequest): void {
  const refuse = (path: PathSegment[]) => {
    throw fieldError(path, 'not allowed with max_tokens: 0, which generates nothing');
  };
  if (body.stream === true) refuse(['stream']);
  if (body.thinking?.type === 'enabled') refuse(['thinking', 'type']);
  const demand = outputDemand(body);
  if (demand) refuse(demand);
  if (body.compaction != null) refuse(['compaction']);
}

/**
 * Where a request demands output of a given shape, which a request that samples nothing
 * (pre-warming, a compaction) cannot give: a structured-output format, or a forced tool.
 */
export function outputDemand(body: MessagesRequest): PathSegment[] | undefined {
  if (body.output_config?.format != null) return ['output_config', 'format'];
  if (body.output_format != null) return ['output_format'];
  const choice = body.tool_choice?.type;
  return choice === 'any' || choice === 'tool' ? ['tool_choice', 'type'] : undefined;
}

/** The answer to a pre-warming request: nothing, stopped by its zero budget. */
export const PREWARMED: MessageDone = {
  content: [],
  stopReason: 'max_tokens',
  stopSequence: null,
  outputTokens: 0,
};

/** A prompt-cache account's tokens as usage (and each of its iterations) writes them. */
export const cacheTokens = (cache: CacheUsage) => ({
  input_tokens: cache.input,
  cache_creation_input_tokens: cache.creation,
  cache_read_input_tokens: cache.read,
  cache_creation: {
    ephemeral_5m_input_tokens: cache.creation5m,
    ephemeral_1h_input_tokens: cache.creation1h,
  },
});

/**
 * A reply's usage, before what the request adds (its speed, its region: see `servedUsage`):
 * no server tool run, `global` inference.
 */
export function messageUsage(cache: CacheUsage, outputTokens: number, thinkingTokens = 0): Usage {
  // One literal of one shape (a spread of cacheTokens' object made each a slow copy: 7 µs).
  return {
    input_tokens: cache.input,
    cache_creation_input_tokens: cache.creation,
    cache_read_input_tokens: cache.read,
    cache_creation: {
      ephemeral_5m_input_tokens: cache.creation5m,
      ephemeral_1h_input_tokens: cache.creation1h,
    },
    output_tokens: outputTokens,
    output_tokens_details: { thinking_tokens: thinkingTokens },
    server_tool_use: null,
    service_tier: 'standard',
    inference_geo: 'global',
    speed: 'standard',
  };
}

/**
 * What the request says of how it was served: `speed` as asked (`fast`, else `standard`) and
 * the region asked for (`inference_geo`, else `global`).
 * @see https://platform.claude.com/docs/en/build-with-claude/fast-mode
 * @see https://platform.claude.com/docs/en/build-with-claude/data-residency
 */
export function servedUsage(usage: Usage, body: Pick<MessagesRequest, 'speed' | 'inference_geo'>) {
  usage.speed = body.speed === 'fast' ? 'fast' : 'standard';
  if (body.inference_geo) usage.inference_geo = body.inference_geo;
}

/** A message's usage as the stats count it (input without the cache's, as messages has it). */
export const usageTokens = (usage: Usage): UsageTokens => ({
  input: usage.input_tokens,
  cacheRead: usage.cache_read_input_tokens ?? 0,
  cacheCreation: usage.cache_creation_input_tokens ?? 0,
  output: usage.output_tokens,
});

/**
 * Usage with the web searches a reply ran: counted in `server_tool_use`, and the pages they
 * found read as input (uncached: they come after the prompt).
 */
export function withWebUsage(usage: Usage, web: NonNullable<MessageDone['web']>): void {
  usage.input_tokens += web.inputTokens;
  // (the top-level tokens are the message step's: its iteration read the pages too)
  const step = usage.iterations?.findLast((it) => it.type === 'message');
  if (step) step.input_tokens += web.inputTokens;
  // (a tool search is not metered as a server tool's use)
  if (web.searches > 0 || web.fetches > 0) {
    usage.server_tool_use = { web_search_requests: web.searches, web_fetch_requests: web.fetches };
  }
}

export interface MessageIdentity {
  id: string;
  model: string;
  /** With the context-management beta: the edits applied (docs/messages.md "Context editing"). */
  management?: ContextManagementResponse;
  /** With `diagnostics` asked for: why the prompt cache missed (see DiagnosticsSchema). */
  diagnostics?: Diagnostics;
}

/** A refusal's details (a scripted one: no category, no explanation); null otherwise. */
const stopDetails = (reason: StopReason): StopDetails | null =>
  reason === 'refusal' ? { type: 'refusal', category: null, explanation: null } : null;

/** The key list and order of a message (see MessageSchema). @see https://platform.claude.com/docs/en/api/messages */
export function buildMessage(who: MessageIdentity, done: MessageDone, usage: Usage): Message {
  return {
    model: who.model,
    id: who.id,
    type: 'message',
    role: 'assistant',
    content: done.content,
    container: null,
    stop_reason: done.stopReason,
    stop_sequence: done.stopSequence,
    stop_details: stopDetails(done.stopReason),
    usage,
    diagnostics: who.diagnostics ?? null,
    ...(who.management ? { context_management: who.management } : {}),
  };
}

/** Tokens per content_block_delta: upstream streams small multi-token deltas. */
export const TOKENS_PER_DELTA = 4;

const templates = new Map<string, FrameTemplate>();

/** The delta frame template of one block index and delta kind (`text_delta`, ...). */
function deltaTemplate(index: number, kind: string, field: string): FrameTemplate {
  const key = `${index}:${kind}`;
  let template = templates.get(key);
  if (!template) {
    template = frameTemplate('content_block_delta', (text) => ({
      type: 'content_block_delta',
      index,
      delta: { type: kind, [field]: text },
    }));
    if (templates.size < 256) templates.set(key, template);
  }
  return template;
}

const blockStart = (index: number, block: ResponseBlock) => {
  const empty =
    block.type === 'text'
      ? { type: 'text', text: '', citations: block.citations ? [] : null }
      : block.type === 'thinking'
        ? { type: 'thinking', thinking: '', signature: '' }
        : block.type === 'tool_use' || block.type === 'server_tool_use'
          ? { type: block.type, id: block.id, name: block.name, input: {}, caller: block.caller }
          : block.type === 'compaction' && block.signature === undefined
            ? { type: 'compaction', content: null }
            : block;
  return JSON.stringify({ type: 'content_block_start', index, content_block: empty });
};

/** Each block's deltas: what the block holds, in pieces of 4 tokens. */
function blockDeltas(index: number, block: ResponseBlock) {
  switch (block.type) {
    case 'text':
      return [
        {
          text: block.text,
          tokens: TOKENS_PER_DELTA,
          template: deltaTemplate(index, 'text_delta', 'text'),
        },
      ];
    case 'thinking':
      return [
        {
          text: block.thinking,
          tokens: TOKENS_PER_DELTA,
          template: deltaTemplate(index, 'thinking_delta', 'thinking'),
        },
        {
          text: block.signature,
          tokens: 0,
          template: deltaTemplate(index, 'signature_delta', 'signature'),
        },
      ];
    case 'tool_use':
    case 'server_tool_use':
      return [
        {
          text: JSON.stringify(block.input),
          tokens: TOKENS_PER_DELTA,
          template: deltaTemplate(index, 'input_json_delta', 'partial_json'),
        },
      ];
    case 'compaction':
      // A signed (on-demand) block comes whole in its start; a threshold's summary in one
      // delta, whatever its length.
      if (block.signature !== undefined) return [];
      return [
        {
          text: block.content ?? '',
          tokens: 0,
          template: deltaTemplate(index, 'compaction_delta', 'content'),
        },
      ];
    default:
      return [];
  }
}

/**
 * message_start's usage: the prompt's tokens and one output token; the thinking, the searches
 * run and the steps (compaction's iterations) come with message_delta.
 */
const startUsage = (usage: Usage): Usage => ({
  input_tokens: usage.input_tokens,
  cache_creation_input_tokens: usage.cache_creation_input_tokens,
  cache_read_input_tokens: usage.cache_read_input_tokens,
  cache_creation: usage.cache_creation,
  output_tokens: Math.min(1, usage.output_tokens),
  output_tokens_details: null,
  server_tool_use: null,
  service_tier: usage.service_tier,
  inference_geo: usage.inference_geo,
  speed: usage.speed,
});

/**
 * The event stream: message_start; per content block content_block_start, its deltas
 * (`thinking_delta` then one `signature_delta`; a quote's `citations_delta` then its
 * `text_delta`; `text_delta`; `input_json_delta`), 4 tokens
 * each (a threshold compaction's summary: one `compaction_delta`; an on-demand one's none: it
 * starts whole), and content_block_stop, with a ping after the first start; message_delta
 * (cumulative usage, and the iterations); message_stop. The first delta waits `firstMs`,
 * every later delta and each block's stop `betweenMs`.
 * @see https://platform.claude.com/docs/en/build-with-claude/streaming
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand
 */
export const messageStream = (
  who: MessageIdentity,
  done: MessageDone,
  usage: Usage,
  pacing: Pacing,
): SseProducer =>
  function* (sink) {
    const start = {
      type: 'message_start',
      message: {
        model: who.model,
        id: who.id,
        type: 'message',
        role: 'assistant',
        content: [],
        container: null,
        stop_reason: null,
        stop_sequence: null,
        stop_details: null,
        usage: startUsage(usage),
        diagnostics: who.diagnostics ?? null,
        // (the edits applied come with message_delta)
        ...(who.management ? { context_management: null } : {}),
      },
    };
    sink.event('message_start', JSON.stringify(start));
    let started = false;
    const unpaced = pacing.firstMs === 0 && pacing.betweenMs === 0;
    for (let index = 0; index < done.content.length; index++) {
      const block = done.content[index] as ResponseBlock;
      sink.event('content_block_start', blockStart(index, block));
      if (index === 0) sink.event('ping', '{"type":"ping"}');
      // A quote's citations come first, one citations_delta each, then its text.
      for (const citation of (block.type === 'text' && block.citations) || []) {
        sink.content();
        const pause = started ? pacing.betweenMs : pacing.firstMs;
        started = true;
        if (pause > 0 || sink.due) yield pause;
        if (sink.stopped) return;
        sink.event(
          'content_block_delta',
          JSON.stringify({
            type: 'content_block_delta',
            index,
            delta: { type: 'citations_delta', citation },
          }),
        );
      }
      for (const { text, tokens, template } of blockDeltas(index, block)) {
        // The signature is one delta, whatever its length; other texts go 4 tokens a delta.
        const pieces = tokens === 0 ? onePiece(text) : jsonPieces(text, tokens);
        sink.content();
        // Unpaced, a text's deltas go out as one run of frames, made once per reply text (a
        // signature's one delta, cut afresh for each stream, has nothing worth remembering).
        if (unpaced && tokens > 0 && !sink.due && sink.pieces(template, pieces)) continue;
        for (let i = 0; i < pieces.ends.length; i++) {
          const pause = started ? pacing.betweenMs : pacing.firstMs;
          started = true;
          if (pause > 0 || sink.due) yield pause;
          if (sink.stopped) return;
          sink.piece(template, pieces, i);
        }
      }
      const pause = started ? pacing.betweenMs : pacing.firstMs;
      if (pause > 0 || sink.due) yield pause;
      sink.event('content_block_stop', `{"type":"content_block_stop","index":${index}}`);
    }
    sink.event(
      'message_delta',
      JSON.stringify({
        type: 'message_delta',
        delta: {
          stop_reason: done.stopReason,
          stop_sequence: done.stopSequence,
          stop_details: stopDetails(done.stopReason),
          container: null,
        },
        usage: {
          input_tokens: usage.input_tokens,
          cache_creation_input_tokens: usage.cache_creation_input_tokens,
          cache_read_input_tokens: usage.cache_read_input_tokens,
          output_tokens: usage.output_tokens,
          output_tokens_details: usage.output_tokens_details ?? { thinking_tokens: 0 },
          server_tool_use: usage.server_tool_use,
          ...(usage.iterations ? { iterations: usage.iterations } : {}),
        },
        ...(who.management ? { context_management: who.management } : {}),
      }),
    );
    sink.closing('event: message_stop\ndata: {"type":"message_stop"}\n\n');
  };
