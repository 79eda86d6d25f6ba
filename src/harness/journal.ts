import type { Feature } from '../platform/features.js';
import type { GroupName } from '../platform/group.js';
import { after, type Maybe } from '../platform/maybe.js';
import { pathOf, REDACTED, type StreamTimeline } from '../platform/request.js';
import {
  isSecretName,
  readEscapes,
  redactedCut,
  redactUrl,
  redactUrlsInText,
  withUrlsRedacted,
} from '../platform/secrets.js';
import {
  type CompiledMatch,
  compileMatch,
  type MatchTarget,
  matchWork,
  mismatches,
  parseJsonPath,
  type RequestMatch,
  selectPath,
} from './match.js';

/** Bodies longer than this are kept as a truncated string instead of parsed JSON. */
export const JOURNAL_BODY_LIMIT = 8192;

/**
 * One finished request, as its group hands it over. Every field is given (undefined when it
 * does not apply), so that every entry has the same shape.
 */
export interface JournalInput {
  id: string;
  group: GroupName;
  session: string;
  /** The key's fingerprint ('' when the request was refused before its key was read). */
  keyHash: string;
  model: string | undefined;
  /** Where the answer came from (docs/record-replay.md "Record and replay"). */
  source: 'emulator' | 'upstream' | 'replay';
  at: number;
  method: string;
  url: string;
  status: number;
  durationMs: number;
  /** The request's own headers object; secret values are blanked in it when recorded. */
  headers: Headers;
  rawBody: string | undefined;
  /** The body's length when `rawBody` holds only its beginning (see journalBody). */
  bodyBytes?: number | undefined;
  /** What was answered: the JSON body, or the first bytes of an event stream as sent. */
  response: string | Buffer | undefined;
  /** The stream went on past what `response` holds. */
  responseTruncated: boolean;
  /** A stream's writes in time, kept apart from its bytes. */
  timeline?: StreamTimeline | undefined;
  /** A stream's answer not kept: its request carried a URL credential it may echo in pieces. */
  responseWithheld?: boolean;
  fault: string | undefined;
  /** A stream the client left (or that stalled or failed) before it ended. */
  aborted: boolean;
  /** Bytes a stream sent, when it was aborted. */
  bytesSent: number | undefined;
}

export interface StoredEntry
  extends Omit<JournalInput, 'rawBody' | 'bodyBytes' | 'responseTruncated'> {
  body: string | undefined;
  bodyBytes: number;
  /** A stream's first bytes stay bytes (they are decoded only when shown). */
  response: string | Buffer | undefined;
  responseBytes: number;
}

export interface JournalEntry {
  id: string;
  group: GroupName;
  session: string;
  key_hash: string | null;
  model: string | null;
  source: 'emulator' | 'upstream' | 'replay';
  at: number;
  method: string;
  url: string;
  status: number;
  duration_ms: number;
  headers: Record<string, string>;
  body: unknown;
  body_truncated: boolean;
  fault: string | null;
  aborted: boolean;
  bytes_sent: number | null;
}

type Headers = Record<string, string | string[] | undefined>;

/**
 * Blanks the secret headers of a finished request in place, so the journal can keep the object
 * without copying it and without ever holding a key.
 */
function redactInPlace(headers: Headers): Headers {
  for (const name in headers) {
    if (headers[name] !== undefined && isSecretName(name)) headers[name] = REDACTED;
  }
  return headers;
}

function flatten(headers: Headers): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value !== undefined) out[name] = typeof value === 'string' ? value : value.join(', ');
  }
  return out;
}

/**
 * The first JOURNAL_BODY_LIMIT characters of a large body, as a copy: a plain `slice` would be a
 * view that keeps the whole (up to 32 MB) body alive for as long as the entry lives.
 */
function preview(raw: string): string {
  return Buffer.from(raw.slice(0, JOURNAL_BODY_LIMIT), 'utf16le').toString('utf16le');
}

