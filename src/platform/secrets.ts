import { REDACTED } from './request.js';

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
 * Names that carry credentials, for headers and query parameters alike (lower case): every name
 * in SECRET_HEADERS; a name with a word (letters between separators) that always names one
 * (`x-secret-1`, `x-jwt`, `db_password_2`); a name ending in one, with or without a separator
 * and whatever digits or marks follow (`token_1`, `key2`, `authorization2`, `accesstoken`,
 * `clientsecret`, `token;`, `x-client-cert`, `sig`); any name holding `apikey`, `api-key` or
 * `private_key`. Words that name a credential only last (`key`, `token`, `auth`, `cert`, `sig`,
 * `pass`, `cookie`) leave `x-key-id`, `token_count` or `x-auth-mode` alone. A harmless name that
 * happens to end so (`?monkey=`) is blanked too: a blanked value costs less than a leaked one.
 */
const SECRET_WORD =
  /(?:^|[^a-z])(?:secret|password|passwd|passphrase|pwd|credentials?|jwt|bearer)(?:[^a-z]|$)/;
const SECRET_ENDING =
  /(?:key|token|secret|password|passwd|passphrase|signature|auth|authorization|credentials?)[^a-z]*$|(?:^|[^a-z])(?:sig|cert|pass|cookie)[^a-z]*$|api[-_]?key|private[-_]?key/;

const namesSecret = (name: string) =>
  SECRET_HEADERS.has(name) || SECRET_ENDING.test(name) || SECRET_WORD.test(name);

/**
 * Whether a header or query parameter name is a credential's. A header too: gateways take keys
 * in headers of their own (`ocp-apim-subscription-key`, `x-auth-token`, `api_key`).
 */
export function isSecretName(name: string): boolean {
  let secret = secretNames.get(name);
  if (secret === undefined) {
    secret = namesSecret(name.toLowerCase());
    if (secretNames.size < SECRET_NAMES_KEPT) secretNames.set(name, secret);
  }
  return secret;
}

/**
 * Verdicts on names seen: every request's headers are redacted, and their names repeat, so the
 * pattern is tried once a name. Names are the client's: only the first SECRET_NAMES_KEPT kept.
 */
const SECRET_NAMES_KEPT = 1024;
const secretNames = new Map<string, boolean>();

const isSecretParam = (rawName: string): boolean => {
  let name = rawName.toLowerCase();
  if (name.includes('%') || name.includes('+')) {
    try {
      name = decodeURIComponent(name.replaceAll('+', ' '));
    } catch {
      return true; // a name that does not decode is not worth the risk
    }
  }
  // `key[]=`, `data[apikey]=`: each part of a bracketed name
  return name.split(/[[\]]/).some((part) => part !== '' && isSecretName(part.trim()));
};

/**
 * An absolute URL's password (`https://user:pass@host/`) replaced, or its user name when it
 * has no password (`https://ghp_token@github.com/`: a token put there).
 */
