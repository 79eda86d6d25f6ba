import type { IncomingHttpHeaders } from 'node:http';
import { fieldError, GatewayError, type PathSegment } from '../platform/errors.js';
import { decodeBase64 } from '../platform/image.js';
import { countTokens } from '../platform/tokens.js';
import {
  type OutputFormat,
  type ToolChoice,
  type ToolDef,
  type ToolResult,
  type Turn,
  verifyThinking,
} from '../text/agent.js';
import {
  generationBudget,
  generationProblem,
  schemaBudget,
  schemaMemo,
  schemaProblem,
  spendSchema,
} from '../text/json-schema.js';
import { decodeImage, PDF_MAX_PAGES, PDF_PAGE_TOKENS, pdfPages } from '../text/media.js';
import {
  compacts,
  interleavesByBeta,
  keepsAllThinking,
  refusesEffort,
  refusesPrefill,
  refusesSampling,
  takesOneSampler,
  takesSystemMessages,
  thinkingOf,
} from '../text/models.js';
import {
  type CacheTtl,
  countPrompt,
  MAX_BREAKPOINTS,
  type PromptBlock,
  type Role,
} from '../text/prompt-cache.js';
import { replyPrompt } from '../text/replies.js';
import { ToolsMemo } from '../text/tools-memo.js';
import { type CitedSource, citeDocument, citeSearchResult, MAX_CITED } from './citations.js';
import type {
  CacheControl,
  ClearToolUsesEdit,
  CompactEdit,
  ContentBlockParam,
  ContextManagementResponse,
  CountTokensRequest,
  DocumentBlock,
  ImageBlock,
  MessageParam,
  MessagesRequest,
  SearchResultBlock,
  ToolParam,
  Toolset,
} from './schemas.js';
import { ALLOWED_CALLERS, SERVER_TOOL_RESULTS, TOOLSET_MEMBERS } from './schemas.js';
import { compactionError, ON_DEMAND, verifyCompaction } from './signed-compaction.js';
import { strictCounts, strictProblem, strictTotalsProblem } from './strict-schema.js';
import {
  type Deferred,
  deferredTool,
  searchInputOfPrompt,
  TOOL_SEARCH_TYPE,
  type ToolSearch,
  type ToolSearchContext,
} from './tool-search.js';
import {
  ALL_SOURCES,
  normalUrl,
  readWebFetchTool,
  takesSource,
  type UrlSources,
  urlsIn,
  WEB_FETCH_NAME,
  WEB_FETCH_TYPE,
  type WebFetchTool,
} from './web-fetch.js';
import {
  readWebSearchTool,
  searchQuery,
  WEB_SEARCH_NAME,
  WEB_SEARCH_TYPE,
  type WebSearchTool,
} from './web-search.js';

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
  /** A `compact_20260112` edit's settings (README "Compaction"). */
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
  /** The request's web search tool, when it offers one (README "Web search"). */
  search?: WebSearchTool;
  /** The request's web fetch tool, when it offers one (README "Web fetch"). */
  fetch?: WebFetchTool;
  /** The request's tool search tool, its deferred tools, and those found before (README "Tool search"). */
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

/** What a `compact_20260112` edit asks for. */
/**
 * A web search or fetch an assistant turn called beside a client's tool: upstream runs it once
 * the client's results come, and the reply starts with its result.
 */
export interface PendingCall {
  id: string;
  name: keyof typeof SERVER_CALL_RESULTS;
  /** The call's input, as the turn sent it back (a query, or what the search refuses). */
  input: unknown;
}

export interface Compaction {
  /** Input tokens past which the conversation is summarized first. */
  trigger: number;
  /** The reply stops after the summary (`stop_reason: "compaction"`). */
  pause: boolean;
  /** The prompt the summary is written with (the default's, when none is sent). */
  instructions: string | undefined;
}

type AppliedEdit = ContextManagementResponse['applied_edits'][number];

/** What one request may carry besides the prompt count_tokens also takes. */
type Request = CountTokensRequest & Partial<MessagesRequest>;

export const TOOL_NAME = /^[a-zA-Z0-9_-]{1,64}$/;
export const IMAGE_MAX_BYTES = 5 * 1024 * 1024;
export const IMAGE_MAX_SIDE = 8000;
/** With more than MANY_IMAGES images, each side may be at most MANY_IMAGES_MAX_SIDE. */
export const MANY_IMAGES = 20;
export const MANY_IMAGES_MAX_SIDE = 2000;
export const MAX_IMAGES = 100;
/**
 * Images are scaled to fit these before they are counted: a 1568-px long edge, and the pixels
 * of 784×1568, the largest size upstream's table keeps as it is (1092×1092 stays too).
 */
const IMAGE_LONG_EDGE = 1568;
const IMAGE_MAX_PIXELS = 784 * 1568;
/** What an image the emulator cannot see (a URL, a file id) counts: the most a scaled image costs. */
export const UNSEEN_IMAGE_TOKENS = 1600;
export const THINKING_MIN_BUDGET = 1024;
const DOCS = 'https://docs.claude.com/en/docs/build-with-claude/extended-thinking';

/** Upstream's cost of an image: scaled to fit, then width × height / 750. */
export function imageTokens(width: number, height: number): number {
  let scale = Math.min(1, IMAGE_LONG_EDGE / Math.max(width, height));
  scale = Math.min(scale, Math.sqrt(IMAGE_MAX_PIXELS / (width * height)));
  const w = Math.max(1, Math.round(width * scale));
  const h = Math.max(1, Math.round(height * scale));
  return Math.ceil((w * h) / 750);
}

const isCustom = (tool: ToolParam): tool is Extract<ToolParam, { input_schema: unknown }> =>
  'input_schema' in tool;
const isToolset = (tool: ToolParam): tool is Toolset =>
  'type' in tool && typeof tool.type === 'string' && Object.hasOwn(TOOLSET_MEMBERS, tool.type);

/**
 * The name an Anthropic-defined tool must have, by its type (the web tools and tool search
 * check theirs as they are read): the text editor's changed with its 2025-04-29 version.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool
 */
function fixedName(type: string): string | undefined {
  const tool = /^(bash|memory|computer|code_execution|text_editor)_(\d{8})$/.exec(type);
  if (!tool) return undefined;
  const [, kind, date] = tool as unknown as [string, string, string];
  if (kind !== 'text_editor') return kind;
  return date < '20250429' ? 'str_replace_editor' : 'str_replace_based_edit_tool';
}

/** A server tool's `allowed_callers`: its closed list, refused in upstream's words. */
function checkAllowedCallers(callers: unknown, path: PathSegment[]): void {
  if (callers === undefined) return;
  const allowed: readonly unknown[] = ALLOWED_CALLERS;
  const listed = `${ALLOWED_CALLERS.slice(0, -1)
    .map((c) => `'${c}'`)
    .join(', ')} or '${ALLOWED_CALLERS.at(-1)}'`;
  if (!Array.isArray(callers)) throw fieldError(path, 'Input should be a valid list');
  callers.forEach((caller, k) => {
    if (!allowed.includes(caller)) throw fieldError([...path, k], `Input should be ${listed}`);
  });
}

