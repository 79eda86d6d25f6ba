import type { Feature } from '../platform/features.js';

/** Go-style duration text, as OpenAI's `x-ratelimit-reset-*` headers carry it: `12ms`, `1.5s`, `6m0s`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.max(0, Math.round(ms))}ms`;
  const seconds = Math.round(ms) / 1000;
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  return `${minutes}m${Math.round(seconds - minutes * 60)}s`;
}

export interface RateDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Until the window starts over. */
  resetMs: number;
}

export const WINDOW_MS = 60_000;

/** What the request hooks ask of a rate limiter (the memory one below, or a shared one). */
export interface RateLimiter {
  hit(owner: string, now: number): RateDecision | Promise<RateDecision>;
}
/** Keys tracked at most; when there are more, the oldest windows start over. */
const MAX_WINDOWS = 10_000;

/** Requests per minute per API key: a fixed one-minute window from the key's first request. */
export class MemoryRateLimiter implements RateLimiter, Feature {
  readonly name = 'limits';
  private readonly windows = new Map<string, { start: number; count: number }>();

  constructor(private readonly rpm: number) {}

  hit(owner: string, now: number): RateDecision {
    let window = this.windows.get(owner);
    if (!window || now - window.start >= WINDOW_MS) {
      if (!window && this.windows.size >= MAX_WINDOWS) this.prune(now);
      window = { start: now, count: 0 };
      this.windows.set(owner, window);
    }
    const allowed = window.count < this.rpm;
    if (allowed) window.count++;
    return {
      allowed,
      limit: this.rpm,
      remaining: this.rpm - window.count,
      resetMs: window.start + WINDOW_MS - now,
    };
  }

  reset(): void {
    this.windows.clear();
  }

  /** Forgets finished windows, then, if there are still too many, the oldest ones. */
  private prune(now: number): void {
    for (const [owner, window] of this.windows) {
      if (now - window.start >= WINDOW_MS) this.windows.delete(owner);
    }
    for (const owner of this.windows.keys()) {
      if (this.windows.size < MAX_WINDOWS) break;
      this.windows.delete(owner);
    }
  }
}
