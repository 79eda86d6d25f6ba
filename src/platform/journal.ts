import type { Feature } from './features.js';

export const REDACTED = '[REDACTED]';

/** Header names whose values are secrets; the journal and the logs never show them. */
export const SECRET_HEADERS = new Set([
  'authorization',
  'x-api-key',
  'api-key',
  'x-goog-api-key',
  'anthropic-api-key',
  'openai-api-key',
  'x-emulator-admin-token',
  'cookie',
  'proxy-authorization',
]);

/**
 * Query parameters that carry credentials: every header name in SECRET_HEADERS
 * (`?x-api-key=`, `?authorization=`, `?x-emulator-admin-token=`) and any name ending in key,
 * token, secret, password, signature or authorization (`?api-key=`, `?subscription-key=`,
 * `?access_token=`), matched case-insensitively after percent-decoding.
 */
const SECRET_PARAM =
  /(?:^|[-_])(?:key|token|secret|password|signature|sig|auth|authorization)$|apikey/;

const isSecretParam = (rawName: string): boolean => {
  let name = rawName.toLowerCase();
  if (name.includes('%') || name.includes('+')) {
    try {
      name = decodeURIComponent(name.replaceAll('+', ' '));
    } catch {
      return true; // a name that does not decode is not worth the risk
    }
  }
  name = name.trim();
  return SECRET_HEADERS.has(name) || SECRET_PARAM.test(name);
};

/** The URL with the values of credential query parameters replaced. */
export const redactUrl = (url: string): string => {
  const query = url.indexOf('?');
  if (query === -1) return url;
  const hash = url.indexOf('#', query);
  const end = hash === -1 ? url.length : hash;
  const params = url.slice(query + 1, end).split('&');
  let changed = false;
  for (let i = 0; i < params.length; i++) {
    const param = params[i] as string;
    const eq = param.indexOf('=');
    if (eq !== -1 && isSecretParam(param.slice(0, eq))) {
      params[i] = `${param.slice(0, eq + 1)}${REDACTED}`;
      changed = true;
    }
  }
  return changed ? `${url.slice(0, query + 1)}${params.join('&')}${url.slice(end)}` : url;
};

/** Bodies longer than this are kept as a truncated string instead of parsed JSON. */
export const JOURNAL_BODY_LIMIT = 8192;

export interface JournalInput {
  id: string;
  at: number;
  method: string;
  url: string;
  status: number;
  durationMs: number;
  /** The request's own headers object; secret values are blanked in it when recorded. */
  headers: Headers;
  rawBody: string | undefined;
  fault?: string;
  /** A stream the client left (or that stalled or failed) before it ended. */
  aborted?: boolean;
  /** Bytes a stream sent, when it was aborted. */
  bytesSent?: number;
}

interface StoredEntry extends Omit<JournalInput, 'rawBody'> {
  body: string | undefined;
  bodyBytes: number;
}

export interface JournalEntry {
  id: string;
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
  for (const name of SECRET_HEADERS) {
    if (headers[name] !== undefined) headers[name] = REDACTED;
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

/** A ring buffer of the latest `limit` gateway requests; the oldest entries go first. */
/**
 * The first JOURNAL_BODY_LIMIT characters of a large body, as a copy: a plain `slice` would be a
 * view that keeps the whole (up to 32 MB) body alive for as long as the entry lives.
 */
function preview(raw: string): string {
  return Buffer.from(raw.slice(0, JOURNAL_BODY_LIMIT), 'utf16le').toString('utf16le');
}

export class Journal implements Feature {
  readonly name = 'journal';
  private entries: Array<StoredEntry | undefined>;
  private next = 0;
  private count = 0;

  constructor(private readonly limit: number) {
    this.entries = new Array(limit);
  }

  record(input: JournalInput): void {
    if (this.limit === 0) return;
    const raw = input.rawBody;
    this.entries[this.next] = {
      id: input.id,
      at: input.at,
      method: input.method,
      url: redactUrl(input.url),
      status: input.status,
      durationMs: input.durationMs,
      headers: redactInPlace(input.headers),
      body: raw === undefined || raw.length <= JOURNAL_BODY_LIMIT ? raw : preview(raw),
      bodyBytes: raw?.length ?? 0,
      ...(input.fault === undefined ? {} : { fault: input.fault }),
      ...(input.aborted ? { aborted: true, bytesSent: input.bytesSent ?? 0 } : {}),
    };
    this.next = (this.next + 1) % this.limit;
    this.count = Math.min(this.count + 1, this.limit);
  }

  /** Oldest first. */
  list(): JournalEntry[] {
    const out: JournalEntry[] = [];
    const start = (this.next - this.count + this.limit) % this.limit;
    for (let i = 0; i < this.count; i++) {
      const e = this.entries[(start + i) % this.limit] as StoredEntry;
      out.push(toWire(e));
    }
    return out;
  }

  reset(): void {
    this.entries = new Array(this.limit);
    this.next = 0;
    this.count = 0;
  }

  get size(): number {
    return this.count;
  }
}

function toWire(e: StoredEntry): JournalEntry {
  const truncated = e.bodyBytes > JOURNAL_BODY_LIMIT;
  let body: unknown = e.body ?? null;
  if (e.body !== undefined && !truncated) {
    try {
      body = JSON.parse(e.body);
    } catch {
      body = e.body;
    }
  }
  return {
    id: e.id,
    at: e.at,
    method: e.method,
    url: e.url,
    status: e.status,
    duration_ms: e.durationMs,
    headers: flatten(e.headers),
    body,
    body_truncated: truncated,
    fault: e.fault ?? null,
    aborted: e.aborted === true,
    bytes_sent: e.bytesSent ?? null,
  };
}