function redactPassword(url: string): string {
  const scheme = url.indexOf('://');
  if (scheme === -1 || !/^[a-z][a-z0-9+.-]*$/i.test(url.slice(0, scheme))) return url;
  const start = scheme + 3;
  const end = url.slice(start).search(/[/?#]/);
  const authority = end === -1 ? url.slice(start) : url.slice(start, start + end);
  const at = authority.lastIndexOf('@');
  if (at === -1) return url;
  const colon = authority.indexOf(':');
  if (colon === -1 || colon > at)
    return `${url.slice(0, start)}${REDACTED}${url.slice(start + at)}`;
  return `${url.slice(0, start + colon + 1)}${REDACTED}${url.slice(start + at)}`;
}

/**
 * The URL with its password and the values of credential query parameters replaced. Everything
 * after the `?` is read as the query, a raw `#` included: a client does not send a fragment,
 * and a `#` must not hide a key behind it (`?x=1#&api-key=...`); a parameter is read with `;`
 * between parameters too (some servers read it so).
 */
export const redactUrl = (raw: string): string => {
  const url = redactPassword(raw);
  const query = url.indexOf('?');
  if (query === -1) return url;
  const params = url.slice(query + 1).split('&');
  let changed = false;
  for (let i = 0; i < params.length; i++) {
    const param = params[i] as string;
    const redacted = redactParam(param);
    if (redacted !== param) {
      params[i] = redacted;
      changed = true;
    } else if (param.includes(';')) {
      // read with `;` between parameters too (`a=1;token=...`)
      const parts = param.split(';');
      const each = parts.map(redactParam);
      if (each.some((part, j) => part !== parts[j])) {
        params[i] = each.join(';');
        changed = true;
      }
    }
  }
  return changed ? `${url.slice(0, query + 1)}${params.join('&')}` : url;
};

/** Where the value of `name=value` starts when the name is a credential's, else -1. */
function secretValueAt(param: string): number {
  const eq = param.indexOf('=');
  return eq !== -1 && isSecretParam(param.slice(0, eq)) ? eq + 1 : -1;
}

/** `name=value` with its value replaced when the name is a credential's. */
function redactParam(param: string): string {
  const at = secretValueAt(param);
  return at === -1 ? param : `${param.slice(0, at)}${REDACTED}`;
}

/** Credentials shorter than this are not looked for in an answer (they would blank common text). */
export const MIN_ECHOED_CREDENTIAL = 8;

/**
 * The credentials a request carries, in its headers and its query (a header's scheme word, as
 * `Bearer`, set apart), longest first: what an upstream that echoes one (`Invalid API key
 * sk-...`) must not leave in a recording.
 */
export function credentialsOf(
  headers: Record<string, string | string[] | undefined>,
  url: string,
): string[] {
  const found = new Set<string>();
  const add = (value: string) => {
    const trimmed = value.trim();
    if (trimmed.length >= MIN_ECHOED_CREDENTIAL) found.add(trimmed);
    const space = trimmed.indexOf(' ');
    if (space !== -1) add(trimmed.slice(space + 1));
  };
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || !isSecretName(name)) continue;
    for (const one of Array.isArray(value) ? value : [value]) add(one);
  }
  const query = url.indexOf('?');
  if (query !== -1) {
    // as redactUrl reads them: between `&`, and between `;` too
    const params = url.slice(query + 1).split('&');
    for (const param of [
      ...params,
      ...params.flatMap((p) => (p.includes(';') ? p.split(';') : [])),
    ]) {
      const at = secretValueAt(param);
      if (at === -1) continue;
      const value = param.slice(at);
      add(value);
      try {
        add(decodeURIComponent(value.replaceAll('+', ' ')));
      } catch {
        // kept as sent
      }
    }
  }
  return [...found].sort((a, b) => b.length - a.length);
}

/** The text with every credential in it replaced by REDACTED. */
export function redactCredentials(text: string, credentials: readonly string[]): string {
  let out = text;
  for (const credential of credentials) {
    if (out.includes(credential)) out = out.replaceAll(credential, REDACTED);
  }
  return out;
}

/** Where a URL in free text ends: white space, quotes, angle brackets, a backslash. */
const URL_END = /[\s"'<>\\`]/;
const SCHEME_CHAR = /[A-Za-z0-9+.-]/;
const LETTER = /[A-Za-z]/;
/** The longest scheme looked for before a `://` (`https`, `wss`, `s3`...). */
const MAX_SCHEME = 32;

/**
 * Text with every URL in it (`scheme://...`, wherever it stands, of any case) redacted
 * (redactUrl). Linear: each `://` is found once, its scheme read back at most MAX_SCHEME
 * characters, and the search goes on after the URL's end.
 */
export function redactUrlsInText(text: string): string {
  let out = '';
  let last = 0;
  let from = 0;
  for (;;) {
    const at = text.indexOf('://', from);
    if (at === -1) break;
    const start = schemeStart(text, at, last);
    let end = at + 3;
    while (end < text.length && !URL_END.test(text[end] as string)) end++;
    from = end > at + 3 ? end : at + 3;
    if (start === at) continue;
    const url = text.slice(start, end);
    const redacted = redactUrl(url);
    if (redacted !== url) {
      out += text.slice(last, start) + redacted;
      last = end;
    }
  }
  return last === 0 ? text : out + text.slice(last);
}

/**
 * Where the URL whose `://` is at `at` starts: its scheme read back (at most MAX_SCHEME
 * characters, not before `floor`) from its first letter; `at` when it has none.
 */
function schemeStart(text: string, at: number, floor: number): number {
  let start = at;
  while (start > floor && at - start < MAX_SCHEME && SCHEME_CHAR.test(text[start - 1] as string)) {
    start--;
  }
  while (start < at && !LETTER.test(text[start] as string)) start++;
  return start;
}

const redactedText = (text: string) => (text.includes('://') ? redactUrlsInText(text) : text);

/**
 * The value with the URLs in its strings and keys redacted, copied only where one changed (the
 * body a recording keeps; redactBodyUrls writes it for the journal).
 */
export function withUrlsRedacted(value: unknown): unknown {
  if (typeof value === 'string') return redactedText(value);
  if (value === null || typeof value !== 'object') return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      const next = withUrlsRedacted(item);
      if (next !== item) {
        copy ??= value.slice();
        copy[i] = next;
      }
    }
    return copy ?? value;
  }
  let copy: Record<string, unknown> | undefined;
  const source = value as Record<string, unknown>;
  const keys = Object.keys(source);
  for (let i = 0; i < keys.length; i++) {
    const key = keys[i] as string;
    const item = source[key];
    const next = withUrlsRedacted(item);
    const name = redactedText(key);
    if (next !== item || name !== key) {
      if (!copy) {
        // keys before this one as they were, in their order
        copy = {};
        for (let j = 0; j < i; j++) copy[keys[j] as string] = source[keys[j] as string];
      }
      copy[name] = next;
    } else if (copy) copy[key] = item;
  }
  return copy ?? value;
}