/**
 * An answer as the journal keeps it: whole up to JOURNAL_BODY_LIMIT (characters of a string,
 * bytes of bytes), else a copy of its beginning, so that the entry never holds a large answer.
 */
function firstOf(response: string | Buffer): string | Buffer {
  if (response.length <= JOURNAL_BODY_LIMIT) return response;
  return typeof response === 'string'
    ? preview(response)
    : Buffer.from(response.subarray(0, JOURNAL_BODY_LIMIT));
}

/**
 * An answer as the journal shows it: a whole JSON body parsed, else its text. An answer can echo
 * a URL of the request (an echo rule, a stub's template): its credentials are redacted as the
 * request's are, the text searched with its JSON escapes read (`us\u0001er:pw@` would end a
 * search of the raw text early), and the last URL of a cut answer, which may be cut in its
 * credentials, redacted whole. A text with nothing to redact is shown as it was.
 */
function shownAnswer(text: string, truncated: boolean): unknown {
  if (!truncated && text.startsWith('{')) {
    try {
      return withUrlsRedacted(JSON.parse(text));
    } catch {}
  }
  const read = readEscapes(text);
  const redacted = truncated ? redactedCut(read) : redactUrlsInText(read);
  return redacted === read ? text : redacted;
}

/** The journal filter (docs/control.md "Journal"): match fields, plus the status, session and time. */
export interface JournalFilter
  extends Pick<RequestMatch, 'group' | 'method' | 'path' | 'model' | 'key' | 'header' | 'body'> {
  status?: number;
  session?: string;
  /** Emulator time in epoch ms: entries received at or after it. */
  since?: number;
}

interface CompiledFilter {
  source: JournalFilter;
  match: CompiledMatch;
  status: number | undefined;
  session: string | undefined;
  since: number | undefined;
}

/** A field of a match that an entry does not meet. */
export interface Difference {
  field: string;
  expected: unknown;
  actual: unknown;
}

export interface NearMiss {
  request: JournalEntry;
  differences: Difference[];
}

export interface Verified {
  ok: boolean;
  matched: number;
  nearMisses: NearMiss[];
}

/** A stream's timeline as shown (times in ms from the request's arrival). */
export interface TimelineView {
  writes: Array<{ at_ms: number; frames: number }>;
  writes_dropped: number;
  frames: number;
  first_content_ms: number | null;
  cut: { kind: 'stream_error' | 'after_bytes'; at_ms: number } | null;
}

/** One entry with what was answered. */
export type JournalDetail = JournalEntry & {
  response: unknown;
  response_truncated: boolean;
  response_withheld: boolean;
  timeline: TimelineView | null;
};

/** A timeline as shown: each write with the frames it carried; the first content's time. */
function timelineView(t: StreamTimeline): TimelineView {
  const writes: TimelineView['writes'] = [];
  let before = 0;
  let firstContent: number | null = null;
  for (let i = 0; i < t.writes.length; i += 2) {
    const at = t.writes[i] as number;
    const upTo = t.writes[i + 1] as number;
    writes.push({ at_ms: at, frames: upTo - before });
    // The write that carried the first content frame (or the first with frames, without one).
    if (firstContent === null && upTo > (t.contentFrame ?? 0)) firstContent = at;
    before = upTo;
  }
  return {
    writes,
    writes_dropped: t.writesDropped,
    frames: t.frames,
    first_content_ms: firstContent,
    cut: t.cut ? { kind: t.cut.kind, at_ms: t.cut.atMs } : null,
  };
}

/** Near misses a failed verification lists. */
const NEAR_MISSES = 5;
/** Waits (`journal/wait`) held at once. */
export const MAX_JOURNAL_WAITS = 1000;
/** Live journal streams (`journal/stream`) at once. */
export const MAX_JOURNAL_WATCHERS = 100;

