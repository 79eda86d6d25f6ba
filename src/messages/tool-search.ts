import { linearRegex } from '../platform/linear-regex.js';

/**
 * Upstream's tool search tool (README "Tool search"): tools marked `defer_loading: true` are
 * left out of the prompt until a search finds them; the model searches (a regular expression
 * or BM25 words), upstream runs the search within the request and answers `tool_reference`s,
 * and the model calls what it found, in the same reply.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool
 */

/** `tool_search_tool_regex_20251119`, `tool_search_tool_bm25`, ...: the tool's types. */
export const TOOL_SEARCH_TYPE = /^tool_search_tool_(regex|bm25)(_\d{8})?$/;

/** A request's tool search tool, and the tools it searches. */
export interface ToolSearch {
  /** Its name (`tool_search_tool_regex` or `tool_search_tool_bm25`). */
  name: string;
  kind: 'regex' | 'bm25';
}

/** A request's tool search: its tool, the deferred tools, and those found earlier. */
export interface ToolSearchContext {
  tool: ToolSearch;
  /** Tools with `defer_loading: true`, in order: each one's description and definition. */
  deferred: ReadonlyMap<string, { description: string; json: string }>;
  discovered: ReadonlySet<string>;
}

/** A deferred tool as a search reads it: its name and description. */
export interface Searchable {
  name: string;
  description: string;
}

/** The longest pattern (regex) and query (BM25) a search takes, as upstream. */
export const MAX_PATTERN_CHARS = 200;
export const MAX_QUERY_CHARS = 500;
/** Tools a search finds unless its `limit` says otherwise, and the most it may say. */
export const DEFAULT_LIMIT = 5;
export const MAX_LIMIT = 10_000;

export type SearchOutcome = { names: string[] } | { error: 'invalid_tool_input'; message: string };

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

const wordsOf = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/**
 * Runs a search over the deferred tools: a regex (`{pattern, limit?}`, case-insensitive,
 * linear-time) tried on each tool's name and description, or BM25 words (`{query, limit?}`)
 * scored by how often each occurs (a name's words count three times a description's), best
 * first; at most `limit` tools (5 by default). A malformed input is `invalid_tool_input`.
 */
export function searchTools(
  search: ToolSearch,
  input: unknown,
  tools: readonly Searchable[],
): SearchOutcome {
  const field = search.kind === 'regex' ? 'pattern' : 'query';
  const text = isObject(input) ? input[field] : undefined;
  const limit = isObject(input) ? (input.limit ?? DEFAULT_LIMIT) : DEFAULT_LIMIT;
  const invalid = (message: string) => ({ error: 'invalid_tool_input' as const, message });
  if (typeof text !== 'string' || text === '')
    return invalid(`${field} must be a non-empty string`);
  if (typeof limit !== 'number' || !Number.isInteger(limit) || limit < 1 || limit > MAX_LIMIT) {
    return invalid(`limit must be an integer from 1 to ${MAX_LIMIT}`);
  }
  if (search.kind === 'regex') {
    if (text.length > MAX_PATTERN_CHARS) {
      return invalid(`Pattern exceeds the maximum length of ${MAX_PATTERN_CHARS} characters`);
    }
    // Python's global inline flags, which a pattern for `re.search()` may start with, as
    // JavaScript's flags (`(?i)` is the search's own: it is case-insensitive).
    const inline = /^\(\?([aiLmsux]+)\)/.exec(text);
    const flags = `i${inline?.[1]?.includes('s') ? 's' : ''}${inline?.[1]?.includes('m') ? 'm' : ''}`;
    let regex: ReturnType<typeof linearRegex>;
    try {
      regex = linearRegex(inline ? text.slice(inline[0].length) : text, flags);
    } catch (err) {
      return invalid(`Invalid regular expression pattern: ${(err as Error).message}`);
    }
    const names = tools
      .filter((tool) => regex.test(tool.name) || regex.test(tool.description))
      .map((tool) => tool.name);
    return { names: names.slice(0, limit) };
  }
  if (text.length > MAX_QUERY_CHARS) {
    return invalid(`Query exceeds the maximum length of ${MAX_QUERY_CHARS} characters`);
  }
  const terms = new Set(wordsOf(text));
  const scored = tools
    .map((tool, order) => {
      let score = 0;
      for (const word of wordsOf(tool.name)) if (terms.has(word)) score += 3;
      for (const word of wordsOf(tool.description)) if (terms.has(word)) score += 1;
      return { name: tool.name, score, order };
    })
    .filter((tool) => tool.score > 0)
    .sort((a, b) => b.score - a.score || a.order - b.order);
  return { names: scored.slice(0, limit).map((tool) => tool.name) };
}

/** What the model searches for to find the tool `name`: its name, as its kind of search reads it. */
export const searchInputFor = (search: ToolSearch, name: string): Record<string, unknown> =>
  search.kind === 'bm25'
    ? { query: name.replace(/[_-]+/g, ' ') }
    : { pattern: name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&') };
