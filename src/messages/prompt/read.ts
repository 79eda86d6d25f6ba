import { fieldError, GatewayError } from '../../platform/errors.js';
import type { OutputFormat, ToolChoice, ToolResult, Turn } from '../../text/agent.js';
import { generationBudget, schemaMemo } from '../../text/json-schema.js';
import { interleavesByBeta } from '../../text/models.js';
import type { CacheTtl, PromptBlock } from '../../text/prompt-cache.js';
import { replyPrompt } from '../../text/replies.js';
import type { CitedSource } from '../citations.js';
import type { ContextManagementResponse, MessageParam } from '../schemas.js';
import { strictCounts, strictTotalsProblem } from '../strict-schema.js';
import type { ToolSearchContext } from '../tool-search.js';
import { ALL_SOURCES, urlsIn, WEB_FETCH_NAME, type WebFetchTool } from '../web-fetch.js';
import { WEB_SEARCH_NAME, type WebSearchTool } from '../web-search.js';
import { COMPACT, INTERLEAVED_THINKING, NO_BETAS } from './betas.js';
import { BlockReader } from './block-reader.js';
import { automaticBreakpoint, checkBreakpoints, ttlOf } from './cache-breakpoints.js';
import { type Compaction, lastCompaction, readSummarize } from './compaction.js';
import { CLEARED_RESULT, readContextManagement } from './context-editing.js';
import { readMessages } from './conversation.js';
import { checkModelParams, checkPrefill, checkSamplers } from './model-params.js';
import { readOutput } from './output.js';
import { blocksOf, type Request, textOf, turnStart } from './request.js';
import { checkSystemMessages } from './system-messages.js';
import { checkThinkingLeads, firstKeptThinking, readThinking } from './thinking.js';
import { checkToolPairs, resultText } from './tool-pairing.js';
import {
  type ReadTools,
  readChoice,
  readTools,
  type ToolReferences,
  toolReferences,
} from './tools.js';
import {
  conversationUrls,
  MAX_CONTEXT_URLS,
  type PendingCall,
  pendingCalls,
} from './web-inputs.js';

/**
 * Reads a messages request in one pass: upstream's rules beyond the JSON schema (each refusal a
 * 400 naming the field, in upstream's words where they are known), the prompt in cache-prefix
 * order (tools, system, messages) with the token cost of every block, and the turn the reply
 * engine answers.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/implement-tool-use
 * @see https://platform.claude.com/docs/en/build-with-claude/vision
 * @see https://platform.claude.com/docs/en/build-with-claude/pdf-support
 * @see https://platform.claude.com/docs/en/build-with-claude/extended-thinking
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching
 */

export interface MessagesPrompt {
  blocks: PromptBlock[];
  turn: Turn;
  /** With the context-management beta: the edits applied (see readContextManagement). */
  applied?: ContextManagementResponse['applied_edits'];
  /** With `context_management`: the prompt's tokens before its edits. */
  originalTokens?: number;
  /** A `compact_20260112` edit's settings (docs/messages.md "Compaction"). */
  compaction?: Compaction;
  /** The compaction beta is on: usage lists its iterations. */
  iterations: boolean;
  /** How many of `blocks` come before the messages (tools, output schema, system). */
  head: number;
  /** The last summary a compaction wrote, sent back in message `message`: what came before it is dropped. */
  summarized?: { message: number; summary: string };
  /** On-demand compaction (top-level `compaction`): the summary is the whole answer. */
  summarize?: { instructions: string | undefined };
  /** What the answer quotes, with citations on (see citations.ts). */
  cited?: CitedSource[];
  /** The request's web search tool, when it offers one (docs/agents.md "Web search"). */
  search?: WebSearchTool;
  /** The request's web fetch tool, when it offers one (docs/agents.md "Web fetch"). */
  fetch?: WebFetchTool;
  /** The request's tool search tool, its deferred tools, and those found before (docs/agents.md "Tool search"). */
  toolSearch?: ToolSearchContext;
  /** Documents of the request (fetched ones in the history too): a fetch's citation index. */
  documents: number;
  /** Searches the last assistant turn started, which the reply is to run first. */
  pending?: PendingCall[];
  /**
   * With a fetch tool: the URLs it may fetch, those of the sources its `url_sources` takes
   * (the turn's `urls` are every URL the model reads, which it may try).
   */
  fetchable?: readonly string[];
}

/** The prompt replies are keyed on and the user turns so far, as stubs and faults match them. */
export const messagesPromptFacts = (body: Pick<Request, 'messages'>) => ({
  prompt: replyPrompt(body.messages, textOf),
  turn: body.messages.filter((m) => m.role === 'user' && textOf(m) !== '').length,
});

/**
 * Reads a request's prompt, refusing what upstream refuses. `counting`: for count_tokens, which
 * takes a top-level `compaction` and ignores it (the count is of the conversation as sent).
 */
