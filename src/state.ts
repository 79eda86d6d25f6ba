import type { Config } from './config.js';
import { Keyring } from './platform/auth.js';
import type { Deps } from './platform/clock.js';
import { Faults } from './platform/faults.js';
import { Journal } from './platform/journal.js';
import { RateLimiter } from './platform/rate-limit.js';
import { Scheduler } from './platform/scheduler.js';
import { ContentFilter } from './text/content-filter.js';
import { type Fixtures, loadFixtures } from './text/fixtures.js';
import { PromptCache } from './text/prompt-cache.js';
import { Replies } from './text/reply-rules.js';
import { Callbacks } from './video/callbacks.js';
import { VideoService } from './video/service.js';

/** Prompt-cache entries kept at most (least recently used go first); ~100 bytes each. */
export const PROMPT_CACHE_MAX_ENTRIES = 50_000;

/** Everything the emulator remembers, made fresh by each buildApp. */
export interface EmulatorState {
  config: Config;
  deps: Deps;
  keyring: Keyring;
  journal: Journal;
  scheduler: Scheduler;
  callbacks: Callbacks;
  video: VideoService;
  promptCache: PromptCache;
  replies: Replies;
  contentFilter: ContentFilter;
  faults: Faults;
  rateLimiter: RateLimiter | undefined;
  /** Reads FIXTURES_DIR again; on an error the active fixtures stay and the error is thrown. */
  reloadFixtures(): Fixtures;
  /** Empties every store and puts the clock back to real time. */
  reset(): void;
  close(): void;
}

/** Builds every store. Throws FixtureError when FIXTURES_DIR holds invalid data. */
export function createState(config: Config, deps: Deps): EmulatorState {
  const fixtures = loadFixtures(config.fixturesDir);
  const replies = new Replies(fixtures);
  const contentFilter = new ContentFilter(fixtures.blockedTerms);
  const faults = new Faults();
  const rateLimiter = config.rateLimitRpm ? new RateLimiter(config.rateLimitRpm) : undefined;
  const journal = new Journal(config.journalLimit);
  const scheduler = new Scheduler(deps.clock, deps.setTimer);
  const callbacks = new Callbacks(deps.clock, scheduler);
  const video = new VideoService(config, deps, scheduler, callbacks);
  const promptCache = new PromptCache(deps.clock, {
    ttlS: config.promptCacheTtlS,
    minTokens: config.promptCacheMinTokens,
    maxEntries: PROMPT_CACHE_MAX_ENTRIES,
  });
  return {
    config,
    deps,
    keyring: new Keyring(config.apiKeys),
    journal,
    scheduler,
    callbacks,
    video,
    promptCache,
    replies,
    contentFilter,
    faults,
    rateLimiter,
    reloadFixtures() {
      const next = loadFixtures(config.fixturesDir);
      replies.load(next);
      contentFilter.load(next.blockedTerms);
      return next;
    },
    reset() {
      promptCache.clear();
      faults.clear();
      rateLimiter?.clear();
      scheduler.clear();
      journal.clear();
      callbacks.clear();
      video.clear();
      deps.clock.reset();
    },
    close() {
      scheduler.close();
      callbacks.clear();
    },
  };
}
