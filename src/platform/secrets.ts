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

/** An absolute URL's password (`https://user:pass@host/`) replaced. */
function redactPassword(url: string): string {
  const scheme = url.indexOf('://');
  if (scheme === -1 || !/^[a-z][a-z0-9+.-]*$/i.test(url.slice(0, scheme))) return url;
  const start = scheme + 3;
  const end = url.slice(start).search(/[/?#]/);
  const authority = end === -1 ? url.slice(start) : url.slice(start, start + end);
  const at = authority.lastIndexOf('@');
  const colon = authority.indexOf(':');
  if (at === -1 || colon === -1 || colon > at) return url;
  return `${url.slice(0, start + colon + 1)}${REDACTED}${url.slice(start + at)}`;
}

/**
 * The URL with its password and the values of credential query parameters replaced. Everything
 * after the `?` is read as the query, a raw `#` included: a client does not send a fragment,
 * and a `#` must not hide a key behind it (`?x=1#&api-key=...`).
 */
export const redactUrl = (raw: string): string => {
  const url = redactPassword(raw);
  const query = url.indexOf('?');
  if (query === -1) return url;
  const params = url.slice(query + 1).split('&');
  let changed = false;
  for (let i = 0; i < params.length; i++) {
    const param = params[i] as string;
    const eq = param.indexOf('=');
    if (eq !== -1 && isSecretParam(param.slice(0, eq))) {
      params[i] = `${param.slice(0, eq + 1)}${REDACTED}`;
      changed = true;
    }
  }
  return changed ? `${url.slice(0, query + 1)}${params.join('&')}` : url;
};

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
    for (const param of url.slice(query + 1).split('&')) {
      const eq = param.indexOf('=');
      if (eq === -1 || !isSecretParam(param.slice(0, eq))) continue;
      const value = param.slice(eq + 1);
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

/** How deep redactBodyUrls looks (request bodies are far shallower: the parser bounds them). */
const URL_WALK_DEPTH = 128;

const isWebUrl = (value: string) => value.startsWith('https://') || value.startsWith('http://');

/** The value with each http(s) URL string in it redacted (redactUrl), copied only where one changed. */
function withUrlsRedacted(value: unknown, depth: number): unknown {
  if (typeof value === 'string') return isWebUrl(value) ? redactUrl(value) : value;
  if (value === null || typeof value !== 'object' || depth > URL_WALK_DEPTH) return value;
  if (Array.isArray(value)) {
    let copy: unknown[] | undefined;
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      const next = withUrlsRedacted(item, depth + 1);
      if (next !== item) {
        copy ??= value.slice();
        copy[i] = next;
      }
    }
    return copy ?? value;
  }
  let copy: Record<string, unknown> | undefined;
  for (const key in value) {
    const item = (value as Record<string, unknown>)[key];
    const next = withUrlsRedacted(item, depth + 1);
    if (next !== item) {
      copy ??= { ...(value as Record<string, unknown>) };
      copy[key] = next;
    }
  }
  return copy ?? value;
}

/** A JSON string value that is an http(s) URL, in JSON text (escapes and all). */
const URL_IN_TEXT = /"(https?:\/\/(?:[^"\\]|\\.)*)"/g;

/**
 * A request body's text as the journal and recordings keep it: every http(s) URL in it (a
 * `callback_url`, an image's, a presigned one) without its password and credential parameters
 * (`X-Amz-Signature`, `sig`, `token`...). The text as sent when none has any; else the parsed
 * body written again (a search of the text would miss URLs that JSON escapes hide:
 * `https:\/\/`, `\u0040`). A body that did not parse gets what a search of its text finds.
 */
export function redactBodyUrls(raw: string, body: unknown): string {
  if (body === null || typeof body !== 'object') {
    return raw.includes('://')
      ? raw.replace(URL_IN_TEXT, (_, url: string) => `"${redactUrl(url)}"`)
      : raw;
  }
  const redacted = withUrlsRedacted(body, 0);
  return redacted === body ? raw : JSON.stringify(redacted);
}
