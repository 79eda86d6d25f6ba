import { isJsonObject } from '../platform/json-body.js';
import { countTokens } from '../platform/tokens.js';
import { structuredText, type ToolCall, type Turn, turnSeed } from '../text/agent.js';
import { replyOfHash } from '../text/default-reply.js';
import type { CitedSource } from './citations.js';
import type { PendingCall } from './prompt/index.js';
import { DIRECT, type ResponseBlock, type WEB_SEARCH_ERRORS } from './schemas.js';
import {
  type SearchOutcome,
  searchInputsFor,
  searchTools,
  type ToolSearch,
  type ToolSearchContext,
} from './tool-search.js';
import {
  citeFetched,
  type FetchedPage,
  fetchedTokens,
  fetchPage,
  normalUrl,
  WEB_FETCH_NAME,
  type WebFetchTool,
} from './web-fetch.js';
import {
  citePage,
  type FoundPage,
  MAX_SEARCH_QUERY_CHARS,
  pageTokens,
  searchPages,
  WEB_SEARCH_NAME,
  type WebSearchTool,
} from './web-search.js';

/**
 * The tools upstream runs within a request (docs/agents.md "Web search", "Web fetch", "Tool search"):
 * a reply's web searches, fetches and tool searches, run one by one as the reply calls them,
 * and what they found.
 */

/** A request's server tools, and what they may read. */
export interface ServerContext {
  search?: WebSearchTool;
  fetch?: WebFetchTool;
  /** The calls the last turn left to run (beside a client's tool). */
  pending: readonly PendingCall[];
  /** The URLs a fetch may take: those of the conversation `url_sources` takes. */
  urls: readonly string[];
  /** The request's documents: a fetched page's citation index follows them. */
  documents: number;
  /** When the request came (ISO 8601): a fetch's `retrieved_at`. */
  now: string;
  /** The tool search tool and what it searches (docs/agents.md "Tool search"). */
  toolSearch?: ToolSearchContext;
}

/** The most tool searches the model makes in one reply to find the deferred tools it calls. */
export const MAX_TOOL_SEARCHES = 20;

/** How many of the pages a search found, and of the pages fetched, the answer quotes. */
const QUOTED_PAGES = 2;

type SearchResultBlock = Extract<ResponseBlock, { type: 'web_search_tool_result' }>;
type FetchResultBlock = Extract<ResponseBlock, { type: 'web_fetch_tool_result' }>;
type ToolSearchResultBlock = Extract<ResponseBlock, { type: 'tool_search_tool_result' }>;

/** The server tool calls of one reply, run. */
export class ServerRun {
  /** Searches and fetches run (billed): `usage.server_tool_use`. */
  searches = 0;
  fetches = 0;
  /** Fetches tried, failed ones too: `max_uses` counts them. */
  private fetchUses = 0;
  /** Searches called (failed ones too): the answer speaks of search results. */
  private searchCalls = 0;
  /** Tokens of what was found, which the model reads (input). */
  inputTokens = 0;
  private readonly pages: FoundPage[] = [];
  private readonly fetched: FetchedPage[] = [];
  /** The URLs a fetch may take: the conversation's and the pages found so far. */
  private context: Set<string> | undefined;
  /** The pages each query of the reply found (see `inputs`, which looks ahead). */
  private readonly found = new Map<string, FoundPage[]>();
  /** What each tool search of the reply found, by its input (see `withToolSearches`). */
  private readonly outcomes = new WeakMap<object, SearchOutcome>();

  constructor(private readonly web: ServerContext) {}

  /** The calls the last turn left to run (beside a client's tool, or in a paused turn). */
  get pending(): readonly PendingCall[] {
    return this.web.pending;
  }

  /** Whether upstream runs a call of this name (the request offers the tool). */
  runs(name: string): boolean {
    if (name === WEB_SEARCH_NAME) return this.web.search !== undefined;
    if (name === WEB_FETCH_NAME) return this.web.fetch !== undefined;
    return this.web.toolSearch?.tools.has(name) === true;
  }

  /**
   * Whether a call runs at once, before the client's calls beside it: a tool search does (the
   * model calls what it found in the same reply); a web search or fetch waits for them.
   */
  runsAtOnce(name: string): boolean {
    return this.web.toolSearch?.tools.has(name) === true;
  }