interface Waiter {
  filter: CompiledFilter;
  resolve(entry: JournalEntry | undefined): void;
}

/**
 * Where the journal's entries are kept: a ring buffer in memory, or a capped stream in the
 * shared store (state/journal-log.ts), oldest first either way.
 */
export interface JournalLog {
  /** Keeps an entry (the oldest goes past the limit). */
  append(entry: StoredEntry): void | Promise<void>;
  /** Every entry held, oldest first. */
  entries(): Iterable<StoredEntry> | Promise<Iterable<StoredEntry>>;
  /** Forgets every entry, or one session's (the others keep their order). */
  clear(session?: string): void | Promise<void>;
  /**
   * A shared log: calls `arrived` with each entry any process appends from now on, while
   * `follow` is on (waits and live journals need it); returns how to stop. A memory log has
   * none: its journal tells its own waits.
   */
  follow?(arrived: (entry: StoredEntry) => void): { stop: () => void; ready: Promise<void> };
  close?(): void;
}

/** The latest `limit` entries, in a ring buffer. */
export class MemoryJournalLog implements JournalLog {
  private entries_: Array<StoredEntry | undefined>;
  private next = 0;
  private count = 0;

  constructor(private readonly limit: number) {
    this.entries_ = new Array(limit);
  }

  append(entry: StoredEntry): void {
    this.entries_[this.next] = entry;
    this.next = (this.next + 1) % this.limit;
    this.count = Math.min(this.count + 1, this.limit);
  }

  *entries(): Generator<StoredEntry> {
    const start = (this.next - this.count + this.limit) % this.limit;
    for (let i = 0; i < this.count; i++)
      yield this.entries_[(start + i) % this.limit] as StoredEntry;
  }

  clear(session?: string): void {
    const kept =
      session === undefined ? [] : [...this.entries()].filter((e) => e.session !== session);
    this.entries_ = new Array(this.limit);
    this.next = 0;
    this.count = 0;
    for (const e of kept) this.append(e);
  }
}

/**
 * The latest `limit` gateway requests (the oldest go first), to list, filter, verify and wait
 * on; kept by a `JournalLog`.
 */
export class Journal implements Feature {
  readonly name = 'journal';
  private readonly waiters = new Set<Waiter>();
  /** Live journals: each one's listener, and how it is ended at shutdown. */
  private readonly watchers = new Map<(entry: JournalEntry) => void, () => void>();
  /** Shut down: a wait ends at once. */
  private closed = false;
  /** Following a shared log (while anyone waits or watches): how to stop, and since when. */
  private followed: { stop: () => void; ready: Promise<void> } | undefined;

  constructor(
    private readonly limit: number,
    private readonly hashKey: (key: string) => string,
    private readonly log: JournalLog = new MemoryJournalLog(Math.max(limit, 1)),
  ) {}

  /** Journals a finished request; in a shared log, the promise is kept once it is stored. */
  record(input: JournalInput): void | Promise<void> {
    if (this.limit === 0) return;
    const raw = input.rawBody;
    const response = input.response;
    const entry: StoredEntry = {
      id: input.id,
      group: input.group,
      session: input.session,
      keyHash: input.keyHash,
      model: input.model,
      source: input.source,
      at: input.at,
      method: input.method,
      url: redactUrl(input.url),
      status: input.status,
      durationMs: input.durationMs,
      headers: redactInPlace(input.headers),
      body: raw === undefined || raw.length <= JOURNAL_BODY_LIMIT ? raw : preview(raw),
      bodyBytes: input.bodyBytes ?? raw?.length ?? 0,
      response: response === undefined ? undefined : firstOf(response),
      // A cut stream counts as longer than the limit, so it reads as truncated.
      responseBytes: input.responseTruncated ? JOURNAL_BODY_LIMIT + 1 : (response?.length ?? 0),
      ...(input.timeline ? { timeline: input.timeline } : {}),
      fault: input.fault,
      ...(input.responseWithheld ? { responseWithheld: true } : {}),
      aborted: input.aborted,
      bytesSent: input.aborted ? (input.bytesSent ?? 0) : undefined,
    };
    const appended = this.log.append(entry);
    if (appended instanceof Promise) return appended;
    this.arrived(entry);
  }

