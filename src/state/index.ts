import type { FaultRuleInput } from '../harness/faults.js';
import { MAX_FAULT_BYTES, MAX_FAULT_RULES } from '../harness/faults.js';
import type { Clock, SetTimer } from '../platform/clock.js';
import type { Feature } from '../platform/features.js';
import type { PromptCacheOptions } from '../text/prompt-cache.js';
import { MAX_STUB_BYTES, MAX_STUBS, type StubInput } from '../text/replies.js';
import type { CallbackGuard } from '../video/callback-guard.js';
import type { CallbackOptions } from '../video/callbacks.js';
import type { VideoService } from '../video/service.js';
import { SharedCallbacks } from './callbacks.js';
import { Epoch, SharedClock } from './epoch.js';
import { RedisJournalLog } from './journal-log.js';
import { RedisPromptCache } from './prompt-cache.js';
import { RedisRateLimiter } from './rate-limit.js';
import { connectState, type StateStore } from './redis.js';
import { RedisRuleBook } from './rule-book.js';
import { RedisSequences } from './sequences.js';
import { RedisStatsStore } from './stats.js';
import { RedisTasks } from './tasks.js';

/** Sequence counters kept at most in the shared store (rule and session pairs). */
export const MAX_SEQUENCE_COUNTS = 100_000;

/**
 * Everything the emulator keeps in the shared store (docs/replicas.md), one
 * store per feature, each in the feature's own words; the app builds the memory ones instead
 * when STATE_URL is unset.
 */
export interface SharedState {
  store: StateStore;
  epoch: Epoch;
  clock: SharedClock;
  /** What each request waits for first: the clock offset and the rules as they are now. */
  begin(): Promise<void> | undefined;
  faults: RedisRuleBook<FaultRuleInput>;
  stubs: RedisRuleBook<StubInput>;
  sequences: RedisSequences;
  journalLog(limit: number): RedisJournalLog;
  rateLimiter(rpm: number): RedisRateLimiter;
  promptCache(options: PromptCacheOptions): RedisPromptCache;
  tasks(maxTasks: number): RedisTasks;
  /** The traffic stats of every replica; a lost batch is told to `onError`. */
  stats(onError: (err: unknown) => void): RedisStatsStore;
  callbacks(
    guard: CallbackGuard,
    options: CallbackOptions,
    setTimer: SetTimer,
    service: () => VideoService,
  ): SharedCallbacks;
  /** The clock's reset, for `/_emulator/reset` (last, after the stores). */
  clockFeature: Feature;
  close(): Promise<void>;
}

export interface SharedSettings {
  stateUrl: string;
  statePrefix: string;
  stateTimeoutMs: number;
}

/** Connects to STATE_URL (without waiting: the store may come later) and builds its stores. */
export async function openSharedState(settings: SharedSettings, base: Clock): Promise<SharedState> {
  const store = await connectState(
    settings.stateUrl,
    settings.statePrefix,
    settings.stateTimeoutMs,
  );
  const bull = await import('bullmq');
  const epoch = new Epoch(store);
  // Real time as the injected clock tells it; the store's offset is added to it.
  const clock = new SharedClock(store, epoch, base);
  const faults = new RedisRuleBook<FaultRuleInput>(
    store,
    'faults',
    { maxCount: MAX_FAULT_RULES, maxBytes: MAX_FAULT_BYTES },
    epoch,
  );
  const stubs = new RedisRuleBook<StubInput>(
    store,
    'stubs',
    { maxCount: MAX_STUBS, maxBytes: MAX_STUB_BYTES },
    epoch,
  );
  return {
    store,
    epoch,
    clock,
    begin: () => epoch.sync(),
    faults,
    stubs,
    sequences: new RedisSequences(store, MAX_SEQUENCE_COUNTS),
    journalLog: (limit) => new RedisJournalLog(store, limit),
    rateLimiter: (rpm) => new RedisRateLimiter(store, rpm),
    promptCache: (options) => new RedisPromptCache(store, options),
    tasks: (maxTasks) => new RedisTasks(store, maxTasks),
    stats: (onError) => new RedisStatsStore(store, onError),
    callbacks: (guard, options, setTimer, service) =>
      new SharedCallbacks(
        bull,
        store,
        epoch,
        clock,
        setTimer,
        guard,
        options,
        (task, at) => service().callbackBody(task, at),
        (id) => service().held(id),
      ),
    clockFeature: { name: 'clock', reset: () => clock.reset() },
    close: () => store.close(),
  };
}
