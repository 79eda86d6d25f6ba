import type { Citation, DocumentBlock, SearchResultBlock } from './schemas.js';

/**
 * Citations (docs/agents.md "Citations"): with `citations: {enabled: true}` on a document or a search
 * result, the answer quotes it in a text block of its own whose `citations` say where the quote
 * is: the first sentence of a plain-text document (`char_location`), the first text block of a
 * custom-content document (`content_block_location`) or of a search result
 * (`search_result_location`). A PDF's text is not read, so a PDF is not cited.
 * @see https://platform.claude.com/docs/en/build-with-claude/citations
 * @see https://platform.claude.com/docs/en/build-with-claude/search-results
 */

/** A quote the answer may carry: its text and where it is from. */
export interface CitedSource {
  text: string;
  citation: Citation;
}

/** The most sources one answer quotes (the first ones of the request with citations on). */
export const MAX_CITED = 4;
/** The most characters a quote has: a sentence longer than this is cut at a word before it. */
const MAX_CITED_CHARS = 1000;

/**
 * Where the first sentence of a text is (trimmed), at most `max` characters (cut at a word),
 * or undefined for a blank text.
 */
export function firstSentence(
  text: string,
  max = MAX_CITED_CHARS,
): { start: number; end: number } | undefined {
  const start = text.search(/\S/);
  if (start === -1) return undefined;
  const window = text.slice(start, start + max);
  const stop = /[.!?](?=\s|$)/.exec(window);
  let length = stop ? stop.index + 1 : window.length;
  if (!stop && start + window.length < text.length) {
    // cut at the last space of the window, when it has one
    const space = window.search(/\s\S*$/);
    if (space > 0) length = space;
  }
  // (never between the two halves of a character beyond the BMP)
  const last = window.charCodeAt(length - 1);
  if (last >= 0xd800 && last <= 0xdbff) length--;
  const cited = window.slice(0, length).trimEnd();
  // (a text of nothing but half a character has nothing to quote)
  return cited === '' ? undefined : { start, end: start + cited.length };
}

/** The quote of a document with citations on (its index among the request's documents). */
export function citeDocument(block: DocumentBlock, index: number): CitedSource | undefined {
  const { source } = block;
  const title = block.title ?? null;
  if (source.type === 'text') {
    const at = firstSentence(source.data);
    if (!at) return undefined;
    const text = source.data.slice(at.start, at.end);
    return {
      text,
      citation: {
        type: 'char_location',
        cited_text: text,
        document_index: index,
        document_title: title,
        start_char_index: at.start,
        end_char_index: at.end,
        file_id: null,
      },
    };
  }
  if (source.type === 'content') {
    // A string is the document's one block.
    const texts =
      typeof source.content === 'string'
        ? [source.content]
        : source.content.map((item) => (item.type === 'text' ? item.text : ''));
    const k = texts.findIndex((text) => text.trim() !== '');
    if (k === -1) return undefined;
    const text = texts[k] as string;
    return {
      text,
      citation: {
        type: 'content_block_location',
        cited_text: text,
        document_index: index,
        document_title: title,
        start_block_index: k,
        end_block_index: k + 1,
        file_id: null,
      },
    };
  }
  return undefined;
}

/** The quote of a search result with citations on (its index among the request's results). */
export function citeSearchResult(block: SearchResultBlock, index: number): CitedSource | undefined {
  const k = block.content.findIndex((item) => item.text.trim() !== '');
  if (k === -1) return undefined;
  const text = (block.content[k] as { text: string }).text;
  return {
    text,
    citation: {
      type: 'search_result_location',
      cited_text: text,
      search_result_index: index,
      source: block.source,
      title: block.title,
      start_block_index: k,
      end_block_index: k + 1,
    },
  };
}