  /** A new entry, of this process or (a shared log) of any: waits and live journals hear it. */
  private arrived(entry: StoredEntry): void {
    if (this.waiters.size > 0) this.wake(entry);
    if (this.watchers.size > 0) {
      const wire = toWire(entry);
      for (const watcher of this.watchers.keys()) watcher(wire);
    }
  }

  /** Follows a shared log while anyone waits or watches; stops when nobody does. */
  private following(): void {
    const active = this.waiters.size > 0 || this.watchers.size > 0;
    if (active && !this.followed && this.log.follow) {
      this.followed = this.log.follow((entry) => this.arrived(entry));
    } else if (!active && this.followed) {
      this.followed.stop();
      this.followed = undefined;
    }
  }

  /**
   * Calls `listener` with each entry recorded from now on (the live journal), and `end` when
   * the journal closes (shutdown); returns the way to stop. Undefined when MAX_JOURNAL_WATCHERS
   * already watch, `closed` once the journal is (a shutdown has begun).
   */
  watch(
    listener: (entry: JournalEntry) => void,
    end: () => void,
  ): (() => void) | 'closed' | undefined {
    if (this.closed) return 'closed';
    if (this.watchers.size >= MAX_JOURNAL_WATCHERS) return undefined;
    this.watchers.set(listener, end);
    this.following();
    return () => {
      this.watchers.delete(listener);
      this.following();
    };
  }

  /** One entry by id, with what was answered (`response`), or undefined. */
  get(id: string): Maybe<JournalDetail | undefined> {
    return after(this.log.entries(), (all) => this.detail(all, id));
  }

  private detail(all: Iterable<StoredEntry>, id: string): JournalDetail | undefined {
    for (const e of all) {
      if (e.id !== id) continue;
      const truncated = e.responseBytes > JOURNAL_BODY_LIMIT;
      const text = typeof e.response === 'string' ? e.response : e.response?.toString('utf8');
      return {
        ...toWire(e),
        response: text === undefined ? null : shownAnswer(text, truncated),
        response_truncated: truncated,
        response_withheld: e.responseWithheld === true,
        timeline: e.timeline ? timelineView(e.timeline) : null,
      };
    }
    return undefined;
  }

  /** Compiles a filter; throws MatchError for a body path it cannot read. */
  compile(filter: JournalFilter): CompiledFilter {
    const { status, session, since, ...match } = filter;
    return {
      source: filter,
      match: compileMatch(match, this.hashKey, 'match'),
      status,
      session,
      since,
    };
  }

  /** Oldest first; only the entries a filter takes, when one is given. */
  list(filter?: CompiledFilter): Maybe<JournalEntry[]> {
    return after(this.log.entries(), (all) => {
      const out: JournalEntry[] = [];
      const work = matchWork();
      for (const e of all) {
        if (!filter || this.matches(filter, e, work)) out.push(toWire(e));
      }
      return out;
    });
  }

  /**
   * How many entries a filter takes, and, when that count is not what `count` asks, the
   * entries of the filter's session (and time) closest to it, with the fields that differ.
   */
  verify(
    filter: CompiledFilter,
    count: { exactly?: number; at_least?: number; at_most?: number },
  ): Maybe<Verified> {
    return after(this.log.entries(), (all) => this.verifyIn(all, filter, count));
  }

