import { DEFAULT_SESSION, keyOfOwner } from '../harness/session.js';
import type { Feature } from '../platform/features.js';
import { trimOldest } from '../platform/lru.js';
import { PrefixScanner } from '../platform/prefix-hash.js';
import { countTokens } from '../platform/tokens.js';

/**
 * Prompt-cache accounting. The cache holds, per prefix, only a hash key, its expiry and its
 * TTL: never the text. Keys are scoped by API key and model, so a different key, model or
 * leading "project label" never shares an entry.
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching
 * @see https://platform.openai.com/docs/guides/prompt-caching
 */

export type CacheTtl = '5m' | '1h';

/** One block of a prompt, in prefix order (tools, then system blocks, then messages). */
export interface PromptBlock {
  /** What identifies the block in the prefix: its text, or the bytes of an image. */
  text: string;
  /** Its token cost when that is not the count of `text` (images, documents). */
  tokens?: number;
  /** Set on the first block of a message: its framing tokens come before the text. */
  opens?: Role;
  /** A cache breakpoint (`cache_control`), with its TTL. */
  cache?: CacheTtl;
}

/** A prompt read for the cache: its tokens and prefix keys, before the cache is touched. */
export interface PromptScan {
  total: number;
  breakpoints: number[];
  /** Tokens up to and including each block, up to the last breakpoint. */
  prefix: number[];
  /** The prefix key of each block the cache may read or write. */
  keys: Map<number, string>;
  blocks: readonly PromptBlock[];
  session: string;
  scope: string;
}

export interface CacheUsage {
  /** Every input token: input + creation + read. */
  total: number;
  input: number;
  read: number;
  creation: number;
  creation5m: number;
  creation1h: number;
}

/** Prompt-cache entries kept at most (least recently used go first); ~100 bytes each. */
export const PROMPT_CACHE_MAX_ENTRIES = 50_000;

/**
 * The message boundaries one chat request writes, at most: its first and its last (a shared
 * long system prompt, a growing conversation), so one request of 80 000 short messages costs
 * the cache, and everyone else's entries in it, no more than an ordinary one.
 */
export const CHAT_BOUNDARIES_FIRST = 16;
export const CHAT_BOUNDARIES_LAST = 48;

/** Chat completions cache prefixes of at least this many tokens, as upstream OpenAI does. */
export const CHAT_CACHE_MIN_TOKENS = 1024;

/** Tokens of a message's role framing (docs/token-counter.md). */
export const TOKENS_PER_MESSAGE = 3;
/** From each breakpoint the cache looks back this many blocks for an earlier hit. */
export const LOOKBACK_BLOCKS = 20;
export const MAX_BREAKPOINTS = 4;
export const HOUR_MS = 3_600_000;
const ROLE_MARK = { user: 0x75736572, assistant: 0x61737374, system: 0x73797374 } as const;

/** Who a turn is from: a messages turn may be a mid-conversation system message. */
export type Role = 'user' | 'assistant' | 'system';

export function countPrompt(blocks: readonly PromptBlock[]): number {
  let total = 0;
  for (const block of blocks) {
    if (block.opens) total += TOKENS_PER_MESSAGE;
    total += block.tokens ?? countTokens(block.text);
  }
  return total;
}

/**
 * One chat message as the cache sees it: the fixed tokens of its framing and media, the texts
 * whose tokens are counted, and the media bytes that identify it without being counted.
 */
export interface ChatPromptPart {
  framing: number;
  texts: string[];
  blobs?: string[];
}

interface Entry {
  expiresAt: number;
  ttlMs: number;
  /** The session that wrote it (docs/control.md "Sessions"). */
  session: string;
  /** Whose it is: the key owner and model (`owner\nmodel`). */
  scope: string;
  /** The tokens of the prefix it stands for. */
  tokens: number;
  createdAt: number;
  /** Times it was read. */
  reads: number;
}

export interface PromptCacheOptions {
  ttlS: number;
  minTokens: number;
  maxEntries: number;
}

/** A cache entry as `GET /_emulator/cache` shows it. */
export interface CacheEntryView {
  /** The start of the entry's prefix hash. */
  id: string;
  session: string;
  key_hash: string;
  model: string;
  /** Tokens of the prefix it stands for. */
  tokens: number;
  /** Times it was read (each read renews it). */
  reads: number;
  created_at: number;
  expires_at: number;
  ttl_ms: number;
  time_left_ms: number;
}

/**
 * The prompt cache as the routes use it: the memory one (`PromptCache`) answers at once, the
 * shared one (`state/prompt-cache.ts`) from the store, each lookup and write in one step.
 */
export interface PromptCacheStore extends Feature {
  onLookup: ((group: 'messages' | 'chat', hit: boolean) => void) | undefined;
  count(): number | Promise<number>;
  list(now: number, limit: number, session?: string): CacheEntryView[] | Promise<CacheEntryView[]>;
  scan(scope: string, blocks: readonly PromptBlock[], session?: string): PromptScan;
  commit(scan: PromptScan, now: number): CacheUsage | Promise<CacheUsage>;
  accountChat(
    scope: string,
    messages: ReadonlyArray<ChatPromptPart>,
    now: number,
    session?: string,
  ): number | Promise<number>;
}

