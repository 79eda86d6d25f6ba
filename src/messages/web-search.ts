import { fieldError, GatewayError, type PathSegment } from '../platform/errors.js';
import { fnv1a } from '../platform/hash.js';
import { countTokens } from '../platform/tokens.js';
import { replyOfHash } from '../text/default-reply.js';
import { type CitedSource, firstSentence } from './citations.js';
import { WEB_SEARCH_TOOL, type WebSearchResult } from './schemas.js';

/**
 * Upstream's web search tool (docs/agents.md "Web search"): a request that offers it may have the
 * model search, which upstream runs itself within the request. The emulator's search reads
 * no web: its results are pages made from the query (deterministic: the same query finds the
 * same pages), on the reserved `example.*` domains or the tool's `allowed_domains`, never on
 * its `blocked_domains`; the answer quotes them with `web_search_result_location` citations.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
 * @see https://github.com/anthropics/anthropic-sdk-typescript/blob/main/src/resources/messages/messages.ts
 */

/** `web_search_20250305`, `web_search_20260209`, ...: the tool's versioned types. */
export const WEB_SEARCH_TYPE = /^web_search_\d{8}$/;
export const WEB_SEARCH_NAME = WEB_SEARCH_TOOL;

/** What the web tools (search, fetch) of a request share, read. */
export interface WebTool {
  /** Uses one request may run; past it a use answers `max_uses_exceeded`. */
  maxUses: number | undefined;
  /** Domains results must come from (`example.com`, `example.com/blog`, `docs.example.com`). */
  allowed: readonly Domain[] | undefined;
  /** Domains results must not come from. */
  blocked: readonly Domain[];
}

/** A web search tool of the request, read. */
export type WebSearchTool = WebTool;

/** A domain filter entry: a host (its subdomains included) and a path prefix (`*` any text). */
export interface Domain {
  /** In lower case. */
  host: string;
  /** The path prefix (percent-encoded as pages' paths are) cut at its `*`s. */
  path: string[] | undefined;
  /** Where a result on this entry is: its host and path, each `*` an `a`, no final `/`. */
  base: string;
}

/**
 * A host of dot-separated labels, then a path with no spaces, query or fragment; no scheme.
 * A path's characters are whole (no half of a surrogate pair).
 */
