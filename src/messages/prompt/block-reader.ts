import type { PathSegment } from '../../platform/errors.js';
import type { PromptBlock, Role } from '../../text/prompt-cache.js';
import { type CitedSource, citeDocument, citeSearchResult, MAX_CITED } from '../citations.js';
import type { CacheControl, DocumentBlock, ImageBlock, SearchResultBlock } from '../schemas.js';
import { type Breakpoint, ttlOf } from './cache-breakpoints.js';
import { readDocument } from './documents.js';
import { checkImageSides, type ImageSide, readImage } from './images.js';

/** Reads the prompt's blocks, counting media and checking it as upstream does. */
export class BlockReader {
  readonly blocks: PromptBlock[] = [];
  readonly marks: Breakpoint[] = [];
  images = 0;
  /** Blocks read now are checked but left out of the prompt (before a compaction block). */
  dropping = false;
  /** Image sides to check once the request's image count is known. */
  private readonly sides: ImageSide[] = [];
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
    const read = readImage(block, path);
    if (read.side) this.sides.push(read.side);
    this.add(
      { text: read.text, tokens: read.tokens, ...(opens ? { opens } : {}) },
      path,
      block.cache_control,
    );
  }

  document(block: DocumentBlock, path: PathSegment[], opens?: Role) {
    const index = this.documents++;
    if (block.citations?.enabled === true) this.cite(() => citeDocument(block, index));
    const { text, tokens } = readDocument(block, path);
    const { source } = block;
    if (source.type === 'content' && typeof source.content !== 'string') {
      source.content.forEach((item, k) => {
        const at = [...path, 'source', 'content', k];
        if (item.type === 'text') this.text(item.text, at, item.cache_control);
        else this.image(item, at);
      });
    }
    this.add(
      { text, ...(tokens === undefined ? {} : { tokens }), ...(opens ? { opens } : {}) },
      path,
      block.cache_control,
    );
  }

  /** The image limits that depend on how many images the request holds. */
  checkImages(): void {
    checkImageSides(this.images, this.sides);
  }
}
