import { fieldError, type PathSegment } from '../../platform/errors.js';
import { decodeBase64 } from '../../platform/image.js';
import { countTokens } from '../../platform/tokens.js';
import { PDF_MAX_PAGES, PDF_PAGE_TOKENS, pdfPages } from '../../text/media.js';
import type { DocumentBlock } from '../schemas.js';

/**
 * A document block's prompt text, and its tokens when they are not its text's (a PDF's pages);
 * a base64 PDF is read for its page count. A content document's own blocks are read apart.
 * @see https://platform.claude.com/docs/en/build-with-claude/pdf-support
 */
export function readDocument(
  block: DocumentBlock,
  path: PathSegment[],
): { text: string; tokens?: number } {
  const { source } = block;
  const frame = [block.title, block.context].filter(Boolean).join('\n');
  if (source.type === 'base64') {
    const where = [...path, 'document', 'source', 'base64', 'data'];
    const bytes = decodeBase64(source.data);
    const pages = bytes && pdfPages(bytes);
    if (!pages) throw fieldError(where, 'The PDF specified was not valid.');
    if (pages > PDF_MAX_PAGES) {
      throw fieldError(where, `A maximum of ${PDF_MAX_PAGES} PDF pages may be provided.`);
    }
    return {
      text: `pdf\n${frame}\n${source.data}`,
      tokens: pages * PDF_PAGE_TOKENS + countTokens(frame),
    };
  }
  if (source.type === 'text') return { text: `${frame}\n${source.data}` };
  if (source.type === 'content') {
    return { text: `${frame}\n${typeof source.content === 'string' ? source.content : ''}` };
  }
  return {
    text: `pdf\n${frame}\n${source.type === 'url' ? source.url : source.file_id}`,
    tokens: PDF_PAGE_TOKENS + countTokens(frame),
  };
}
