import { fieldError, type PathSegment } from '../platform/errors.js';
import { fnv1a } from '../platform/hash.js';
import { isJsonObject } from '../platform/json-body.js';
import { countTokens, truncateTokens } from '../platform/tokens.js';
import { replyOfHash } from '../text/default-reply.js';
import { type CitedSource, citeDocument } from './citations.js';
import { type WEB_FETCH_ERRORS, WEB_FETCH_TOOL, type WebFetchResult } from './schemas.js';
import { readWebTool, type WebTool } from './web-search.js';

/**
 * Upstream's web fetch tool (docs/agents.md "Web fetch"): the model fetches a URL the conversation
 * holds, and upstream runs the fetch within the request. The emulator reads no web: a URL's
 * page is text made from the URL (the same URL, the same page), refused as upstream refuses a
 * fetch: a URL that is not http(s), longer than 250 characters, not earlier in the
 * conversation, or off the tool's domains.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-fetch-tool
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
 */

/** `web_fetch_20250910`, `web_fetch_20260209`, ...: the tool's versioned types. */
export const WEB_FETCH_TYPE = /^web_fetch_\d{8}$/;
export const WEB_FETCH_NAME = WEB_FETCH_TOOL;

/** A web fetch tool of the request, read. */
export interface WebFetchTool extends WebTool {
  /** The fetched document's citations are on: the answer quotes it. */
  citations: boolean;
  /** Tokens a fetched text is cut to. */
  maxContentTokens: number | undefined;
  /** Where the URLs a fetch may take come from. */
  sources: UrlSources;
}

/** Which of a kind of source a fetch may take URLs from: all, none, or by tool name. */
export type SourceFilter =
  | { mode: 'all' | 'none' }
  | { mode: 'only' | 'except'; names: ReadonlySet<string> };

/** `url_sources`: the users' texts, the client's tool results, the server tools' results. */
export interface UrlSources {
  user: boolean;
  client: SourceFilter;
  server: SourceFilter;
}

const ALL: SourceFilter = { mode: 'all' };
export const ALL_SOURCES: UrlSources = { user: true, client: ALL, server: ALL };

/** Whether a tool's results are a source the filter takes. */
export const takesSource = (filter: SourceFilter, tool: string | undefined): boolean =>
  filter.mode === 'all' ||
  (filter.mode === 'only' && tool !== undefined && filter.names.has(tool)) ||
  (filter.mode === 'except' && (tool === undefined || !filter.names.has(tool)));

const quoted = (tags: readonly string[]) => tags.map((tag) => `'${tag}'`).join(', ');

/**
 * A fetch tool's `url_sources`, in upstream's (pydantic's) words when it is wrong: each key a
 * union tagged by `type` (`user_input` takes `all` or `none`; the tool filters also `only` and
 * `except`, with the names of tools of the request).
 */
function readUrlSources(value: unknown, at: PathSegment[], tools: ReadonlySet<string>): UrlSources {
  if (value === undefined || value === null) return ALL_SOURCES;
  if (!isJsonObject(value)) throw fieldError(at, 'Input should be a valid dictionary');
  const keys = { user_input: ['all', 'none'], client_tool_results: [], server_tool_results: [] };
  for (const key of Object.keys(value)) {
    if (!Object.hasOwn(keys, key)) throw fieldError([...at, key], 'Extra inputs are not permitted');
  }
  const filter = (key: string, tags: readonly string[]): SourceFilter => {
    const source = value[key];
    if (source === undefined) return ALL;
    const path = [...at, key];
    if (!isJsonObject(source)) throw fieldError(path, 'Input should be a valid dictionary');
    const tag = source.type;
    if (typeof tag !== 'string' || !tags.includes(tag)) {
      throw fieldError(
        path,
        `Input tag '${String(tag)}' found using 'type' does not match any of the expected tags: ${quoted(tags)}`,
      );
    }
    const fields = tag === 'only' || tag === 'except' ? ['type', 'tools'] : ['type'];
    for (const field of Object.keys(source)) {
      if (!fields.includes(field)) {
        throw fieldError([...path, tag, field], 'Extra inputs are not permitted');
      }
    }
    if (tag === 'all' || tag === 'none') return { mode: tag };
    const list = source.tools;
    if (!Array.isArray(list)) throw fieldError([...path, tag, 'tools'], 'Field required');
    const names = new Set<string>();
    list.forEach((item: unknown, k) => {
      const inner = [...path, tag, 'tools', k];
      if (!isJsonObject(item)) throw fieldError(inner, 'Input should be a valid dictionary');
      if (item.type !== 'tool_reference') {
        throw fieldError([...inner, 'type'], "Input should be 'tool_reference'");
      }
      if (typeof item.name !== 'string') {
        throw fieldError([...inner, 'name'], 'Input should be a valid string');
      }
      if (!tools.has(item.name)) {
        throw fieldError([...inner, 'name'], `Tool '${item.name}' is not in tools`);
      }
      names.add(item.name);
    });
    return { mode: tag as 'only' | 'except', names };
  };
  const user = filter('user_input', ['all', 'none']);
  const tags = ['all', 'none', 'only', 'except'];
  return {
    user: user.mode === 'all',
    client: filter('client_tool_results', tags),
    server: filter('server_tool_results', tags),
  };
}

/** The longest URL upstream fetches; longer is `url_too_long`. */
export const MAX_FETCH_URL_CHARS = 250;

/**
 * A web fetch tool's settings: the web tools' own, `citations`, `max_content_tokens`,
 * `url_sources` (naming tools of the request: `tools`), and the later versions' `use_cache`
 * and `response_inclusion` (taken on every version; they change nothing here). The schema
 * (schemas.ts, ServerToolSchema) checks each field's own form; `url_sources` is checked here.
 */