/** An input of one fixed value: what the emulator's call of an Anthropic-defined tool sends. */
const fixedInput = (input: Record<string, string>) => ({
  type: 'object',
  properties: Object.fromEntries(Object.entries(input).map(([k, v]) => [k, { const: v }])),
  required: Object.keys(input),
  additionalProperties: false,
});

/**
 * Anthropic-defined tools the client runs (not upstream): the model calls them like the
 * client's own tools, with inputs of their documented shapes; the emulator's calls are a
 * harmless first step of each (list, view, screenshot).
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/bash-tool
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/text-editor-tool
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/computer-use-tool
 */
const CLIENT_TOOL_INPUTS: Record<string, object> = {
  bash: fixedInput({ command: 'ls' }),
  text_editor: fixedInput({ command: 'view', path: '.' }),
  memory: fixedInput({ command: 'view', path: '/memories' }),
  computer: fixedInput({ action: 'screenshot' }),
};
const CLIENT_TOOL = /^(bash|text_editor|memory|computer)_\d{8}$/;

/** The input schema of an Anthropic-defined client tool, or undefined for a server tool's. */
const clientToolInput = (tool: ToolParam): object | undefined => {
  const kind = 'type' in tool && typeof tool.type === 'string' ? CLIENT_TOOL.exec(tool.type) : null;
  return kind ? CLIENT_TOOL_INPUTS[kind[1] as string] : undefined;
};

const ttlOf = (cache: CacheControl | null | undefined): CacheTtl | undefined =>
  cache ? (cache.ttl ?? '5m') : undefined;

interface Breakpoint {
  path: PathSegment[];
  ttl: CacheTtl;
}

/** A message's blocks as written: a string is one text block. */
const blocksOf = (content: MessageParam['content']): ContentBlockParam[] =>
  typeof content === 'string' ? [{ type: 'text', text: content }] : content;

/** The text of a message's text blocks (a string content as it is). */
export const textOf = (message: MessageParam) =>
  blocksOf(message.content)
    .map((b) => (b.type === 'text' ? b.text : ''))
    .filter((t) => t !== '')
    .join('\n');

interface ReadTools {
  defs: ToolDef[];
  names: ReadonlySet<string>;
  /** The tools' prompt blocks and cache breakpoints, in order. */
  blocks: PromptBlock[];
  marks: Breakpoint[];
  /** The `strict: true` tools' parameter counts (see strict-schema.ts), one per such tool. */
  strict: Array<{ optional: number; unions: number }>;
  search?: WebSearchTool;
  fetch?: WebFetchTool;
  toolSearch?: ToolSearch;
  toolSearches?: ReadonlyMap<string, ToolSearch>;
  /** Tools with `defer_loading: true`: each one's description and definition (JSON). */
  deferred: ReadonlyMap<string, Deferred>;
}

/**
 * Tools already read: an agent sends the same tools every turn, and checking them (names,
 * schemas) and writing their prompt text would otherwise be repeated. At most READ_TOOLS_KEPT
 * sets, each of at most READ_TOOLS_KEPT_BYTES of JSON.
 */
const READ_TOOLS_KEPT = 64;
const READ_TOOLS_KEPT_BYTES = 64 * 1024;
const toolsMemo = new ToolsMemo<ReadTools>(READ_TOOLS_KEPT, READ_TOOLS_KEPT_BYTES);

/** The request's tools, checked, with their prompt blocks added to the reader's. */
function readTools(tools: readonly ToolParam[], reader: BlockReader): ReadTools {
  const read =
    tools.length > 0
      ? toolsMemo.get(tools, () => readToolsOnce(tools)).value
      : readToolsOnce(tools);
  // Copies: a block may be marked later (a top-level cache_control).
  for (const block of read.blocks) reader.blocks.push({ ...block });
  reader.marks.push(...read.marks);
  return { ...read, defs: [...read.defs] };
}