const DOMAIN =
  /^([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+)(\/(?:[^\s?#\ud800-\udfff]|[\ud800-\udbff][\udc00-\udfff])*)?$/i;

/** A path's characters beyond ASCII percent-encoded, as a page's path writes them. */
const encodedPath = (path: string) =>
  path.replace(/[\u0080-\uffff]+/g, (chars) => encodeURIComponent(chars));

/** A domain list's entries (the schema checks its length and each entry's type and length). */
function readDomains(value: unknown, path: PathSegment[]): Domain[] | undefined {
  if (!Array.isArray(value)) return undefined;
  return value.map((entry, k) => {
    const at = [...path, k];
    const match = DOMAIN.exec(entry as string);
    if (!match || match[1]?.includes('*')) {
      throw fieldError(
        at,
        `Invalid domain '${entry.slice(0, 200)}': a host name with an optional path, without a scheme, query or fragment (example.com, example.com/blog); '*' only in the path`,
      );
    }
    const host = (match[1] as string).toLowerCase();
    const suffix = match[2] === undefined ? undefined : encodedPath(match[2]);
    return {
      host,
      path: suffix?.split('*'),
      base: `${host}${(suffix ?? '').replace(/\*/g, 'a').replace(/\/$/, '')}`,
    };
  });
}

/**
 * Whether a result's URL is on a filter's domain: its host or a subdomain, and a path that
 * starts as the entry's does, each `*` standing for any text (matched left to right, in
 * linear time: the first place each part fits is as good as a later one).
 */
export function onDomain(host: string, path: string, domain: Domain): boolean {
  if (host !== domain.host && !host.endsWith(`.${domain.host}`)) return false;
  const parts = domain.path;
  if (parts === undefined) return true;
  if (!path.startsWith(parts[0] as string)) return false;
  let at = (parts[0] as string).length;
  for (let k = 1; k < parts.length; k++) {
    const found = path.indexOf(parts[k] as string, at);
    if (found === -1) return false;
    at = found + (parts[k] as string).length;
  }
  return true;
}

/**
 * The settings the web tools share. The schema (schemas.ts, ServerToolSchema) checks the name,
 * `max_uses`, the domain lists' lengths and entries' types, `user_location` and
 * `response_inclusion` in upstream's words; what no keyword states is checked here: one domain
 * list at most, each entry a host name without a scheme. Errors name the field under
 * `tools.N.<type>`, as upstream's do.
 */
export function readWebTool(tool: Record<string, unknown>, index: number): WebTool {
  const at = (field: string): PathSegment[] => ['tools', index, String(tool.type), field];
  const maxUses = tool.max_uses;
  const allowed = readDomains(tool.allowed_domains, at('allowed_domains'));
  const blocked = readDomains(tool.blocked_domains, at('blocked_domains'));
  if (allowed && blocked) {
    throw new GatewayError(
      400,
      `tools.${index}.${String(tool.type)}: Only one of allowed_domains or blocked_domains may be set.`,
    );
  }
  return {
    maxUses: typeof maxUses === 'number' ? maxUses : undefined,
    allowed,
    blocked: blocked ?? [],
  };
}

/** A web search tool's settings (the schema checks `user_location` and `response_inclusion`). */
export function readWebSearchTool(tool: Record<string, unknown>, index: number): WebSearchTool {
  return readWebTool(tool, index);
}

/** Where results come from without `allowed_domains`: reserved example domains (RFC 2606). */
const DEFAULT_SITES = [
  'docs.example.com',
  'news.example.org',
  'wiki.example.net',
  'blog.example.com',
  'guide.example.org',
  'forum.example.net',
];
/** Results a search finds. */
export const RESULTS_PER_SEARCH = 3;
/** The most characters a query has: the prompt's first words up to it. */
const MAX_QUERY_CHARS = 120;
/**
 * The longest query a search runs (a scripted call's, or one sent back in the history);
 * longer is the `query_too_long` error. Upstream's own bound is not published.
 */
export const MAX_SEARCH_QUERY_CHARS = 500;
/** The most characters a citation quotes, as upstream. */
export const MAX_CITED_CHARS = 150;

/** The query the model searches for: the prompt's words, up to 12 of them (lower case). */
export function searchQuery(prompt: string): string {
  // (words keep their combining marks, and the marks inside them: web_search, 3.5, don't)
  const words =
    prompt.toLowerCase().match(/[\p{L}\p{N}\p{M}]+(?:['._-][\p{L}\p{N}\p{M}]+)*/gu) ?? [];
  let query = '';
  for (const word of words.slice(0, 12)) {
    const next = query === '' ? word : `${query} ${word}`;
    if (next.length > MAX_QUERY_CHARS) break;
    query = next;
  }
  return query || 'search';
}

const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

/** A page found: its result block and the text the answer quotes. */
export interface FoundPage {
  result: WebSearchResult;
  text: string;
}

/** The most characters of a page's path made from its query (percent-encoded). */
const MAX_SLUG = 120;

/**
 * A page's path: the query's words in lower case, joined by `-`, percent-encoded (a query in
 * any script names its own pages), up to MAX_SLUG characters.
 */
function slugOf(query: string): string {
  let slug = '';
  for (const word of query.toLowerCase().match(/[\p{L}\p{N}\p{M}]+/gu) ?? []) {
    let piece = '';
    for (const char of word) {
      const encoded = encodeURIComponent(char);
      if (slug.length + 1 + piece.length + encoded.length > MAX_SLUG) break;
      piece += encoded;
    }
    if (piece === '') break;
    slug = slug === '' ? piece : `${slug}-${piece}`;
    if (piece.length < encodeURIComponent(word).length) break;
  }
  return slug || 'page';
}

const titleOf = (query: string) =>
  query
    .split(' ')
    .slice(0, 8)
    .map((word) => word.charAt(0).toUpperCase() + word.slice(1))
    .join(' ');

export const opaque = (text: string) => Buffer.from(text).toString('base64');

/**
 * The pages a search for `query` finds: RESULTS_PER_SEARCH of them, on the allowed domains
 * when the tool names some (in turn), else on the example sites the blocked ones leave (none
 * when every one is blocked: an empty result, as upstream answers a search that finds nothing).
 */
export function searchPages(query: string, tool: WebSearchTool): FoundPage[] {
  const seed = fnv1a(`web_search\n${query}`);
  const slug = slugOf(query);
  const pages: FoundPage[] = [];
  for (let k = 0; k < RESULTS_PER_SEARCH; k++) {
    const path = `/${slug}${k === 0 ? '' : `-${k + 1}`}`;
    // The sites this page may be on: the allowed entries, or the example sites whose host and
    // path no blocked entry covers.
    const sites = tool.allowed
      ? tool.allowed.map((domain) => domain.base)
      : DEFAULT_SITES.filter((host) => !tool.blocked.some((d) => onDomain(host, path, d)));
    if (sites.length === 0) continue;
    const site = sites[(seed + k) % sites.length] as string;
    const url = `https://${site}${path}`;
    const host = site.split('/')[0] as string;
    const text = replyOfHash(seed, k).text;
    const day = (seed >>> (k * 3)) % 28;
    const month = (seed >>> (k * 5 + 1)) % 12;
    pages.push({
      result: {
        type: 'web_search_result',
        url,
        title: `${titleOf(query)} - ${host}`,
        encrypted_content: opaque(`emulator web page v1\n${url}\n${text}`),
        page_age: `${MONTHS[month]} ${day + 1}, ${2025 - (k % 2)}`,
      },
      text,
    });
  }
  return pages;
}

/** Tokens the model reads of the pages found: upstream bills them as input. */
export const pageTokens = (pages: readonly FoundPage[]) =>
  pages.reduce((sum, page) => sum + countTokens(page.result.title) + countTokens(page.text), 0);

/**
 * The quote of a page: its first sentence, up to MAX_CITED_CHARS characters (cut at a word,
 * or within one that long), and where it is.
 */
export function citePage(page: FoundPage, index: number): CitedSource {
  const at = firstSentence(page.text, MAX_CITED_CHARS);
  const text = at ? page.text.slice(at.start, at.end) : '';
  return {
    text,
    citation: {
      type: 'web_search_result_location',
      url: page.result.url,
      title: page.result.title,
      encrypted_index: opaque(
        `emulator citation v1\n${page.result.url}\n${index}\n0-${text.length}`,
      ),
      cited_text: text,
    },
  };
}