export function readPrompt(
  body: Request,
  betas: ReadonlySet<string> = NO_BETAS,
  counting = false,
): MessagesPrompt {
  const summarize = checkOpening(body, betas, counting);
  const reader = new BlockReader();
  const tools = readTools(body.tools ?? [], reader);
  const references = toolReferences(tools, reader);
  const choice = readChoice(body, tools.names);
  checkModelParams(body);
  const interleaved =
    (body.tools?.length ?? 0) > 0 &&
    (body.thinking?.type === 'adaptive' ||
      body.thinking?.type === 'between_tools' ||
      (betas.has(INTERLEAVED_THINKING) && interleavesByBeta(body.model)));
  const thinking = readThinking(body, choice, interleaved);
  checkPrefill(body, summarize !== undefined);
  checkSamplers(body);
  const editing = readContextManagement(body, betas, thinking);
  const output = readOutput(body);
  checkStrictTotals(tools.strict, output);
  // The schema is part of the prompt upstream builds (and of its cache prefix, after the tools),
  // as chat counts its response_format.
  if (output?.kind === 'json_schema') {
    reader.text(JSON.stringify(output.schema), output.path.slice(0, -1));
  }
  readSystem(body, reader);

  // What the prompt holds before the messages; a compaction block drops the messages before it.
  const head = reader.blocks.length;
  const summarized = lastCompaction(body.messages, betas, editing.compaction);
  const compactedAt = summarized?.message ?? -1;
  checkThinkingTurn(body, thinking);
  const toolNames = new Map<string, string>();
  readMessages(body.messages, {
    reader,
    editing,
    compactedAt,
    compactedBlock: summarized?.block ?? -1,
    // Thinking from earlier turns is dropped from the context, as upstream drops it: all but
    // that of the last `keepTurns` assistant turns that hold some.
    keptFrom: firstKeptThinking(body.messages, editing.keepTurns(body.model, thinking)),
    reference: references.reference,
    toolNames,
  });
  checkToolPairs(body.messages);
  reader.checkImages();
  if (output && reader.citing) {
    throw new GatewayError(
      400,
      'Citations cannot be enabled when output format is set. Please disable citations on uploaded document blocks.',
    );
  }
  checkBreakpoints(reader.marks, Boolean(body.cache_control));
  if (body.cache_control) automaticBreakpoint(reader.blocks, ttlOf(body.cache_control) as CacheTtl);
  const edited = editing.apply(reader.blocks);
  const results = lastResults(body.messages, toolNames, edited.cleared);
  const pending = pendingCalls(body.messages);
  checkPendingOffered(pending, tools);
  const turn = turnOf(body, { tools, choice, output, results, thinking, interleaved, references });
  const { search, fetch, toolSearch, toolSearches, deferred } = tools;
  return {
    blocks: reader.blocks,
    turn,
    ...(edited.applied ? { applied: edited.applied } : {}),
    ...(edited.originalTokens === undefined ? {} : { originalTokens: edited.originalTokens }),
    ...(editing.compaction ? { compaction: editing.compaction } : {}),
    iterations: betas.has(COMPACT),
    head,
    ...(summarized ? { summarized: { message: compactedAt, summary: summarized.summary } } : {}),
    ...(summarize ? { summarize } : {}),
    ...(reader.cited.length > 0 ? { cited: reader.cited } : {}),
    ...(search ? { search } : {}),
    ...(fetch ? { fetch, fetchable: fetchable(fetch, body.messages, turn) } : {}),
    ...(toolSearch && toolSearches
      ? {
          toolSearch: {
            tool: toolSearch,
            tools: toolSearches,
            deferred,
            discovered: references.discovered,
          },
        }
      : {}),
    documents: reader.documentCount,
    ...(pending.length > 0 ? { pending } : {}),
  };
}

/**
 * What is refused before the prompt is read: a thread, a compaction request without its beta
 * or with nothing to summarize, no messages, misplaced system messages. Returns the on-demand
 * compaction asked for (none when counting).
 */
function checkOpening(body: Request, betas: ReadonlySet<string>, counting: boolean) {
  if (body.thread !== undefined) {
    throw new GatewayError(400, 'thread: message threads are not supported by this gateway', {
      extra: { details: { error_code: 'thread_unsupported_request', unsupported: [] } },
    });
  }
  const asked = readSummarize(body, betas);
  // (an empty `messages` is the schema's refusal, a compaction request's its own: routes.ts)
  checkSystemMessages(body.messages, body.model);
  return counting ? undefined : asked;
}

/** The strict tools' and the output schema's parameter counts, in total (strict-schema.ts). */
function checkStrictTotals(
  strictTools: ReadTools['strict'],
  output: OutputFormat | undefined,
): void {
  const strictTotals = strictTotalsProblem(strictTools.length, [
    ...strictTools,
    ...(output?.kind === 'json_schema'
      ? [schemaMemo(output.schema, 'messages-strict-counts', strictCounts)]
      : []),
  ]);
  if (strictTotals !== undefined) throw new GatewayError(400, strictTotals);
}