function readToolsOnce(tools: readonly ToolParam[]): ReadTools {
  const defs: ToolDef[] = [];
  const names = new Set<string>();
  const blocks: PromptBlock[] = [];
  const marks: Breakpoint[] = [];
  const strict: ReadTools['strict'] = [];
  let search: WebSearchTool | undefined;
  let fetch: WebFetchTool | undefined;
  let toolSearch: ToolSearch | undefined;
  const toolSearches = new Map<string, ToolSearch>();
  const deferred = new Map<string, Deferred>();
  // Every schema counted before any is compiled: a request over the budget costs no compiling.
  const budget = schemaBudget();
  tools.forEach((tool, i) => {
    if (!isCustom(tool)) return;
    const over = spendSchema(budget, tool.input_schema);
    if (over !== undefined) throw fieldError(['tools', i, 'custom', 'input_schema'], over);
  });
  tools.forEach((tool, i) => {
    const { cache_control, ...definition } = tool;
    const ttl = ttlOf(cache_control);
    if (isToolset(tool)) {
      // One definition for its members (the emulator never calls them), named by its family.
      const family = tool.type.replace(/_toolset_\d{8}$/, '');
      if (names.has(family)) throw fieldError(['tools'], 'Tool names must be unique.');
      names.add(family);
      blocks.push({ text: JSON.stringify(definition), ...(ttl ? { cache: ttl } : {}) });
      if (ttl) marks.push({ path: ['tools', i, 'cache_control'], ttl });
      return;
    }
    if (!isCustom(tool)) {
      if (typeof tool.name !== 'string') {
        throw fieldError(['tools', i, tool.type, 'name'], 'Field required');
      }
      const callers = (tool as { allowed_callers?: unknown }).allowed_callers;
      checkAllowedCallers(callers, ['tools', i, tool.type, 'allowed_callers']);
      const fixed = fixedName(tool.type);
      if (fixed !== undefined && tool.name !== fixed) {
        throw fieldError(['tools', i, tool.type, 'name'], `Input should be '${fixed}'`);
      }
    }
    if (isCustom(tool)) {
      if (!TOOL_NAME.test(tool.name)) {
        throw fieldError(
          ['tools', i, 'custom', 'name'],
          `String should match pattern '${TOOL_NAME.source}'`,
        );
      }
      const path = ['tools', i, 'custom', 'input_schema'];
      const schema = tool.input_schema as Record<string, unknown>;
      if ('anyOf' in schema || 'oneOf' in schema || 'allOf' in schema) {
        throw fieldError(
          path,
          'input_schema does not support oneOf, allOf, or anyOf at the top level',
        );
      }
      if (tool.strict === true) {
        const problem = schemaMemo(schema, 'messages-strict', strictProblem);
        if (problem !== undefined) throw fieldError(['tools', i, 'custom'], problem);
        strict.push(schemaMemo(schema, 'messages-strict-counts', strictCounts));
      }
      if (schemaProblem(tool.input_schema) !== undefined) {
        throw fieldError(
          path,
          'JSON schema is invalid. It must match JSON Schema draft 2020-12 (https://json-schema.org/draft/2020-12).',
        );
      }
      const unusable = generationProblem(tool.input_schema);
      if (unusable !== undefined) throw fieldError(path, unusable);
      defs.push({ name: tool.name, schema: tool.input_schema, path });
    } else if (WEB_SEARCH_TYPE.test(tool.type)) {
      search = readWebSearchTool(tool, i);
      defs.push({
        name: tool.name,
        schema: WEB_SEARCH_INPUT,
        path: ['tools', i],
        inputOf: (turn) => ({ query: searchQuery(turn.prompt) }),
      });
    } else if (TOOL_SEARCH_TYPE.test(tool.type)) {
      const kind = (TOOL_SEARCH_TYPE.exec(tool.type) as RegExpExecArray)[1] as ToolSearch['kind'];
      const name = `tool_search_tool_${kind}`;
      if (tool.name !== name) {
        throw fieldError(['tools', i, tool.type, 'name'], `Input should be '${name}'`);
      }
      const search: ToolSearch = { name, kind };
      toolSearches.set(name, search);
      toolSearch ??= search;
      // Called when asked for (named in the user text, or forced) with the text's words.
      defs.push({
        name,
        schema: TOOL_SEARCH_INPUT,
        path: ['tools', i],
        inputOf: (turn) =>
          turn.prompt.toLowerCase().includes(name) ||
          (turn.choice.mode === 'named' && turn.choice.name === name)
            ? searchInputOfPrompt(search, turn.prompt)
            : undefined,
      });
    } else if (WEB_FETCH_TYPE.test(tool.type)) {
      const declared = new Set(
        tools.flatMap((t) => ('name' in t && typeof t.name === 'string' ? [t.name] : [])),
      );
      fetch = readWebFetchTool(tool, i, declared);
      defs.push({
        name: tool.name,
        schema: WEB_FETCH_INPUT,
        path: ['tools', i],
        inputOf: fetchInput,
      });
    } else {
      const input = clientToolInput(tool);
      if (input) defs.push({ name: tool.name, schema: input, path: ['tools', i] });
    }
    if (names.has(tool.name)) throw fieldError(['tools'], 'Tool names must be unique.');
    names.add(tool.name);
    if ((tool as { defer_loading?: unknown }).defer_loading === true) {
      // Not in the prompt until a search finds it (its definition is read in then).
      const description =
        'description' in tool && typeof tool.description === 'string' ? tool.description : '';
      deferred.set(tool.name, deferredTool(tool.name, description, JSON.stringify(definition)));
      const def = defs.at(-1);
      if (def?.name === tool.name) def.deferred = true;
      return;
    }
    blocks.push({ text: JSON.stringify(definition), ...(ttl ? { cache: ttl } : {}) });
    if (ttl) marks.push({ path: ['tools', i, 'cache_control'], ttl });
  });
  if (deferred.size > 0 && deferred.size === tools.length) {
    throw new GatewayError(
      400,
      'At least one tool must have defer_loading=false. All tools cannot be deferred.',
    );
  }
  return {
    defs,
    names,
    blocks,
    marks,
    strict,
    ...(search ? { search } : {}),
    ...(fetch ? { fetch } : {}),
    ...(toolSearch ? { toolSearch, toolSearches } : {}),
    deferred,
  };
}

/** What the model sends a tool search tool (its pattern or query, and a limit). */
const TOOL_SEARCH_INPUT = { type: 'object' };

/** What the model sends the web fetch tool. */
const WEB_FETCH_INPUT = {
  type: 'object',
  properties: { url: { type: 'string', minLength: 1 } },
  required: ['url'],
  additionalProperties: false,
};

/**
 * The URL the model fetches: the first in the last user text, else the conversation's latest
 * (a search result's, a tool result's); none when it holds none.
 */
const fetchInput = (turn: Turn) => {
  const url = urlsIn(turn.prompt, 1)[0] ?? turn.urls?.at(-1);
  return url === undefined ? undefined : { url };
};

/** The most URLs of a conversation a fetch may take (its latest ones). */
export const MAX_CONTEXT_URLS = 1000;

/**
 * The http(s) URLs the conversation holds, in order, which a fetch may take: in the users'
 * texts and tool results, and the pages earlier searches and fetches found.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-fetch-tool
 */
function conversationUrls(messages: readonly MessageParam[], sources: UrlSources): string[] {
  const urls: string[] = [];
  const add = (found: readonly string[]) => {
    for (const url of found) urls.push(url);
    if (urls.length > 2 * MAX_CONTEXT_URLS) urls.splice(0, urls.length - MAX_CONTEXT_URLS);
  };
  // (a page found is taken when it is an http(s) URL; texts hold only those)
  const found = (url: unknown) => {
    if (typeof url === 'string' && normalUrl(url) !== undefined) add([url]);
  };
  // (a client tool's results are its calls' by id: `url_sources` may name the tool)
  const calls = new Map<string, string>();
  for (const message of messages) {
    for (const block of blocksOf(message.content)) {
      if (block.type === 'tool_use') calls.set(block.id, block.name);
      else if (message.role === 'user' && block.type === 'text') {
        if (sources.user) add(urlsIn(block.text));
      } else if (block.type === 'tool_result') {
        if (!takesSource(sources.client, calls.get(block.tool_use_id))) continue;
        const content = block.content;
        if (typeof content === 'string') add(urlsIn(content));
        else for (const item of content ?? []) if (item.type === 'text') add(urlsIn(item.text));
      } else if (block.type === 'web_search_tool_result' && Array.isArray(block.content)) {
        if (!takesSource(sources.server, WEB_SEARCH_NAME)) continue;
        for (const page of block.content) found(page.url);
      } else if (block.type === 'web_fetch_tool_result') {
        if (!takesSource(sources.server, WEB_FETCH_NAME)) continue;
        if (block.content.type === 'web_fetch_result') found(block.content.url);
      }
    }
  }
  return urls.slice(-MAX_CONTEXT_URLS);
}

/** What the model sends the web search tool. */
const WEB_SEARCH_INPUT = {
  type: 'object',
  properties: { query: { type: 'string', minLength: 1 } },
  required: ['query'],
  additionalProperties: false,
};

/** Searches and fetches one turn may leave waiting for the client's results (an emulator bound). */
export const MAX_PENDING_SEARCHES = 20;

/** The tools whose calls upstream runs (and the emulator too), and each one's result type. */
const SERVER_CALL_RESULTS = {
  web_search: 'web_search_tool_result',
  web_fetch: 'web_fetch_tool_result',
  tool_search_tool_regex: 'tool_search_tool_result',
  tool_search_tool_bm25: 'tool_search_tool_result',
} as const;
const RESULT_TYPES = new Set<string>(Object.values(SERVER_CALL_RESULTS));
const isServerCall = (name: string): name is PendingCall['name'] =>
  Object.hasOwn(SERVER_CALL_RESULTS, name);

