import { decodeBase64, type ImageInfo, inspectImage } from '../platform/image.js';

/**
 * Media in prompts, as both text APIs count it: images by their pixels (each API has its own
 * formula), PDFs by their pages.
 */

/** What one PDF page costs: its text and its page image (upstream: 1,500 to 3,000). */
export const PDF_PAGE_TOKENS = 2000;
export const PDF_MAX_PAGES = 100;

const PDF_MAGIC = Buffer.from('%PDF-');
/** A page object: `/Type /Page`, not `/Type /Pages`. */
const PAGE_OBJECT = /\/Type\s*\/Page(?![A-Za-z])/g;

/** Pages of a PDF, counted from the page objects it shows (at least one); undefined if not a PDF. */
export function pdfPages(bytes: Buffer): number | undefined {
  if (bytes.length < PDF_MAGIC.length || !bytes.subarray(0, PDF_MAGIC.length).equals(PDF_MAGIC)) {
    return undefined;
  }
  return Math.max(1, bytes.toString('latin1').match(PAGE_OBJECT)?.length ?? 0);
}

export interface DecodedImage extends ImageInfo {
  bytes: number;
}

/** A Base64 image's format, size and byte count, or why it is not one. */
export function decodeImage(base64: string): DecodedImage | 'not-base64' | 'not-image' {
  const bytes = decodeBase64(base64);
  if (!bytes) return 'not-base64';
  const info = inspectImage(bytes);
  return info ? { ...info, bytes: bytes.length } : 'not-image';
}

/** `data:<media type>;base64,<data>` split, or undefined. */
export function parseDataUrl(url: string): { mediaType: string; data: string } | undefined {
  const match = /^data:([\w.+-]+\/[\w.+-]+);base64,(.*)$/s.exec(url);
  return match ? { mediaType: match[1] as string, data: match[2] as string } : undefined;
}
