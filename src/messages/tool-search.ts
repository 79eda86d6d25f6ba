import { isJsonObject } from '../platform/json-body.js';
import { linearRegex } from '../platform/linear-regex.js';

/**
 * Upstream's tool search tool (docs/agents.md "Tool search"): tools marked `defer_loading: true` are
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

/** A deferred tool as a search reads it, read once per set of tools. */
export interface Deferred {
  description: string;
  /** Its definition's JSON: what the prompt reads once a search finds it. */
  json: string;
  /** Its name's words, and how often each word of its description occurs. */
  nameWords: ReadonlySet<string>;
  descriptionWords: ReadonlyMap<string, number>;
}

/** A request's tool search: its tool, the deferred tools, and those found earlier. */
export interface ToolSearchContext {
  /** The first tool search tool offered: the one the model searches with. */
  tool: ToolSearch;
  /** Every tool search tool offered (regex and BM25 may both be), by name. */
  tools: ReadonlyMap<string, ToolSearch>;
  /** Tools with `defer_loading: true`, in order. */
  deferred: ReadonlyMap<string, Deferred>;
  discovered: ReadonlySet<string>;
}

const wordsOf = (text: string) => text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? [];

/** A deferred tool, read for searches (its words counted once, not on every search). */
export function deferredTool(name: string, description: string, json: string): Deferred {
  const descriptionWords = new Map<string, number>();
  for (const word of wordsOf(description)) {
    descriptionWords.set(word, (descriptionWords.get(word) ?? 0) + 1);
  }
  return { description, json, nameWords: new Set(wordsOf(name)), descriptionWords };
}

/**
 * What a search the user asks for by the tool's name (or forces) looks for: the words of the
 * last user text (a regex of the first three, a BM25 query of them all).
 */
export function searchInputOfPrompt(search: ToolSearch, prompt: string): Record<string, unknown> {
  // (the tool's own name, which asked for it, is not searched for)
  const words = wordsOf(prompt.replace(/tool_search_tool_\w*/gi, ' '));
  if (search.kind === 'bm25') return { query: words.join(' ').slice(0, MAX_QUERY_CHARS) || 'tool' };
  return { pattern: words.slice(0, 3).join('|').slice(0, MAX_PATTERN_CHARS) || '.' };
}

/** The longest pattern (regex) and query (BM25) a search takes, as upstream. */
export const MAX_PATTERN_CHARS = 200;
export const MAX_QUERY_CHARS = 500;
/** Tools a search finds unless its `limit` says otherwise, and the most it may say. */
export const DEFAULT_LIMIT = 5;
export const MAX_LIMIT = 10_000;

export type SearchOutcome = { names: string[] } | { error: 'invalid_tool_input'; message: string };

/** BM25's term-frequency saturation: a word's weight grows ever slower with its count. */
const K1 = 1.2;

/**
 * Runs a search over the deferred tools: a regex (`{pattern, limit?}`, case-insensitive,
 * linear-time) tried on each tool's name, then its description; or words (`{query, limit?}`)
 * ranked as BM25 ranks them, saturating with each word's count, a word of the name worth more
 * than any count of it in the description (a tool whose name has the query's words comes
 * first). At most `limit` tools (5 by default). A malformed input is `invalid_tool_input`.
 */
export function searchTools(
  search: ToolSearch,
  input: unknown,
  tools: ReadonlyMap<string, Deferred>,
): SearchOutcome {
  const field = search.kind === 'regex' ? 'pattern' : 'query';
  const text = isJsonObject(input) ? input[field] : undefined;
  const limit = isJsonObject(input) ? (input.limit ?? DEFAULT_LIMIT) : DEFAULT_LIMIT;
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
    const names: string[] = [];
    for (const [name, tool] of tools) {
      if (names.length === limit) break;
      if (regex.test(name) || regex.test(tool.description)) names.push(name);
    }
    return { names };
  }
  if (text.length > MAX_QUERY_CHARS) {
    return invalid(`Query exceeds the maximum length of ${MAX_QUERY_CHARS} characters`);
  }
  const terms = new Set(wordsOf(text));
  const scored: Array<{ name: string; score: number; order: number }> = [];
  let order = 0;
  for (const [name, tool] of tools) {
    let score = 0;
    for (const term of terms) {
      if (tool.nameWords.has(term)) score += K1 + 1;
      const count = tool.descriptionWords.get(term) ?? 0;
      score += count / (count + K1);
    }
    // (a name of only the query's words before one with more)
    score -= [...tool.nameWords].filter((word) => !terms.has(word)).length * 0.01;
    if (score > 0) scored.push({ name, score, order });
    order++;
  }
  scored.sort((a, b) => b.score - a.score || a.order - b.order);
  return { names: scored.slice(0, limit).map((tool) => tool.name) };
}

/**
 * The searches the model makes to find `names` (deferred tools it is about to call): regex
 * patterns of their exact names (`^(?:a|b)$`, each at most MAX_PATTERN_CHARS), or one BM25
 * query of each name's words. At most `max` searches; the names they leave out are not found.
 */
export function searchInputsFor(
  search: ToolSearch,
  names: readonly string[],
  max: number,
): Array<{ input: Record<string, unknown>; names: string[] }> {
  const searches: Array<{ input: Record<string, unknown>; names: string[] }> = [];
  if (search.kind === 'bm25') {
    for (const name of names.slice(0, max)) {
      searches.push({ input: { query: wordsOf(name).join(' ') || name }, names: [name] });
    }
    return searches;
  }
  let batch: string[] = [];
  const pattern = (list: string[]) => `^(?:${list.join('|')})$`;
  const flush = () => {
    if (batch.length === 0) return;
    searches.push({
      input: {
        pattern: pattern(batch),
        ...(batch.length > DEFAULT_LIMIT ? { limit: batch.length } : {}),
      },
      names: batch,
    });
    batch = [];
  };
  for (const name of names) {
    // (tool names are letters, digits, `_` and `-`: nothing to escape)
    if (pattern([...batch, name]).length > MAX_PATTERN_CHARS) flush();
    if (searches.length === max) break;
    batch.push(name);
  }
  if (searches.length < max) flush();
  return searches;
}