/**
 * The web searches and fetches waiting to run: those the last assistant turn called beside a
 * client's tool (upstream stopped for the client's results, and runs them once the next user
 * turn brings them: the reply starts with their results), or that a paused turn (`pause_turn`)
 * sent back as the last message holds. One no turn has the result of anywhere else (an earlier
 * turn, a last turn with no client call or not answered by tool results) is refused, as
 * upstream refuses it.
 * @see https://platform.claude.com/docs/en/api/handling-stop-reasons#pause-turn
 */
function pendingCalls(messages: readonly MessageParam[]): PendingCall[] {
  // Each call, in order, and whether a result of its tool's type came after it.
  const calls = new Map<string, { name: PendingCall['name']; at: number; resolved: boolean }>();
  let last = -1;
  messages.forEach((message, i) => {
    if (message.role !== 'assistant') return;
    last = i;
    // (a turn of text alone holds no call: the usual turn costs nothing here)
    if (typeof message.content === 'string') return;
    for (const block of message.content) {
      if (block.type === 'server_tool_use' && isServerCall(block.name)) {
        if (calls.has(block.id)) {
          throw fieldError(
            ['messages', i],
            `\`server_tool_use\` ids must be unique: \`${block.id}\``,
          );
        }
        calls.set(block.id, { name: block.name, at: i, resolved: false });
      } else if (RESULT_TYPES.has(block.type)) {
        const id = (block as { tool_use_id: string }).tool_use_id;
        const call = calls.get(id);
        if (!call || SERVER_CALL_RESULTS[call.name] !== block.type) {
          const tool =
            block.type === 'tool_search_tool_result'
              ? 'tool_search_tool_*'
              : block.type.replace(/_tool_result$/, '');
          throw fieldError(
            ['messages', i],
            `\`${block.type}\` block with tool_use_id \`${id}\` does not follow a \`${tool}\` tool use with that id`,
          );
        }
        call.resolved = true;
      }
    }
  });
  if (calls.size === 0) return [];
  const lastBlocks = blocksOf((messages[last] as MessageParam).content);
  const answered = blocksOf(messages[last + 1]?.content ?? '').some(
    (b) => b.type === 'tool_result',
  );
  // Waiting: beside a client's call its results answer, or in a paused turn sent back as it
  // is, last, for the model to go on (`pause_turn`).
  const waiting =
    last === messages.length - 1 ||
    (answered && lastBlocks.some((block) => block.type === 'tool_use'));
  const pending: PendingCall[] = [];
  for (const [id, call] of calls) {
    if (call.resolved) continue;
    if (call.at !== last || !waiting) {
      throw fieldError(
        ['messages', call.at],
        `\`${call.name}\` tool use with id \`${id}\` was found without a corresponding \`${SERVER_CALL_RESULTS[call.name]}\` block`,
      );
    }
    if (pending.length === MAX_PENDING_SEARCHES) {
      throw fieldError(
        ['messages', call.at],
        `at most ${MAX_PENDING_SEARCHES} web searches and fetches may wait for the client's tool results`,
      );
    }
    const block = lastBlocks.find((b) => b.type === 'server_tool_use' && b.id === id);
    pending.push({ id, name: call.name, input: (block as { input: unknown }).input });
  }
  return pending;
}

function readChoice(body: Request, names: ReadonlySet<string>): ToolChoice {
  const choice = body.tool_choice;
  const hasTools = names.size > 0;
  if (!choice) return { mode: hasTools ? 'auto' : 'none', parallel: true };
  if (choice.type === 'none') return { mode: 'none', parallel: true };
  const parallel = choice.disable_parallel_tool_use !== true;
  if (!hasTools && choice.type !== 'auto') {
    throw fieldError(['tool_choice', 'type'], `"${choice.type}" requires tools to be provided`);
  }
  if (choice.type === 'tool') {
    if (!names.has(choice.name)) {
      throw fieldError(['tool_choice', 'name'], `Tool '${choice.name}' not found in tools`);
    }
    return { mode: 'named', name: choice.name, parallel };
  }
  return { mode: choice.type, parallel };
}

/**
 * What a model takes of thinking, sampling and effort, refused in upstream's words: thinking on
 * a model without it, `adaptive` on one before it, `enabled` on one that only adapts; sampling
 * parameters other than their defaults on Opus 4.7 and later; `output_config.effort` on a model
 * before it.
 * @see https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7
 * @see https://github.com/anthropics/claude-code/issues/2245
 * @see https://github.com/askalf/dario/pull/273
 * @see https://github.com/microsoft/vscode/issues/311862
 * @see https://github.com/Oaklight/llm-rosetta/pull/289
 */
function checkModelParams(body: Request): void {
  const type = body.thinking?.type;
  if (type === 'enabled' || type === 'adaptive' || type === 'between_tools') {
    const takes = thinkingOf(body.model);
    if (takes === 'none') {
      throw new GatewayError(400, `'${body.model}' does not support thinking.`);
    }
    if (type === 'adaptive' && takes === 'manual') {
      throw new GatewayError(400, 'adaptive thinking is not supported on this model');
    }
    if (type === 'enabled' && takes === 'adaptive') {
      throw new GatewayError(
        400,
        '"thinking.type.enabled" is not supported for this model. Use "thinking.type.adaptive" and "output_config.effort" to control thinking behavior.',
      );
    }
  }
  if (refusesSampling(body.model)) {
    // "any non-default value": 1 for temperature and top_p; top_k has none
    const set = (
      [
        ['temperature', body.temperature, 1],
        ['top_p', body.top_p, 1],
        ['top_k', body.top_k, undefined],
      ] as const
    ).find(([, value, fallback]) => value !== undefined && value !== fallback);
    if (set) throw new GatewayError(400, `\`${set[0]}\` is deprecated for this model.`);
  }
  if (body.output_config?.effort != null && refusesEffort(body.model)) {
    throw new GatewayError(400, 'This model does not support the effort parameter');
  }
}

/**
 * Thinking's rules; true when thinking is on. `interleaved`: thinking interleaves (adaptive
 * thinking, or the interleaved-thinking beta on a model it works on) with tools, where the
 * budget covers every thinking block of the turn and may exceed `max_tokens`.
 * @see https://platform.claude.com/docs/en/build-with-claude/extended-thinking#interleaved-thinking
 */