  private verifyIn(
    all: Iterable<StoredEntry>,
    filter: CompiledFilter,
    count: { exactly?: number; at_least?: number; at_most?: number },
  ): Verified {
    let matched = 0;
    const misses: Array<{ entry: StoredEntry; fields: string[] }> = [];
    // One budget for the whole journal: 1000 entries of 32 costly body paths took 3 s.
    const work = matchWork();
    for (const e of all) {
      if (!inScope(filter, e)) continue;
      const fields = this.differing(filter, e, work);
      if (fields.length === 0) matched++;
      else misses.push({ entry: e, fields });
    }
    const ok =
      (count.exactly === undefined || matched === count.exactly) &&
      (count.at_least === undefined || matched >= count.at_least) &&
      (count.at_most === undefined || matched <= count.at_most);
    if (ok) return { ok, matched, nearMisses: [] };
    // Fewest differences first; the newest first among equals.
    // What each field holds is looked up for the near misses shown only.
    const nearMisses = misses
      .map((miss, order) => ({ ...miss, order }))
      .sort((a, b) => a.fields.length - b.fields.length || b.order - a.order)
      .slice(0, NEAR_MISSES)
      .map(({ entry, fields }) => ({
        request: toWire(entry),
        differences: this.differences(filter, entry, fields),
      }));
    return { ok, matched, nearMisses };
  }

  /**
   * The first entry a filter takes: one already held, or the next one recorded within
   * `timeoutMs` (undefined when the time passes, the caller gives up, or too many wait).
   */
  wait(
    filter: CompiledFilter,
    timeoutMs: number,
    setTimer: (fn: () => void, ms: number) => () => void,
    gone: AbortSignal,
  ): Promise<JournalEntry | undefined> | 'busy' {
    if (this.waiters.size >= MAX_JOURNAL_WAITS) return 'busy';
    return new Promise((resolve) => {
      const waiter: Waiter = {
        filter,
        resolve: (entry) => {
          if (!this.waiters.delete(waiter)) return;
          cancel();
          gone.removeEventListener('abort', leave);
          this.following();
          resolve(entry);
        },
      };
      const leave = () => waiter.resolve(undefined);
      const cancel = setTimer(leave, timeoutMs);
      gone.addEventListener('abort', leave, { once: true });
      // Waiting first, then looking at what is held: an entry of another process stored
      // meanwhile is heard (`arrived`) or read, never missed.
      this.waiters.add(waiter);
      this.following();
      if (this.closed) return leave();
      const held = (all: Iterable<StoredEntry>) => {
        // An entry already held counts only within the filter's session and time, as a new one does.
        const work = matchWork();
        for (const e of all) {
          if (this.matches(filter, e, work)) return waiter.resolve(toWire(e));
        }
      };
      const ready = this.followed?.ready;
      const all = ready ? ready.then(() => this.log.entries()) : this.log.entries();
      if (all instanceof Promise) all.then(held, leave);
      else held(all);
    });
  }

  reset(): void | Promise<void> {
    return this.log.clear();
  }

  /** Forgets one session's entries; the others keep their order. */
  resetSession(session: string): void | Promise<void> {
    return this.log.clear(session);
  }

  /**
   * Ends the waits (they answer their timeout, as do those that come later) and the live
   * journals, as a shutdown begins: a dashboard left open must not hold the drain to its deadline.
   */
  close(): void {
    this.closed = true;
    for (const waiter of [...this.waiters]) waiter.resolve(undefined);
    const ends = [...this.watchers.values()];
    this.watchers.clear();
    for (const end of ends) end();
    this.following();
    this.log.close?.();
  }

  private wake(entry: StoredEntry): void {
    for (const waiter of [...this.waiters]) {
      if (this.matches(waiter.filter, entry)) waiter.resolve(toWire(entry));
    }
  }

  private matches(filter: CompiledFilter, e: StoredEntry, work = matchWork()): boolean {
    return inScope(filter, e) && this.differing(filter, e, work).length === 0;
  }

