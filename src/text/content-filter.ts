import type { BlockedTerm } from './fixtures.js';

/**
 * Azure-style content filtering for chat completions: blocked terms (fixture data) found in a
 * prompt or a reply, case-insensitively, as one compiled pattern.
 * @see https://learn.microsoft.com/en-us/azure/ai-foundry/openai/concepts/content-filter
 */
export class ContentFilter {
  private pattern: RegExp | undefined;
  private byTerm = new Map<string, BlockedTerm>();
  terms: BlockedTerm[] = [];

  constructor(terms: BlockedTerm[]) {
    this.load(terms);
  }

  load(terms: BlockedTerm[]): void {
    this.terms = terms;
    this.byTerm = new Map(terms.map((t) => [t.term.toLowerCase(), t]));
    const escaped = terms.map((t) => t.term.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'));
    this.pattern = escaped.length > 0 ? new RegExp(escaped.join('|'), 'i') : undefined;
  }

  /** The first blocked term in `text`, and where it starts. */
  find(text: string): { term: BlockedTerm; at: number } | undefined {
    if (!this.pattern) return undefined;
    const found = this.pattern.exec(text);
    if (!found) return undefined;
    return { term: this.byTerm.get(found[0].toLowerCase()) as BlockedTerm, at: found.index };
  }
}