function readThinking(body: Request, choice: ToolChoice, interleaved: boolean): boolean {
  const thinking = body.thinking;
  if (!thinking || thinking.type === 'disabled') return false;
  if (thinking.type === 'enabled') {
    if (thinking.budget_tokens < THINKING_MIN_BUDGET) {
      throw fieldError(
        ['thinking', 'enabled', 'budget_tokens'],
        `Input should be greater than or equal to ${THINKING_MIN_BUDGET}`,
      );
    }
    if (
      !interleaved &&
      body.max_tokens !== undefined &&
      body.max_tokens <= thinking.budget_tokens
    ) {
      throw new GatewayError(
        400,
        `\`max_tokens\` must be greater than \`thinking.budget_tokens\`. Please consult our documentation at ${DOCS}#max-tokens-and-context-window-size`,
      );
    }
  }
  // "Adaptive thinking, including on models where thinking is on by default, supports forced
  // tool use": only manual thinking refuses it.
  // @see https://platform.claude.com/docs/en/build-with-claude/extended-thinking#extended-thinking-with-tool-use
  if (thinking.type === 'enabled' && (choice.mode === 'any' || choice.mode === 'named')) {
    throw new GatewayError(400, 'Thinking may not be enabled when tool_choice forces tool use.');
  }
  if (body.temperature !== undefined && body.temperature !== 1) {
    throw new GatewayError(
      400,
      `\`temperature\` may only be set to 1 when thinking is enabled. Please consult our documentation at ${DOCS}#important-considerations-when-using-extended-thinking`,
    );
  }
  if (body.top_k !== undefined) {
    throw fieldError(['top_k'], 'may not be set when thinking is enabled');
  }
  if (body.top_p !== undefined && body.top_p < 0.95) {
    throw fieldError(['top_p'], 'must be between 0.95 and 1 when thinking is enabled');
  }
  return true;
}

/**
 * Where the turn that ends with message `last` starts: consecutive messages of one role are one
 * turn, as upstream merges them.
 */
function turnStart(messages: readonly MessageParam[], last: number): number {
  let i = last;
  while (i > 0 && messages[i - 1]?.role === messages[last]?.role) i--;
  return i;
}

/**
 * With thinking on, the last assistant turn, if it called tools, must start with its thinking
 * (an agent loop sends it back with the tool results), in upstream's words.
 * @see https://github.com/mastra-ai/mastra/issues/7799
 * @see https://github.com/anomalyco/opencode/issues/3077
 */
function checkThinkingLeads(messages: Request['messages'], last: number): void {
  const i = turnStart(messages, last);
  const turn = messages.slice(i, last + 1);
  const calls = turn.some(
    (m) => typeof m.content !== 'string' && m.content.some((block) => block.type === 'tool_use'),
  );
  if (!calls) return;
  const content = messages[i]?.content;
  // (a compaction's summary may come first: the turn starts after it)
  const at =
    typeof content === 'string'
      ? 0
      : Math.max(0, content?.findIndex((b) => b.type !== 'compaction') ?? 0);
  const first = typeof content === 'string' ? { type: 'text' } : content?.[at];
  if (first?.type === 'thinking' || first?.type === 'redacted_thinking') return;
  throw new GatewayError(
    400,
    `messages.${i}.content.${at}.type: Expected \`thinking\` or \`redacted_thinking\`, but found \`${first?.type}\`. When \`thinking\` is enabled, a final \`assistant\` message must start with a thinking block (preceeding the lastmost set of \`tool_use\` and \`tool_result\` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable \`thinking\`. Please consult our documentation at ${DOCS}`,
  );
}

function readOutput(body: Request): OutputFormat | undefined {
  const configured = body.output_config?.format;
  const format = configured ?? body.output_format;
  if (!format) return undefined;
  const path = configured ? ['output_config', 'format', 'schema'] : ['output_format', 'schema'];
  const over = spendSchema(schemaBudget(), format.schema);
  if (over !== undefined) throw fieldError(path, over);
  // (what structured outputs refuse first, as for a strict tool: a cycle of references is
  // said to be one before Ajv would fail on it)
  const refused = schemaMemo(format.schema, 'messages-strict', strictProblem);
  if (refused !== undefined) throw fieldError(path, refused);
  const problem = schemaProblem(format.schema);
  if (problem !== undefined) throw fieldError(path, `is not a valid JSON schema: ${problem}`);
  const unusable = generationProblem(format.schema);
  if (unusable !== undefined) throw fieldError(path, unusable);
  return { kind: 'json_schema', schema: format.schema, path };
}

/** Reads the prompt's blocks, counting media and checking it as upstream does. */
class BlockReader {
  readonly blocks: PromptBlock[] = [];
  readonly marks: Breakpoint[] = [];
  images = 0;
  /** Blocks read now are checked but left out of the prompt (before a compaction block). */
  dropping = false;
  /** Image sides to check once the request's image count is known. */
  private readonly sides: Array<{
    path: PathSegment[];
    /** Where the block is, as an image error's `details.paths` names it. */
    block: string;
    side: number;
    /** `transformations.oversized_image: "error"`: refused when over the limit, not scaled. */
    refuse: boolean;
  }> = [];
  /** Documents and search results read so far (their citation indexes count them all). */
  private documents = 0;
  private searchResults = 0;
  /** What the answer quotes: the first MAX_CITED sources with citations on. */
  readonly cited: CitedSource[] = [];
  /** A document or search result has its citations on. */
  citing = false;

  /** Documents read so far (a fetched page in the history is one). */
  get documentCount(): number {
    return this.documents;
  }

  /** A page an earlier web fetch read, sent back: a document, for the citation indexes. */
  fetchedDocument(): void {
    this.documents++;
  }

  /** Keeps a source's quote, when its citations are on and the answer quotes no more yet. */
  private cite(quote: () => CitedSource | undefined) {
    this.citing = true;
    if (this.dropping || this.cited.length >= MAX_CITED) return;
    const found = quote();
    if (found) this.cited.push(found);
  }

  searchResult(block: SearchResultBlock, path: PathSegment[], opens?: Role) {
    const index = this.searchResults++;
    if (block.citations?.enabled === true) this.cite(() => citeSearchResult(block, index));
    this.text(
      [block.source, block.title, ...block.content.map((c) => c.text)].join('\n'),
      path,
      block.cache_control,
      opens,
    );
  }

  add(block: PromptBlock, path: PathSegment[], cache: CacheControl | null | undefined) {
    if (this.dropping) return;
    const ttl = ttlOf(cache);
    if (ttl) {
      block.cache = ttl;
      this.marks.push({ path: [...path, 'cache_control'], ttl });
    }
    this.blocks.push(block);
  }

  text(text: string, path: PathSegment[], cache?: CacheControl | null, opens?: Role) {
    this.add({ text, ...(opens ? { opens } : {}) }, path, cache);
  }