/** JSON's escapes that can hide a URL from a search of the text (`https:\/\/`, `\u0068ttps`). */
const HIDING_ESCAPES = /\\u([0-9a-fA-F]{4})|\\\//g;

/** JSON text with the escapes that could hide a URL read (HIDING_ESCAPES). */
export const readEscapes = (text: string) =>
  // (a text without a backslash has none: found faster than by the expression)
  text.includes('\\')
    ? text.replace(HIDING_ESCAPES, (_match, hex: string | undefined) =>
        hex === undefined ? '/' : String.fromCharCode(Number.parseInt(hex, 16)),
      )
    : text;

/**
 * A request body's text as the journal and recordings keep it: every URL in it (a
 * `callback_url`, an image's, a presigned one, one inside a message's text or a key) without
 * its password and credential parameters (`X-Amz-Signature`, `sig`, `token`...). The text as
 * sent when no URL in it holds a credential; else the parsed body written again (JSON escapes
 * would hide URLs from a search of the text). A body that did not parse (`undefined`) is searched as text,
 * its `\u` and `\/` escapes read first. Linear in the body (the parser bounds its depth).
 */
export function redactBodyUrls(raw: string, body: unknown): string {
  // No `://` in the text, and no escape that could spell one (`:\/\/`, `\u003a`): no URL in
  // any string or key of the body, and nothing to walk (most request bodies).
  if (!raw.includes('://') && !raw.includes('\\/') && !raw.includes('\\u')) return raw;
  if (body === undefined) {
    const read = readEscapes(raw);
    const redacted = redactedText(read);
    return redacted === read ? raw : redacted;
  }
  const redacted = withUrlsRedacted(body);
  return redacted === body ? raw : JSON.stringify(redacted);
}

/**
 * A request body as the journal keeps it (docs/control.md "Journal"): whole, redacted as redactBodyUrls
 * does, up to `limit` characters; past it only its first `limit` characters, searched as text
 * (JSON escapes read first) and a URL the cut leaves unfinished (its credentials may be cut in
 * two) replaced whole, so that a large body costs its beginning, not a redaction of all of it
 * (15 MB of URLs held the event loop 0.85 s). `bytes`: the length the journal reports;
 * `redacted`: whether the body held a credential (one was hidden in what is kept), or may hold
 * one past the cut (it holds something of a URL there).
 */
export function journalBody(
  raw: string,
  body: unknown,
  limit: number,
): { text: string; bytes: number; redacted: boolean } {
  if (raw.length <= limit) {
    const text = redactBodyUrls(raw, body);
    return { text, bytes: text.length, redacted: text !== raw };
  }
  const read = readEscapes(raw.slice(0, limit));
  const text = redactedCut(read);
  // What is past the cut is not searched: a URL there (a `//`, or escapes that could spell
  // one) may hold a credential.
  const rest = raw.slice(limit);
  const redacted =
    text !== read || rest.includes('//') || rest.includes('\\/') || rest.includes('\\u');
  // At most `limit` characters (a redaction may lengthen them), copied: a slice would be a view
  // that keeps the whole body alive for as long as the journal keeps the entry.
  return {
    text: Buffer.from(text.slice(0, limit), 'utf16le').toString('utf16le'),
    bytes: raw.length,
    redacted,
  };
}

/**
 * The beginning of a text cut at some length, redacted: its URLs as redactUrlsInText redacts
 * them, and one the cut leaves unfinished (its credentials may be cut in two) replaced whole.
 */
export function redactedCut(text: string): string {
  // (a forward search: V8's backward one, in unfinishedUrl, reads a character at a time)
  if (!text.includes('://')) return text;
  const redacted = redactUrlsInText(text);
  const open = unfinishedUrl(redacted);
  return open === -1 ? redacted : `${redacted.slice(0, open)}${REDACTED}`;
}

/** Where a URL that runs to the end of the text starts, or -1. */
function unfinishedUrl(text: string): number {
  const at = text.lastIndexOf('://');
  if (at === -1) return -1;
  for (let k = at + 3; k < text.length; k++) if (URL_END.test(text[k] as string)) return -1;
  return schemeStart(text, at, 0);
}
