import { countTokens, truncateTokens } from '../platform/tokens.js';
import type { Reply } from './default-reply.js';

export type FinishReason = 'end' | 'stop_sequence' | 'max_tokens';

export interface Finished {
  text: string;
  tokens: number;
  reason: FinishReason;
  /** The stop sequence that ended the text, when `reason` is `stop_sequence`. */
  stopSequence: string | null;
}

/**
 * Ends a generated text the way a model would: at the earliest stop sequence (excluded from the
 * text), or at `maxTokens` if that limit comes first.
 */
export function finishText(full: Reply, stops: readonly string[], maxTokens?: number): Finished {
  let cut = -1;
  let stopSequence: string | null = null;
  for (const stop of stops) {
    const at = full.text.indexOf(stop);
    if (at !== -1 && (cut === -1 || at < cut)) {
      cut = at;
      stopSequence = stop;
    }
  }
  const text = cut === -1 ? full.text : full.text.slice(0, cut);
  const tokens = cut === -1 ? full.tokens : countTokens(text);
  if (maxTokens !== undefined && tokens > maxTokens) {
    const limited = truncateTokens(text, maxTokens);
    return { text: limited.text, tokens: limited.tokens, reason: 'max_tokens', stopSequence: null };
  }
  return { text, tokens, reason: stopSequence === null ? 'end' : 'stop_sequence', stopSequence };
}