  image(block: ImageBlock, path: PathSegment[], opens?: Role) {
    this.images++;
    const { source } = block;
    let tokens = UNSEEN_IMAGE_TOKENS;
    let text: string;
    if (source.type === 'base64') {
      const where = [...path, 'image', 'source', 'base64'];
      const image = decodeImage(source.data);
      if (image === 'not-base64') throw fieldError([...where, 'data'], 'Invalid base64 data');
      if (image === 'not-image') {
        throw fieldError([...where, 'data'], 'The image data could not be read as an image');
      }
      if (image.bytes > IMAGE_MAX_BYTES) {
        throw fieldError(
          where,
          `image exceeds 5 MB maximum: ${image.bytes} bytes > ${IMAGE_MAX_BYTES} bytes`,
        );
      }
      const actual = `image/${image.format}`;
      if (actual !== source.media_type) {
        throw fieldError(
          [...where, 'data'],
          `The image was specified using the ${source.media_type} media type, but the image appears to be a ${actual} image`,
        );
      }
      this.sides.push({
        path: [...where, 'data'],
        block: path.filter((segment) => segment !== 'tool_result').join('.'),
        side: Math.max(image.width, image.height),
        refuse: block.transformations?.oversized_image === 'error',
      });
      tokens = imageTokens(image.width, image.height);
      text = `image\n${source.media_type}\n${source.data}`;
    } else {
      text = `image\n${source.type === 'url' ? source.url : source.file_id}`;
    }
    this.add({ text, tokens, ...(opens ? { opens } : {}) }, path, block.cache_control);
  }

  document(block: DocumentBlock, path: PathSegment[], opens?: Role) {
    const index = this.documents++;
    if (block.citations?.enabled === true) this.cite(() => citeDocument(block, index));
    const { source } = block;
    const frame = [block.title, block.context].filter(Boolean).join('\n');
    let text = frame;
    let tokens: number | undefined;
    if (source.type === 'base64') {
      const where = [...path, 'document', 'source', 'base64', 'data'];
      const bytes = decodeBase64(source.data);
      const pages = bytes && pdfPages(bytes);
      if (!pages) throw fieldError(where, 'The PDF specified was not valid.');
      if (pages > PDF_MAX_PAGES) {
        throw fieldError(where, `A maximum of ${PDF_MAX_PAGES} PDF pages may be provided.`);
      }
      tokens = pages * PDF_PAGE_TOKENS + countTokens(frame);
      text = `pdf\n${frame}\n${source.data}`;
    } else if (source.type === 'text') {
      text = `${frame}\n${source.data}`;
    } else if (source.type === 'content') {
      const inner = typeof source.content === 'string' ? source.content : '';
      text = `${frame}\n${inner}`;
      if (typeof source.content !== 'string') {
        source.content.forEach((item, k) => {
          const at = [...path, 'source', 'content', k];
          if (item.type === 'text') this.text(item.text, at, item.cache_control);
          else this.image(item, at);
        });
      }
    } else {
      tokens = PDF_PAGE_TOKENS + countTokens(frame);
      text = `pdf\n${frame}\n${source.type === 'url' ? source.url : source.file_id}`;
    }
    this.add(
      { text, ...(tokens === undefined ? {} : { tokens }), ...(opens ? { opens } : {}) },
      path,
      block.cache_control,
    );
  }

  /** The image limits that depend on how many images the request holds. */
  checkImages(): void {
    if (this.images > MAX_IMAGES) {
      throw fieldError(['messages'], `Too many images: ${this.images} > ${MAX_IMAGES}`);
    }
    const many = this.images > MANY_IMAGES;
    const max = many ? MANY_IMAGES_MAX_SIDE : IMAGE_MAX_SIDE;
    // An image over the limit is scaled down to fit (its tokens are the scaled image's), unless
    // it asks for an error: then every such image is named.
    const over = this.sides.filter((s) => s.side > max && s.refuse);
    const [first] = over;
    if (first) {
      const message = `At least one of the image dimensions exceed max allowed size${many ? ' for many-image requests' : ''}: ${max} pixels`;
      throw new GatewayError(400, message, {
        issue: { path: first.path, kind: 'value', problem: message },
        extra: {
          details: {
            error_code: 'image_dimensions_too_large',
            max_side_length_pixels: max,
            paths: over.map((s) => s.block),
          },
        },
      });
    }
  }
}