  /**
   * The calls with the inputs upstream's tools get: an object (a scripted call's input that
   * is not one is `{}`, which the tool refuses); a fetch with no URL (named by a user text that
   * holds none) takes the first page an earlier search of the reply finds. The pages a search
   * finds depend on its query alone, so this is known before anything runs.
   */
  inputs(calls: readonly ToolCall[]): ToolCall[] {
    let firstPage: string | undefined;
    const objects = calls.map((call) =>
      this.runs(call.name) && !isJsonObject(call.input) ? { name: call.name, input: {} } : call,
    );
    return this.withToolSearches(objects).map((call) => {
      const input = call.input as Record<string, unknown>;
      if (call.name === WEB_SEARCH_NAME && this.web.search && firstPage === undefined) {
        firstPage = this.pagesOf(input.query)?.[0]?.result.url;
      }
      if (
        call.name === WEB_FETCH_NAME &&
        this.web.fetch &&
        typeof input.url !== 'string' &&
        firstPage
      ) {
        return { name: call.name, input: { url: firstPage } };
      }
      return call;
    });
  }

  /** The pages a search for `query` finds (once per query), or undefined for a query it refuses. */
  private pagesOf(query: unknown): FoundPage[] | undefined {
    if (typeof query !== 'string' || query.trim() === '' || query.length > MAX_SEARCH_QUERY_CHARS) {
      return undefined;
    }
    let found = this.found.get(query);
    if (!found) {
      found = searchPages(query, this.web.search as WebSearchTool);
      this.found.set(query, found);
    }
    return found;
  }

  /**
   * The calls with the tool searches the model makes first: deferred tools the conversation
   * (or a search of the reply before them) has not found are searched for, in as few searches
   * as their names fit (at most MAX_TOOL_SEARCHES), before the first of them; one a search does
   * not find is not called (the model calls what it found). Each search is run here (its
   * outcome kept for `run`): what it finds depends on the request alone.
   */
  private withToolSearches(calls: ToolCall[]): ToolCall[] {
    const toolSearch = this.web.toolSearch;
    if (!toolSearch) return calls;
    const found = new Set(toolSearch.discovered);
    const searched = (input: unknown, tool = toolSearch.tool) => {
      const outcome = searchTools(tool, input, toolSearch.deferred);
      if (isJsonObject(input)) this.outcomes.set(input, outcome);
      if ('names' in outcome) for (const name of outcome.names) found.add(name);
    };
    const missing: string[] = [];
    let at = -1;
    calls.forEach((call, i) => {
      const scripted = toolSearch.tools.get(call.name);
      if (scripted) searched(call.input, scripted);
      else if (toolSearch.deferred.has(call.name) && !found.has(call.name)) {
        if (at === -1) at = i;
        if (!missing.includes(call.name)) missing.push(call.name);
      }
    });
    if (at === -1) return calls;
    const inserted = searchInputsFor(toolSearch.tool, missing, MAX_TOOL_SEARCHES).map(
      ({ input }) => {
        searched(input);
        return { name: toolSearch.tool.name, input };
      },
    );
    const out: ToolCall[] = [];
    calls.forEach((call, i) => {
      if (i === at) out.push(...inserted);
      if (!toolSearch.deferred.has(call.name) || found.has(call.name)) out.push(call);
    });
    return out;
  }

  /** Runs a call: its result block. */
  run(
    name: string,
    id: string,
    input: unknown,
  ): SearchResultBlock | FetchResultBlock | ToolSearchResultBlock {
    if (name === WEB_SEARCH_NAME) return this.search(id, input);
    if (name === WEB_FETCH_NAME) return this.fetch(id, input);
    return this.searchTools(name, id, input);
  }

  /**
   * A tool search: the deferred tools it finds, whose definitions the model then reads (input
   * tokens; not billed as a server tool's use), or why it could not run.
   */
  private searchTools(name: string, id: string, input: unknown): ToolSearchResultBlock {
    const { tools, deferred } = this.web.toolSearch as ToolSearchContext;
    const tool = tools.get(name) as ToolSearch;
    const found =
      (isJsonObject(input) ? this.outcomes.get(input) : undefined) ??
      searchTools(tool, input, deferred);
    if ('error' in found) {
      return {
        type: 'tool_search_tool_result',
        tool_use_id: id,
        content: {
          type: 'tool_search_tool_result_error',
          error_code: found.error,
          error_message: found.message,
        },
      };
    }
    for (const name of found.names) {
      this.inputTokens += countTokens((deferred.get(name) as { json: string }).json);
    }
    return {
      type: 'tool_search_tool_result',
      tool_use_id: id,
      content: {
        type: 'tool_search_tool_search_result',
        tool_references: found.names.map((name) => ({ type: 'tool_reference', tool_name: name })),
      },
    };
  }