export class PromptCache implements PromptCacheStore {
  readonly name = 'cache';
  /** Least recently used first. */
  private readonly entries = new Map<string, Entry>();
  /** Told of each prompt that could read the cache, and whether it did (metrics). */
  onLookup: ((group: 'messages' | 'chat', hit: boolean) => void) | undefined;

  constructor(private readonly options: PromptCacheOptions) {}

  get size(): number {
    return this.entries.size;
  }

  /** Entries held (live or not yet swept). */
  count(): number {
    return this.entries.size;
  }

  reset(): void {
    this.entries.clear();
  }

  /**
   * Live entries, most recently used first (at most `limit`), for the control surface: never
   * the text, only the key's fingerprint, the model and the counts.
   */
  list(now: number, limit: number, session?: string): CacheEntryView[] {
    const out: CacheEntryView[] = [];
    const all = [...this.entries];
    for (let i = all.length - 1; i >= 0 && out.length < limit; i--) {
      const [key, entry] = all[i] as [string, Entry];
      if (entry.expiresAt <= now || (session !== undefined && entry.session !== session)) continue;
      const newline = entry.scope.indexOf('\n');
      out.push({
        id: key.slice(0, 16),
        session: entry.session,
        key_hash: keyOfOwner(entry.scope.slice(0, newline)).slice(0, 12),
        model: entry.scope.slice(newline + 1),
        tokens: entry.tokens,
        reads: entry.reads,
        created_at: entry.createdAt,
        expires_at: entry.expiresAt,
        ttl_ms: entry.ttlMs,
        time_left_ms: entry.expiresAt - now,
      });
    }
    return out;
  }

  resetSession(session: string): void {
    for (const [key, entry] of this.entries)
      if (entry.session === session) this.entries.delete(key);
  }

  /**
   * Reads a messages prompt once, left to right: every input token, and the key of each prefix
   * that could be read or written. Pure: the cache is not touched until `commit`.
   */
  scan(scope: string, blocks: readonly PromptBlock[], session = DEFAULT_SESSION): PromptScan {
    const breakpoints: number[] = [];
    blocks.forEach((block, i) => {
      if (block.cache) breakpoints.push(i);
    });
    const last = breakpoints.at(-1);
    if (last === undefined)
      return {
        total: countPrompt(blocks),
        breakpoints,
        prefix: [],
        keys: new Map(),
        blocks,
        session,
        scope,
      };
    const candidates = new Set<number>();
    for (const b of breakpoints) {
      for (let j = Math.max(0, b - LOOKBACK_BLOCKS + 1); j <= b; j++) candidates.add(j);
    }
    // One pass up to the last breakpoint: tokens and prefix keys together.
    const scanner = new PrefixScanner(scope);
    const prefix: number[] = [];
    const keys = new Map<number, string>();
    for (let i = 0; i <= last; i++) {
      const block = blocks[i] as PromptBlock;
      if (block.opens) scanner.frame(ROLE_MARK[block.opens], TOKENS_PER_MESSAGE);
      if (block.tokens === undefined) scanner.text(block.text);
      else scanner.blob(block.text, block.tokens);
      prefix[i] = scanner.tokens;
      if (candidates.has(i)) keys.set(i, scanner.key());
    }
    const total = scanner.tokens + countPrompt(blocks.slice(last + 1));
    return { total, breakpoints, prefix, keys, blocks, session, scope };
  }

  /**
   * Accounts a scanned request and updates the cache: reads the longest live prefix ending at
   * a breakpoint (or up to 20 blocks before one), writes every cacheable breakpoint after it;
   * the input tokens are what lies after.
   */
  commit(scan: PromptScan, now: number): CacheUsage {
    const { keys } = scan;
    let readAt = -1;
    for (const j of [...keys.keys()].sort((x, y) => y - x)) {
      if (this.hit(keys.get(j) as string, now)) {
        readAt = j;
        break;
      }
    }
    const planned = planWrites(scan, readAt, this.options);
    for (const write of planned.writes) {
      this.put(write.key, write.ttlMs, now, scan.session, scan.scope, write.tokens);
    }
    if (keys.size > 0) this.onLookup?.('messages', readAt !== -1);
    return planned.usage;
  }

  /** `scan` then `commit`: accounts one messages request and updates the cache. */
  account(
    scope: string,
    blocks: readonly PromptBlock[],
    now: number,
    session = DEFAULT_SESSION,
  ): CacheUsage {
    return this.commit(this.scan(scope, blocks, session), now);
  }

