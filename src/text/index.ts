import type { Feature } from '../platform/features.js';
import type { RuleBook } from '../state/rule-book.js';
import type { Sequences } from '../state/sequences.js';
import { ContentFilter } from './content-filter.js';
import { type Fixtures, loadFixtures } from './fixtures.js';
import {
  PROMPT_CACHE_MAX_ENTRIES,
  PromptCache,
  type PromptCacheOptions,
  type PromptCacheStore,
} from './prompt-cache.js';
import { Replies, type StubInput } from './replies.js';

export interface TextSettings {
  fixturesDir: string;
  promptCacheTtlS: number;
  promptCacheMinTokens: number;
}

/**
 * What chat and messages share: scripted replies and blocked terms from FIXTURES_DIR, and the
 * prompt cache. Throws FixtureError when FIXTURES_DIR holds invalid data.
 */
export interface TextEngine {
  replies: Replies;
  contentFilter: ContentFilter;
  promptCache: PromptCacheStore;
  /** The active fixtures. */
  fixtures(): Fixtures;
  /** Reads FIXTURES_DIR again; on an error the active fixtures stay and the error is thrown. */
  reloadFixtures(keepSequences?: boolean): Fixtures | Promise<Fixtures>;
  stores: Feature[];
}

/** The shared store's parts of the text engine (STATE_URL); memory ones when absent. */
export interface SharedText {
  stubs: RuleBook<StubInput>;
  sequences: Sequences;
  promptCache(options: PromptCacheOptions): PromptCacheStore;
}

export function createText(
  settings: TextSettings,
  hashKey: (key: string) => string,
  shared?: SharedText,
): TextEngine {
  const loaded = loadFixtures(settings.fixturesDir);
  const replies = new Replies(loaded, hashKey, shared?.stubs, shared?.sequences);
  const contentFilter = new ContentFilter(loaded.blockedTerms);
  const options = {
    ttlS: settings.promptCacheTtlS,
    minTokens: settings.promptCacheMinTokens,
    maxEntries: PROMPT_CACHE_MAX_ENTRIES,
  };
  const promptCache = shared ? shared.promptCache(options) : new PromptCache(options);
  return {
    replies,
    contentFilter,
    promptCache,
    fixtures: () => ({ rules: replies.rules, blockedTerms: contentFilter.terms }),
    reloadFixtures(keepSequences = false) {
      const next = loadFixtures(settings.fixturesDir);
      const loaded = replies.load(next, keepSequences);
      contentFilter.load(next.blockedTerms);
      return loaded ? loaded.then(() => next) : next;
    },
    stores: [promptCache, replies],
  };
}
