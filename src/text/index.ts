import type { Feature } from '../platform/features.js';
import { ContentFilter } from './content-filter.js';
import { type Fixtures, loadFixtures } from './fixtures.js';
import { PROMPT_CACHE_MAX_ENTRIES, PromptCache } from './prompt-cache.js';
import { Replies } from './replies.js';

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
  promptCache: PromptCache;
  /** The active fixtures. */
  fixtures(): Fixtures;
  /** Reads FIXTURES_DIR again; on an error the active fixtures stay and the error is thrown. */
  reloadFixtures(): Fixtures;
  stores: Feature[];
}

export function createText(settings: TextSettings, hashKey: (key: string) => string): TextEngine {
  const loaded = loadFixtures(settings.fixturesDir);
  const replies = new Replies(loaded, hashKey);
  const contentFilter = new ContentFilter(loaded.blockedTerms);
  const promptCache = new PromptCache({
    ttlS: settings.promptCacheTtlS,
    minTokens: settings.promptCacheMinTokens,
    maxEntries: PROMPT_CACHE_MAX_ENTRIES,
  });
  return {
    replies,
    contentFilter,
    promptCache,
    fixtures: () => ({ rules: replies.rules, blockedTerms: contentFilter.terms }),
    reloadFixtures() {
      const next = loadFixtures(settings.fixturesDir);
      replies.load(next);
      contentFilter.load(next.blockedTerms);
      return next;
    },
    stores: [promptCache, replies],
  };
}