  /**
   * Automatic caching for chat completions (upstream OpenAI): a prefix of whole messages seen
   * before is reported cached, rounded down to 128 tokens, once it reaches the minimum.
   * `messages` are the prompt's parts in order, each with its framing tokens; returns the
   * cached tokens.
   */
  accountChat(
    scope: string,
    messages: ReadonlyArray<ChatPromptPart>,
    now: number,
    session = DEFAULT_SESSION,
  ): number {
    const boundaries = chatBoundaries(scope, messages);
    let cached = 0;
    for (let i = boundaries.length - 1; i >= 0; i--) {
      const boundary = boundaries[i] as ChatBoundary;
      if (this.hit(boundary.key, now)) {
        cached = Math.floor(boundary.tokens / 128) * 128;
        break;
      }
    }
    if (boundaries.length > 0) this.onLookup?.('chat', cached > 0);
    for (const boundary of chatWrites(boundaries)) {
      if (boundary.tokens > cached) {
        this.put(boundary.key, this.options.ttlS * 1000, now, session, scope, boundary.tokens);
      }
    }
    return cached;
  }

  /** A live entry is a hit, and a hit renews its lifetime. */
  private hit(key: string, now: number): boolean {
    const entry = this.entries.get(key);
    if (!entry) return false;
    this.entries.delete(key);
    if (entry.expiresAt <= now) return false;
    entry.expiresAt = now + entry.ttlMs;
    entry.reads++;
    this.entries.set(key, entry);
    return true;
  }

  private put(
    key: string,
    ttlMs: number,
    now: number,
    session: string,
    scope: string,
    tokens: number,
  ): void {
    this.entries.delete(key);
    this.entries.set(key, {
      expiresAt: now + ttlMs,
      ttlMs,
      session,
      scope,
      tokens,
      createdAt: now,
      reads: 0,
    });
    trimOldest(this.entries, this.options.maxEntries);
  }
}

/** One cacheable write of a messages prompt: a breakpoint's prefix key, tokens and TTL. */
export interface CacheWrite {
  /** The block of the breakpoint. */
  at: number;
  key: string;
  tokens: number;
  ttlMs: number;
}

/**
 * What a messages request writes and how it is accounted, once the cache said what it read
 * (`readAt`: the block of the longest live prefix, -1 for none): every cacheable breakpoint
 * after it is written; the input tokens are what lies after the last.
 */
export function planWrites(
  scan: PromptScan,
  readAt: number,
  options: { minTokens: number; ttlS: number },
): { usage: CacheUsage; writes: CacheWrite[] } {
  const { total, breakpoints, prefix, keys, blocks } = scan;
  const read = readAt === -1 ? 0 : (prefix[readAt] as number);
  let creation = 0;
  let creation5m = 0;
  let creation1h = 0;
  let covered = read;
  const writes: CacheWrite[] = [];
  for (const b of breakpoints) {
    const tokens = prefix[b] as number;
    if (b <= readAt || tokens < options.minTokens) continue;
    const ttl = (blocks[b] as PromptBlock).cache as CacheTtl;
    const written = tokens - covered;
    creation += written;
    if (ttl === '1h') creation1h += written;
    else creation5m += written;
    covered = tokens;
    writes.push({
      at: b,
      key: keys.get(b) as string,
      tokens,
      ttlMs: ttl === '1h' ? HOUR_MS : options.ttlS * 1000,
    });
  }
  return {
    usage: { total, input: total - read - creation, read, creation, creation5m, creation1h },
    writes,
  };
}

/** Every cacheable breakpoint of a messages prompt, whatever is read (a shared cache decides). */
export function possibleWrites(
  scan: PromptScan,
  options: { minTokens: number; ttlS: number },
): CacheWrite[] {
  return planWrites(scan, -1, options).writes;
}

/** A chat prompt's message boundary past the minimum: its tokens and prefix key. */
export interface ChatBoundary {
  tokens: number;
  key: string;
}

/** The message boundaries of a chat prompt that could be cached, in order. */
export function chatBoundaries(
  scope: string,
  messages: ReadonlyArray<ChatPromptPart>,
): ChatBoundary[] {
  const scanner = new PrefixScanner(scope);
  const boundaries: ChatBoundary[] = [];
  for (const message of messages) {
    scanner.frame(0xc4a7, message.framing);
    for (const text of message.texts) scanner.text(text);
    for (const blob of message.blobs ?? []) scanner.blob(blob, 0);
    if (scanner.tokens >= CHAT_CACHE_MIN_TOKENS) {
      boundaries.push({ tokens: scanner.tokens, key: scanner.key() });
    }
  }
  return boundaries;
}

/** The boundaries a chat request writes: its first and last ones (see CHAT_BOUNDARIES_FIRST). */
export const chatWrites = (boundaries: ChatBoundary[]): ChatBoundary[] =>
  boundaries.length > CHAT_BOUNDARIES_FIRST + CHAT_BOUNDARIES_LAST
    ? [...boundaries.slice(0, CHAT_BOUNDARIES_FIRST), ...boundaries.slice(-CHAT_BOUNDARIES_LAST)]
    : boundaries;