/** Text of a tool result, as the reply engine reads it. */
function resultText(content: Extract<ContentBlockParam, { type: 'tool_result' }>['content']) {
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
function checkToolPairs(messages: readonly MessageParam[]): void {
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

/** The prompt replies are keyed on and the user turns so far, as stubs and faults match them. */
export const messagesPromptFacts = (body: Pick<Request, 'messages'>) => ({
  prompt: replyPrompt(body.messages, textOf),
  turn: body.messages.filter((m) => m.role === 'user' && textOf(m) !== '').length,
});

const NO_BETAS: ReadonlySet<string> = new Set();

/**
 * The betas a request names, in `msgapi-beta` (the gateway's) or `anthropic-beta` (which the
 * SDK's `betas` option sends), comma-separated (Node joins a repeated header with commas).
 */
export function betasOf(headers: IncomingHttpHeaders): ReadonlySet<string> {
  const gateway = headers['msgapi-beta'];
  const anthropic = headers['anthropic-beta'];
  if (gateway === undefined && anthropic === undefined) return NO_BETAS;
  const listed = `${gateway ?? ''},${anthropic ?? ''}`;
  return new Set(
    listed
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean),
  );
}

/** With tools, thinking may span the turn: its budget may then exceed `max_tokens`. */
const INTERLEAVED_THINKING = 'interleaved-thinking-2025-05-14';

/**
 * Reads a request's prompt, refusing what upstream refuses. `counting`: for count_tokens, which
 * takes a top-level `compaction` and ignores it (the count is of the conversation as sent).
 */
export function readPrompt(
  body: Request,
  betas: ReadonlySet<string> = NO_BETAS,
  counting = false,
): MessagesPrompt {
  if (body.thread !== undefined) {
    throw new GatewayError(400, 'thread: message threads are not supported by this gateway', {
      extra: { details: { error_code: 'thread_unsupported_request', unsupported: [] } },
    });
  }
  const asked = readSummarize(body, betas);
  const summarize = counting ? undefined : asked;
  if (body.messages.length === 0) {
    // (checked here rather than by the schema: a compaction request says it its own way)
    throw asked
      ? compactionError(
          'compaction_nothing_to_summarize',
          'messages: there is no `user` or `assistant` content to summarize',
        )
      : fieldError(['messages'], 'must have at least 1 item(s)');
  }
  checkSystemMessages(body.messages, body.model);
  const reader = new BlockReader();
  const {
    defs,
    names,
    strict: strictTools,
    search,
    fetch,
    toolSearch,
    toolSearches,
    deferred,
  } = readTools(body.tools ?? [], reader);
  // Tools a search found earlier in the conversation: their definitions are read in where the
  // search (or a client's tool result) named them.
  const discovered = new Set<string>();
  const reference = (name: unknown, at: PathSegment[]) => {
    if (typeof name !== 'string' || !names.has(name)) {
      throw fieldError(
        at,
        `Tool reference '${String(name).slice(0, 200)}' not found in available tools`,
      );
    }
    // (before a compaction block, dropped with it: found again after)
    if (reader.dropping) return;
    discovered.add(name);
    const definition = deferred.get(name);
    if (definition) reader.text(definition.json, at);
  };
  const choice = readChoice(body, names);
  checkModelParams(body);
  const interleaved =
    (body.tools?.length ?? 0) > 0 &&
    (body.thinking?.type === 'adaptive' ||
      body.thinking?.type === 'between_tools' ||
      (betas.has(INTERLEAVED_THINKING) && interleavesByBeta(body.model)));
  const thinking = readThinking(body, choice, interleaved);
  const final = body.messages[body.messages.length - 1];
  if (
    final?.role === 'assistant' &&
    final.content !== '' &&
    !onlyCompaction(final) &&
    // (a paused turn, sent back for the model to go on, is not a prefill)
    !endsInServerTool(final) &&
    // (nothing is sampled after a compaction request's conversation)
    !summarize &&
    refusesPrefill(body.model)
  ) {
    throw new GatewayError(
      400,
      'This model does not support assistant message prefill. The conversation must end with a user message.',
    );
  }
  if (body.temperature !== undefined && body.top_p !== undefined && takesOneSampler(body.model)) {
    throw new GatewayError(
      400,
      'temperature and top_p cannot both be specified for this model. Please use only one.',
    );
  }
  const editing = readContextManagement(body, betas, thinking);
  const output = readOutput(body);
  const strictTotals = strictTotalsProblem(strictTools.length, [
    ...strictTools,
    ...(output?.kind === 'json_schema'
      ? [schemaMemo(output.schema, 'messages-strict-counts', strictCounts)]
      : []),
  ]);
  if (strictTotals !== undefined) throw new GatewayError(400, strictTotals);
  // The schema is part of the prompt upstream builds (and of its cache prefix, after the tools),
  // as chat counts its response_format.
  if (output?.kind === 'json_schema') {
    reader.text(JSON.stringify(output.schema), output.path.slice(0, -1));
  }

  if (body.system !== undefined) {
    if (typeof body.system === 'string') reader.text(body.system, ['system']);
    else {
      body.system.forEach((block, j) => {
        if (block.text.trim() === '') {
          throw fieldError(['system', j, 'text'], 'must contain non-whitespace text');
        }
        reader.text(block.text, ['system', j], block.cache_control);
      });
    }
  }

  // What the prompt holds before the messages; a compaction block drops the messages before it.
  const head = reader.blocks.length;
  const summarized = lastCompaction(body.messages, betas, editing);
  const compactedAt = summarized?.message ?? -1;
  const compactedBlock = summarized?.block ?? -1;

  let lastAssistant = -1;
  body.messages.forEach((m, i) => {
    if (m.role === 'assistant') lastAssistant = i;
  });
  // (`between_tools` does not think before a turn's first answer: its turns start without it)
  if (thinking && lastAssistant >= 0 && body.thinking?.type !== 'between_tools') {
    checkThinkingLeads(body.messages, lastAssistant);
  }
  // Thinking from earlier turns is dropped from the context, as upstream drops it: all but
  // that of the last `keepTurns` assistant turns that hold some.
  const keptFrom = firstKeptThinking(body.messages, editing.keepTurns(body.model, thinking));
  const toolNames = new Map<string, string>();
  body.messages.forEach((message, i) => {
    const path: PathSegment[] = ['messages', i, 'content'];
    reader.dropping = i < compactedAt;
    if (typeof message.content === 'string') {
      // "all messages must have non-empty content except for the optional final assistant
      // message": an empty last assistant turn prefills nothing. @see
      // https://github.com/anthropics/claude-code/issues/3196
      if (
        message.content === '' &&
        message.role === 'assistant' &&
        i === body.messages.length - 1
      ) {
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
      reader.dropping = i < compactedAt || (i === compactedAt && j < compactedBlock);
      // (a signed compaction may open a user turn: lastCompaction checked that it comes first)
      if (message.role === 'user' && ASSISTANT_ONLY.has(block.type) && !isSigned(block)) {
        throw fieldError(
          [...at, 'type'],
          `"${block.type}" blocks may only appear in assistant messages`,
        );
      }
      if (message.role === 'assistant' && USER_ONLY.has(block.type)) {
        throw fieldError(
          [...at, 'type'],
          `"${block.type}" blocks may only appear in user messages`,
        );
      }
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
            toolNames.set(block.id, block.name);
            if (!reader.dropping) editing.toolUse(block.id, block.name, reader.blocks.length);
          }
          reader.text(
            `${block.name}\n${JSON.stringify(block.input)}`,
            at,
            block.cache_control,
            first(),
          );
          break;
        case 'tool_result': {
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
              else if (item.type === 'tool_reference') reference(item.tool_name, inner);
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
          if (!reader.dropping) editing.toolResult(block.tool_use_id, from, reader.blocks.length);
          break;
        }
        case 'thinking':
          if (!verifyThinking(block.thinking, block.signature)) {
            throw fieldError(at, 'Invalid `signature` in `thinking` block');
          }
          if (reader.dropping) break;
          if (i >= keptFrom) reader.text(block.thinking, at, undefined, first());
          else editing.thinkingCleared(i, block.thinking);
          break;
        case 'redacted_thinking':
          if (reader.dropping) break;
          if (i >= keptFrom) reader.text(block.data, at, undefined, first());
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
          // A server tool's result, as upstream gave it.
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
                reference(ref?.tool_name, [...at, 'content', 'tool_references', k]);
              });
            }
          }
          reader.text(JSON.stringify(block.content) ?? '', at, block.cache_control, first());
      }
    });
    // A turn whose every block was left out (earlier thinking) is still a turn: its framing.
    if (opens !== undefined) reader.add({ text: '', tokens: 0, opens }, path, undefined);
  });
  reader.dropping = false;
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

  // The results the last turn sends back, when it is the user's (system messages after it apart).
  let end = body.messages.length - 1;
  while (end > 0 && body.messages[end]?.role === 'system') end--;
  const lastTurn = body.messages[end]?.role === 'user' ? turnStart(body.messages, end) : end + 1;
  const results: ToolResult[] = body.messages.slice(lastTurn).flatMap((message: MessageParam) =>
    blocksOf(message.content).flatMap((block) =>
      block.type === 'tool_result'
        ? [
            {
              name: toolNames.get(block.tool_use_id),
              content: edited.cleared.has(block.tool_use_id)
                ? CLEARED_RESULT
                : resultText(block.content),
              isError: block.is_error === true,
            },
          ]
        : [],
    ),
  );
  const pending = pendingCalls(body.messages);
  for (const call of pending) {
    const offered =
      call.name === WEB_SEARCH_NAME
        ? search
        : call.name === WEB_FETCH_NAME
          ? fetch
          : toolSearches?.has(call.name);
    if (offered) continue;
    throw new GatewayError(
      400,
      `\`${call.name}\` tool use with id \`${call.id}\` is waiting for its result, but no ${call.name} tool was provided`,
    );
  }
  const facts = messagesPromptFacts(body);
  const turn: Turn = {
    api: 'messages',
    model: body.model,
    prompt: facts.prompt,
    variant: 0,
    userTurns: facts.turn,
    results,
    tools: defs,
    choice,
    output,
    // Without interleaved thinking a model thinks once, at the start of its turn: its answer to
    // tool results (the same turn, going on) has no new thinking.
    // @see https://platform.claude.com/docs/en/build-with-claude/extended-thinking#interleaved-thinking
    // `between_tools` thinks only there: after tool results, never before its first answer.
    thinking:
      thinking &&
      (body.thinking?.type === 'between_tools'
        ? results.length > 0
        : results.length === 0 || interleaved),
    budget: generationBudget(),
    memo: {},
    // (the last user text's own first URLs, then the conversation's latest: a fetch may take
    // either, however many the conversation holds)
    ...(fetch
      ? {
          urls: [
            ...urlsIn(facts.prompt, MAX_CONTEXT_URLS),
            ...conversationUrls(body.messages, ALL_SOURCES),
          ],
        }
      : {}),
    ...(deferred.size > 0 && !toolSearch
      ? { hidden: new Set([...deferred.keys()].filter((name) => !discovered.has(name))) }
      : {}),
  };
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
    ...(fetch
      ? {
          fetch,
          fetchable:
            fetch.sources === ALL_SOURCES
              ? (turn.urls ?? [])
              : [
                  ...(fetch.sources.user ? urlsIn(facts.prompt, MAX_CONTEXT_URLS) : []),
                  ...conversationUrls(body.messages, fetch.sources),
                ],
        }
      : {}),
    ...(toolSearch && toolSearches
      ? { toolSearch: { tool: toolSearch, tools: toolSearches, deferred, discovered } }
      : {}),
    documents: reader.documentCount,
    ...(pending.length > 0 ? { pending } : {}),
  };
}