/** The top-level `system`: a string, or text blocks that may carry breakpoints. */
function readSystem(body: Request, reader: BlockReader): void {
  if (body.system === undefined) return;
  if (typeof body.system === 'string') {
    reader.text(body.system, ['system']);
    return;
  }
  body.system.forEach((block, j) => {
    if (block.text.trim() === '') {
      throw fieldError(['system', j, 'text'], 'must contain non-whitespace text');
    }
    reader.text(block.text, ['system', j], block.cache_control);
  });
}

/** With thinking on, the last assistant turn's thinking leads (see checkThinkingLeads). */
function checkThinkingTurn(body: Request, thinking: boolean): void {
  let lastAssistant = -1;
  body.messages.forEach((m, i) => {
    if (m.role === 'assistant') lastAssistant = i;
  });
  // (`between_tools` does not think before a turn's first answer: its turns start without it)
  if (thinking && lastAssistant >= 0 && body.thinking?.type !== 'between_tools') {
    checkThinkingLeads(body.messages, lastAssistant);
  }
}

/** The results the last turn sends back, when it is the user's (system messages after it apart). */
function lastResults(
  messages: readonly MessageParam[],
  toolNames: ReadonlyMap<string, string>,
  cleared: ReadonlySet<string>,
): ToolResult[] {
  let end = messages.length - 1;
  while (end > 0 && messages[end]?.role === 'system') end--;
  const lastTurn = messages[end]?.role === 'user' ? turnStart(messages, end) : end + 1;
  return messages.slice(lastTurn).flatMap((message: MessageParam) =>
    blocksOf(message.content).flatMap((block) =>
      block.type === 'tool_result'
        ? [
            {
              name: toolNames.get(block.tool_use_id),
              content: cleared.has(block.tool_use_id) ? CLEARED_RESULT : resultText(block.content),
              isError: block.is_error === true,
            },
          ]
        : [],
    ),
  );
}

/** A call waiting for its result needs its tool in the request. */
function checkPendingOffered(pending: readonly PendingCall[], tools: ReadTools): void {
  for (const call of pending) {
    const offered =
      call.name === WEB_SEARCH_NAME
        ? tools.search
        : call.name === WEB_FETCH_NAME
          ? tools.fetch
          : tools.toolSearches?.has(call.name);
    if (offered) continue;
    throw new GatewayError(
      400,
      `\`${call.name}\` tool use with id \`${call.id}\` is waiting for its result, but no ${call.name} tool was provided`,
    );
  }
}

/** What the reply engine answers. */
function turnOf(
  body: Request,
  read: {
    tools: ReadTools;
    choice: ToolChoice;
    output: OutputFormat | undefined;
    results: ToolResult[];
    thinking: boolean;
    interleaved: boolean;
    references: ToolReferences;
  },
): Turn {
  const { tools, results, thinking } = read;
  const facts = messagesPromptFacts(body);
  return {
    api: 'messages',
    model: body.model,
    prompt: facts.prompt,
    variant: 0,
    userTurns: facts.turn,
    results,
    tools: tools.defs,
    choice: read.choice,
    output: read.output,
    // Without interleaved thinking a model thinks once, at the start of its turn: its answer to
    // tool results (the same turn, going on) has no new thinking.
    // @see https://platform.claude.com/docs/en/build-with-claude/extended-thinking#interleaved-thinking
    // `between_tools` thinks only there: after tool results, never before its first answer.
    thinking:
      thinking &&
      (body.thinking?.type === 'between_tools'
        ? results.length > 0
        : results.length === 0 || read.interleaved),
    budget: generationBudget(),
    memo: {},
    // (the last user text's own first URLs, then the conversation's latest: a fetch may take
    // either, however many the conversation holds)
    ...(tools.fetch
      ? {
          urls: [
            ...urlsIn(facts.prompt, MAX_CONTEXT_URLS),
            ...conversationUrls(body.messages, ALL_SOURCES),
          ],
        }
      : {}),
    ...(tools.deferred.size > 0 && !tools.toolSearch
      ? {
          hidden: new Set(
            [...tools.deferred.keys()].filter((name) => !read.references.discovered.has(name)),
          ),
        }
      : {}),
  };
}

/** With a fetch tool: the URLs it may fetch, those of the sources its `url_sources` takes. */
function fetchable(
  fetch: WebFetchTool,
  messages: readonly MessageParam[],
  turn: Turn,
): readonly string[] {
  return fetch.sources === ALL_SOURCES
    ? (turn.urls ?? [])
    : [
        ...(fetch.sources.user ? urlsIn(turn.prompt, MAX_CONTEXT_URLS) : []),
        ...conversationUrls(messages, fetch.sources),
      ];
}