export function readWebFetchTool(
  tool: Record<string, unknown>,
  index: number,
  tools: ReadonlySet<string>,
): WebFetchTool {
  const read = readWebTool(tool, index);
  const at = (...field: PathSegment[]): PathSegment[] => [
    'tools',
    index,
    String(tool.type),
    ...field,
  ];
  const citations = tool.citations as { enabled?: boolean } | null | undefined;
  const max = tool.max_content_tokens;
  return {
    ...read,
    citations: citations?.enabled === true,
    maxContentTokens: typeof max === 'number' ? max : undefined,
    sources: readUrlSources(tool.url_sources, at('url_sources'), tools),
  };
}

/** http(s) URLs in a text, as a model reads them (without the punctuation that ends a sentence). */
const URL_IN_TEXT = /https?:\/\/[^\s<>"'`]+/gi;
/** What ends a sentence rather than a URL: `.,;:!?)]}` at its end. */
const TRAILING = new Set(['.', ',', ';', ':', '!', '?', ')', ']', '}']);

/** A URL found in text without the sentence's punctuation after it (trimmed from the end). */
function trimmed(url: string): string {
  let end = url.length;
  while (end > 0 && TRAILING.has(url[end - 1] as string)) end--;
  return url.slice(0, end);
}

/** The URLs of a text, in order: the first `max` of them. */
export function urlsIn(text: string, max = Number.POSITIVE_INFINITY): string[] {
  const urls: string[] = [];
  URL_IN_TEXT.lastIndex = 0;
  for (let found = URL_IN_TEXT.exec(text); found && urls.length < max; ) {
    urls.push(trimmed(found[0]));
    found = URL_IN_TEXT.exec(text);
  }
  URL_IN_TEXT.lastIndex = 0;
  return urls;
}

/** A URL as fetches compare them (`https://example.com` is `https://example.com/`). */
export function normalUrl(url: string): string | undefined {
  try {
    const parsed = new URL(url);
    return parsed.protocol === 'http:' || parsed.protocol === 'https:' ? parsed.href : undefined;
  } catch {
    return undefined;
  }
}

/** A page fetched: its result and its text (what the answer quotes). */
export interface FetchedPage {
  result: WebFetchResult;
  title: string;
  text: string;
}

/** Why a fetch was refused, or the page it fetched. */
export type Fetched = { error: (typeof WEB_FETCH_ERRORS)[number] } | FetchedPage;

/** A path with its percent escapes read, segment by segment (one not UTF-8 is left as it is). */
const decoded = (path: string): string =>
  path
    .split('/')
    .map((segment) => {
      try {
        return decodeURIComponent(segment);
      } catch {
        return segment;
      }
    })
    .join('/');

/**
 * Fetches the call's `input.url`, or says why not, in upstream's error codes: not an http(s)
 * URL (`invalid_tool_input`), over 250 characters (`url_too_long`), not in the conversation
 * (`url_not_in_prior_context`), off the tool's domains (`url_not_allowed`: web fetch matches
 * the host only, so an entry with a path matches no URL).
 */
export function fetchPage(
  input: unknown,
  tool: WebFetchTool,
  context: ReadonlySet<string>,
  /** When the fetch runs (ISO 8601). */
  now: string,
): Fetched {
  const url = isJsonObject(input) ? input.url : undefined;
  const normal = typeof url === 'string' ? normalUrl(url) : undefined;
  if (typeof url !== 'string' || normal === undefined) return { error: 'invalid_tool_input' };
  if (url.length > MAX_FETCH_URL_CHARS) return { error: 'url_too_long' };
  if (!context.has(normal)) return { error: 'url_not_in_prior_context' };
  const { hostname: host, pathname } = new URL(normal);
  const onHost = (domain: { host: string; path: unknown }) =>
    domain.path === undefined && (host === domain.host || host.endsWith(`.${domain.host}`));
  if (tool.allowed ? !tool.allowed.some(onHost) : tool.blocked.some(onHost)) {
    return { error: 'url_not_allowed' };
  }
  const seed = fnv1a(`web_fetch\n${normal}`);
  const words = decoded(pathname)
    .split(/[^\p{L}\p{N}\p{M}]+/u)
    .filter(Boolean)
    .slice(0, 8);
  const title =
    words.length === 0
      ? host
      : `${words.map((w) => w.charAt(0).toUpperCase() + w.slice(1)).join(' ')} - ${host}`;
  const full = `${replyOfHash(seed, 0).text} ${replyOfHash(seed, 1).text}`;
  const text =
    tool.maxContentTokens === undefined ? full : truncateTokens(full, tool.maxContentTokens).text;
  return {
    title,
    text,
    result: {
      type: 'web_fetch_result',
      url,
      content: {
        type: 'document',
        source: { type: 'text', media_type: 'text/plain', data: text },
        title,
        ...(tool.citations ? { citations: { enabled: true } } : {}),
      },
      retrieved_at: now,
    },
  };
}

/** Tokens the model reads of a page fetched: upstream bills them as input. */
export const fetchedTokens = (page: FetchedPage) =>
  countTokens(page.title) + countTokens(page.text);

/**
 * The quote of a fetched page with citations on: as a plain-text document's, by characters
 * (`index`: its place among the request's documents).
 */
export const citeFetched = (page: FetchedPage, index: number): CitedSource | undefined =>
  citeDocument(
    {
      type: 'document',
      source: { type: 'text', media_type: 'text/plain', data: page.text },
      title: page.title,
    },
    index,
  );