/**
 * A top-level `compaction` (on demand): its beta, and the instructions that replace the
 * summarizing prompt (blank ones count as absent). count_tokens takes it too, and ignores it.
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction-on-demand
 */
function readSummarize(body: Request, betas: ReadonlySet<string>) {
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

/**
 * Mid-conversation system messages: a model that takes them, text only, and where upstream
 * places them: not first (the top-level `system` is for that), right after a user turn (or an
 * assistant turn ending in a server tool's result), and last or right before an assistant
 * turn. Consecutive ones are one section, placed as a whole. Upstream's wording of these
 * refusals is not published; these are the words its API was seen to answer.
 * @see https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages
 */
function checkSystemMessages(messages: readonly MessageParam[], model: string): void {
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

/** A compaction block signed by an on-demand compaction. */
const isSigned = (block: ContentBlockParam) =>
  block.type === 'compaction' && typeof block.signature === 'string';

/**
 * A turn of compaction blocks only: what a paused compaction is sent back as, or an on-demand
 * summary sent back as a turn of its own.
 */
/** A turn that ends in a call to upstream's own tool or its result: a paused turn (`pause_turn`). */
const endsInServerTool = (message: MessageParam) => {
  const last = typeof message.content === 'string' ? undefined : message.content.at(-1);
  return (
    last !== undefined &&
    (last.type === 'server_tool_use' ||
      (SERVER_TOOL_RESULTS as readonly string[]).includes(last.type))
  );
};

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
function lastCompaction(
  messages: readonly MessageParam[],
  betas: ReadonlySet<string>,
  editing: Editing,
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
    if (isSigned(block)) checkSigned(block, i, j, betas, editing);
    else if (!editing.compaction) {
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
  editing: Editing,
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
  if (editing.compaction) {
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

const isThinking = (block: ContentBlockParam) =>
  block.type === 'thinking' || block.type === 'redacted_thinking';

/**
 * The first message whose thinking stays in the context: that of the `keep`-th latest
 * assistant turn that holds thinking (0 when fewer hold some: all stay).
 */
function firstKeptThinking(messages: readonly MessageParam[], keep: number): number {
  if (keep === Number.POSITIVE_INFINITY) return 0;
  let seen = 0;
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as MessageParam;
    if (m.role !== 'assistant' || typeof m.content === 'string' || !m.content.some(isThinking)) {
      continue;
    }
    if (++seen === keep) return i;
  }
  return 0;
}

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

/** Context editing's beta. */
const CONTEXT_MANAGEMENT = 'context-management-2025-06-27';
/** Compaction's beta: it takes `context_management` too, with `compact_20260112`. */
const COMPACT = 'compact-2026-01-12';

/** A `compact_20260112` edit's default trigger, and the least one it takes (input tokens). */
const COMPACTION_TRIGGER = 150_000;
const COMPACTION_MIN_TRIGGER = 50_000;

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
interface Editing {
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
 * `context_management` (README "Context editing"): taken with its beta only (without it
 * upstream's validator refuses the field), `clear_thinking_20251015` first when given, each
 * strategy once, thinking clearing only with thinking on.
 * @see https://platform.claude.com/docs/en/build-with-claude/context-editing
 * @see https://github.com/anthropics/claude-code/issues/14135
 * @see https://github.com/anthropics/claude-code/issues/11971
 */
function readContextManagement(
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

/**
 * A `compact_20260112` edit: its beta, a model that compacts, a trigger of at least
 * COMPACTION_MIN_TRIGGER input tokens (upstream's words).
 * @see https://platform.claude.com/docs/en/build-with-claude/compaction
 */
function readCompaction(
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

/**
 * At most 4 breakpoints, a top-level `cache_control` (automatic caching) counted with the
 * blocks', and a "1h" one may not follow a "5m" one.
 */
function checkBreakpoints(marks: readonly Breakpoint[], automatic: boolean): void {
  const found = marks.length + (automatic ? 1 : 0);
  if (found > MAX_BREAKPOINTS) {
    throw fieldError(
      (marks[MAX_BREAKPOINTS] as Breakpoint | undefined)?.path ?? ['cache_control'],
      `A maximum of ${MAX_BREAKPOINTS} blocks with cache_control may be provided. Found ${found}.`,
    );
  }
  const firstShort = marks.findIndex((m) => m.ttl === '5m');
  const lateLong = marks.findIndex((m, i) => m.ttl === '1h' && firstShort !== -1 && i > firstShort);
  if (lateLong !== -1) {
    throw fieldError(
      [...(marks[lateLong] as Breakpoint).path, 'ttl'],
      'a "1h" cache_control may not come after a "5m" one',
    );
  }
}

/**
 * A top-level `cache_control` puts a breakpoint on the last cacheable block (upstream's
 * automatic caching), unless that block already is one.
 */
function automaticBreakpoint(blocks: PromptBlock[], ttl: CacheTtl): void {
  const last = blocks[blocks.length - 1];
  if (last && last.cache === undefined) last.cache = ttl;
}