  /** Whether anything ran (a failed call did not). */
  get ran(): boolean {
    return this.searches > 0 || this.fetches > 0;
  }

  /**
   * A search: its result block. Past the tool's `max_uses`, or with a query longer than
   * MAX_SEARCH_QUERY_CHARS, a search is not run: its result is the error (not billed).
   */
  private search(id: string, input: unknown): SearchResultBlock {
    const tool = this.web.search as WebSearchTool;
    this.searchCalls++;
    const query = isJsonObject(input) ? input.query : undefined;
    const failed: (typeof WEB_SEARCH_ERRORS)[number] | undefined =
      typeof query !== 'string' || query.trim() === ''
        ? 'invalid_tool_input'
        : tool.maxUses !== undefined && this.searches >= tool.maxUses
          ? 'max_uses_exceeded'
          : query.length > MAX_SEARCH_QUERY_CHARS
            ? 'query_too_long'
            : undefined;
    if (failed) {
      return {
        type: 'web_search_tool_result',
        tool_use_id: id,
        content: { type: 'web_search_tool_result_error', error_code: failed },
        caller: DIRECT,
      };
    }
    const found = this.pagesOf(query) as FoundPage[];
    this.searches++;
    this.pages.push(...found);
    this.inputTokens += pageTokens(found);
    for (const page of found) this.contextUrls().add(page.result.url);
    return {
      type: 'web_search_tool_result',
      tool_use_id: id,
      content: found.map((page) => page.result),
      caller: DIRECT,
    };
  }

  /** A fetch: its result block (failed ones count against `max_uses`, and are not billed). */
  private fetch(id: string, input: unknown): FetchResultBlock {
    const tool = this.web.fetch as WebFetchTool;
    const over = tool.maxUses !== undefined && this.fetchUses >= tool.maxUses;
    this.fetchUses++;
    const page = over
      ? ({ error: 'max_uses_exceeded' } as const)
      : fetchPage(input, tool, this.contextUrls(), this.web.now);
    if ('error' in page) {
      return {
        type: 'web_fetch_tool_result',
        tool_use_id: id,
        content: { type: 'web_fetch_tool_result_error', error_code: page.error },
        caller: DIRECT,
      };
    }
    this.fetches++;
    this.fetched.push(page);
    this.inputTokens += fetchedTokens(page);
    return {
      type: 'web_fetch_tool_result',
      tool_use_id: id,
      content: page.result,
      caller: DIRECT,
    };
  }

  private contextUrls(): Set<string> {
    if (!this.context) {
      this.context = new Set();
      for (const url of this.web.urls) {
        const normal = normalUrl(url);
        if (normal !== undefined) this.context.add(normal);
      }
    }
    return this.context;
  }

  /**
   * What the model says once its calls are done: the default words, of what it found; with an
   * output format, the format's JSON.
   */
  async answer(turn: Turn): Promise<{ text: string; tokens: number }> {
    const lead =
      this.searchCalls > 0
        ? 'the search results'
        : this.fetchUses > 0
          ? 'the page'
          : 'the tools found';
    const text = turn.output
      ? await structuredText(turn, turn.output)
      : `Based on ${lead}: ${replyOfHash(turnSeed(turn, 'web_search'), turn.variant).text}`;
    return { text, tokens: countTokens(text) };
  }

  /**
   * The quotes of what was found: the first pages searched, and the first pages fetched with
   * their tool's citations on (documents after the request's).
   */
  quotes(): CitedSource[] {
    const fetched = this.web.fetch?.citations ? this.fetched.slice(0, QUOTED_PAGES) : [];
    return [
      ...this.pages.slice(0, QUOTED_PAGES).map(citePage),
      ...fetched.flatMap((page, k) => citeFetched(page, this.web.documents + k) ?? []),
    ];
  }
}