  /** The request of an entry as a match sees it, its body parsed on first use. */
  private targetOf(e: StoredEntry, work?: { left: number }): MatchTarget {
    let body: unknown;
    let parsed = false;
    return {
      group: e.group,
      method: e.method,
      path: pathOf(e.url),
      keyHash: e.keyHash,
      headers: e.headers,
      get body() {
        if (!parsed) {
          body = bodyOf(e);
          parsed = true;
        }
        return body;
      },
      model: () => e.model,
      prompt: () => undefined,
      turn: () => undefined,
      ...(work ? { work } : {}),
    };
  }

  /** The fields an entry in the filter's scope differs in, within `work` (see MATCH_WORK). */
  private differing(filter: CompiledFilter, e: StoredEntry, work: { left: number }): string[] {
    const fields = mismatches(filter.match, this.targetOf(e, work));
    if (filter.status !== undefined && e.status !== filter.status) fields.unshift('status');
    return fields;
  }

  /** The fields an entry differs in, with what the filter expects and what the entry has. */
  private differences(filter: CompiledFilter, e: StoredEntry, fields: string[]): Difference[] {
    const target = this.targetOf(e);
    return fields.map((field) =>
      field === 'status'
        ? { field, expected: filter.status, actual: e.status }
        : {
            field,
            expected: expectedOf(filter.source, field),
            actual: actualOf(target, e, field),
          },
    );
  }
}

/**
 * The filter's session and time: an entry outside them is neither a match nor a near miss.
 */
const inScope = (filter: CompiledFilter, e: StoredEntry) =>
  (filter.session === undefined || e.session === filter.session) &&
  (filter.since === undefined || e.at >= filter.since);

function expectedOf(filter: JournalFilter, field: string): unknown {
  if (field === 'key') return REDACTED;
  if (field.startsWith('header.')) {
    const name = field.slice(7);
    if (isSecretName(name)) return REDACTED;
    const entry = Object.entries(filter.header ?? {}).find(([n]) => n.toLowerCase() === name);
    return entry?.[1];
  }
  if (field.startsWith('body.')) return filter.body?.[field.slice(5)];
  return filter[field as keyof JournalFilter];
}

function actualOf(target: MatchTarget, e: StoredEntry, field: string): unknown {
  switch (field) {
    case 'group':
      return e.group;
    case 'path':
      return target.path;
    case 'method':
      return e.method;
    case 'model':
      return e.model ?? null;
    case 'key':
      return shownKeyHash(e.keyHash);
  }
  if (field.startsWith('header.')) {
    const value = e.headers[field.slice(7)];
    return value === undefined ? null : typeof value === 'string' ? value : value.join(', ');
  }
  if (field.startsWith('body.')) {
    const found = selectPath(target.body, parseJsonPath(field.slice(5)));
    return found.length === 0 ? null : found.length === 1 ? found[0] : found;
  }
  return null;
}

/** A key fingerprint as shown: enough to tell keys apart, too little to look one up. */
export const shownKeyHash = (keyHash: string) => (keyHash === '' ? null : keyHash.slice(0, 12));

function bodyOf(e: StoredEntry): unknown {
  let body: unknown = e.body ?? null;
  if (e.body !== undefined && e.bodyBytes <= JOURNAL_BODY_LIMIT) {
    try {
      body = JSON.parse(e.body);
    } catch {
      body = e.body;
    }
  }
  return body;
}

function toWire(e: StoredEntry): JournalEntry {
  const truncated = e.bodyBytes > JOURNAL_BODY_LIMIT;
  const body = bodyOf(e);
  return {
    id: e.id,
    group: e.group,
    session: e.session,
    key_hash: shownKeyHash(e.keyHash),
    model: e.model ?? null,
    source: e.source,
    at: e.at,
    method: e.method,
    url: e.url,
    status: e.status,
    duration_ms: e.durationMs,
    headers: flatten(e.headers),
    body,
    body_truncated: truncated,
    fault: e.fault ?? null,
    aborted: e.aborted,
    bytes_sent: e.bytesSent ?? null,
  };
}
