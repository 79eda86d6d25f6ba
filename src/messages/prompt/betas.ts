import type { IncomingHttpHeaders } from 'node:http';

export const NO_BETAS: ReadonlySet<string> = new Set();

/**
 * The betas a request names, in `msgapi-beta` (the gateway's) or `anthropic-beta` (which the
 * SDK's `betas` option sends), comma-separated (Node joins a repeated header with commas).
 */
export function betasOf(headers: IncomingHttpHeaders): ReadonlySet<string> {
  const gateway = headers['msgapi-beta'];
  const anthropic = headers['anthropic-beta'];
  if (gateway === undefined && anthropic === undefined) return NO_BETAS;
  const listed = `${gateway ?? ''},${anthropic ?? ''}`;
  return new Set(
    listed
      .split(',')
      .map((name) => name.trim())
      .filter(Boolean),
  );
}

/** With tools, thinking may span the turn: its budget may then exceed `max_tokens`. */
export const INTERLEAVED_THINKING = 'interleaved-thinking-2025-05-14';

/** Context editing's beta. */
export const CONTEXT_MANAGEMENT = 'context-management-2025-06-27';

/** Compaction's beta: it takes `context_management` too, with `compact_20260112`. */
export const COMPACT = 'compact-2026-01-12';
