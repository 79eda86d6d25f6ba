import { fieldError, type PathSegment } from '../../platform/errors.js';
import { type CacheTtl, MAX_BREAKPOINTS, type PromptBlock } from '../../text/prompt-cache.js';
import type { CacheControl } from '../schemas.js';

export const ttlOf = (cache: CacheControl | null | undefined): CacheTtl | undefined =>
  cache ? (cache.ttl ?? '5m') : undefined;

export interface Breakpoint {
  path: PathSegment[];
  ttl: CacheTtl;
}

/**
 * At most 4 breakpoints, a top-level `cache_control` (automatic caching) counted with the
 * blocks', and a "1h" one may not follow a "5m" one.
 */
export function checkBreakpoints(marks: readonly Breakpoint[], automatic: boolean): void {
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
export function automaticBreakpoint(blocks: PromptBlock[], ttl: CacheTtl): void {
  const last = blocks[blocks.length - 1];
  if (last && last.cache === undefined) last.cache = ttl;
}
