import { createHash } from 'node:crypto';
import {
  closeSync,
  type Dirent,
  existsSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  renameSync,
  statSync,
  writevSync,
} from 'node:fs';
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { dirname, join, relative } from 'node:path';
import type { Feature } from '../platform/features.js';
import type { GroupName } from '../platform/group.js';
import { CLIENT_HEADERS } from '../platform/request.js';

/**
 * Recordings (docs/record-replay.md "Record and replay"): one JSON file per distinct request, readable and
 * reviewable in a pull request. A request is known by its group, method, path, model and the
 * hash of its body; repeating it (a video task's polls) appends answers, replayed in turn.
 * No credential is ever written: request headers are not kept, answer headers only from an
 * allowlist, and the query string with its credentials redacted.
 */

export interface RecordedEvent {
  /** When it arrived, in ms from the start of the answer. */
  at_ms: number;
  event?: string;
  data: string;
  /** The block exactly as sent, when `event` and `data` do not rebuild it. */
  raw?: string;
}

export interface RecordedResponse {
  status: number;
  headers: Record<string, string>;
  /** A JSON answer (or its text when it is not JSON). */
  body?: unknown;
  /** The answer's exact text, when `JSON.stringify(body)` does not give it back. */
  body_text?: string;
  /** An event-stream answer, event by event. */
  stream?: RecordedEvent[];
}

export interface RecordingMatch {
  group: GroupName;
  method: string;
  path: string;
  model?: string;
  /** SHA-256 (hex, 32 characters) of the request body's canonical JSON. */
  body_hash?: string;
}

export interface Recording {
  match: RecordingMatch;
  /**
   * What drift replays: the query (credentials redacted), the body, and the messages betas the
   * request named (`msgapi-beta` / `anthropic-beta`: no credential), which its fields may need.
   */
  request: { query?: string; body?: unknown; betas?: string[] };
  responses: RecordedResponse[];
  /** The upstream's origin (never a credential). */
  upstream: string;
}

/** Answer headers worth keeping; nothing else (cookies, auth echoes) is ever written. */
const KEPT_HEADERS = new Set(['content-type', ...CLIENT_HEADERS]);

export function keptHeaders(headers: Iterable<[string, string]>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of headers) {
    if (KEPT_HEADERS.has(name.toLowerCase())) out[name.toLowerCase()] = value;
  }
  return out;
}

/** JSON with object keys sorted, so that key order does not change a hash. */
function canonical(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonical).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical((value as Record<string, unknown>)[k])}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

export const bodyHash = (body: unknown) =>
  body === undefined
    ? undefined
    : createHash('sha256').update(canonical(body)).digest('hex').slice(0, 32);

const keyOf = (m: RecordingMatch) =>
  `${m.group} ${m.method} ${m.path} ${m.model ?? ''} ${m.body_hash ?? ''}`;

/** Event-stream text as events; each keeps its exact block when the fields do not rebuild it. */
export function parseStream(text: string, atMs: number): RecordedEvent[] {
  const events: RecordedEvent[] = [];
  for (const block of text.split('\n\n')) {
    if (block === '') continue;
    let event: string | undefined;
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7);
      else if (line.startsWith('data: ')) data.push(line.slice(6));
    }
    const recorded: RecordedEvent = {
      at_ms: atMs,
      ...(event === undefined ? {} : { event }),
      data: data.join('\n'),
    };
    if (blockOf(recorded) !== `${block}\n\n`) recorded.raw = `${block}\n\n`;
    events.push(recorded);
  }
  return events;
}

/** The bytes of one recorded event. */
export const blockOf = (e: RecordedEvent) =>
  e.raw ??
  `${e.event === undefined ? '' : `event: ${e.event}\n`}${e.data
    .split('\n')
    .map((line) => `data: ${line}`)
    .join('\n')}\n\n`;

/** A JSON answer as recorded: parsed when it is JSON, with its exact text when needed. */
export function recordedBody(text: string): Pick<RecordedResponse, 'body' | 'body_text'> {
  try {
    const body = JSON.parse(text) as unknown;
    return JSON.stringify(body) === text ? { body } : { body, body_text: text };
  } catch {
    return { body: text };
  }
}

/** The text a recorded JSON answer is sent back as. */
export const bodyTextOf = (r: RecordedResponse) =>
  r.body_text ?? (typeof r.body === 'string' ? r.body : JSON.stringify(r.body));

/**
 * A recordings directory that cannot be used: not a directory, not readable, or holding a
 * `.json` file that is not a recording. The message names the directory or the file (relative
 * to the directory) and what is wrong with it.
 */
export class RecordingsError extends Error {
  override name = 'RecordingsError';
}

const GROUPS = new Set(['video', 'messages', 'chat']);
const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'HEAD', 'OPTIONS']);

/** The most betas a recording's request names (a request names a few). */
export const MAX_BETAS = 64;

export const isObject = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

/** What keeps a parsed file from being a recording (the first problem found), or undefined. */
export function recordingProblem(value: unknown): string | undefined {
  if (!isObject(value)) return 'it is not a JSON object';
  const { match, request, responses } = value;
  if (!isObject(match)) return 'match is missing or not an object';
  if (typeof match.group !== 'string' || !GROUPS.has(match.group)) {
    return 'match.group must be one of video, messages, chat';
  }
  if (typeof match.method !== 'string' || !METHODS.has(match.method)) {
    return `match.method must be one of ${[...METHODS].join(', ')}`;
  }
  if (typeof match.path !== 'string' || !match.path.startsWith('/')) {
    return 'match.path must be a string starting with /';
  }
  for (const field of ['model', 'body_hash'] as const) {
    if (match[field] !== undefined && typeof match[field] !== 'string') {
      return `match.${field} must be a string`;
    }
  }
  if (request !== undefined && !isObject(request)) return 'request must be an object';
  if (isObject(request) && request.query !== undefined && typeof request.query !== 'string') {
    return 'request.query must be a string';
  }
  if (
    isObject(request) &&
    request.betas !== undefined &&
    (!Array.isArray(request.betas) ||
      request.betas.length > MAX_BETAS ||
      !request.betas.every((b) => typeof b === 'string' && b.length <= 128))
  ) {
    return `request.betas must be at most ${MAX_BETAS} strings of at most 128 characters`;
  }
  if (!Array.isArray(responses) || responses.length === 0) {
    return 'responses must be a non-empty array';
  }
  for (const [i, response] of responses.entries()) {
    const problem = responseProblem(response);
    if (problem) return `responses[${i}]${problem}`;
  }
  return undefined;
}

/** Whether node:http would send this header (its own checks: a token name, no control bytes). */
function sendable(name: string, value: unknown): boolean {
  try {
    if (typeof value !== 'string') return false;
    validateHeaderName(name);
    validateHeaderValue(name, value);
    return true;
  } catch {
    return false;
  }
}
/** The latest a recorded event may come, in ms from the start of its answer. */
export const MAX_EVENT_AT_MS = 3_600_000;

/** What keeps one recorded answer from being replayed, after its path, or undefined. */
function responseProblem(response: unknown): string | undefined {
  if (!isObject(response)) return ' must be an object';
  const { status, headers, stream } = response;
  if (!Number.isInteger(status) || (status as number) < 200 || (status as number) > 599) {
    return '.status must be an integer from 200 to 599';
  }
  if (!isObject(headers)) return '.headers must be an object';
  for (const [name, value] of Object.entries(headers)) {
    if (!sendable(name, 'x')) return `.headers has a name that is no HTTP header name`;
    if (!sendable(name, value)) {
      return `.headers.${name} must be a string of the bytes a header may carry`;
    }
  }
  if (response.body_text !== undefined && typeof response.body_text !== 'string') {
    return '.body_text must be a string';
  }
  if (stream === undefined) return undefined;
  if (!Array.isArray(stream)) return '.stream must be an array';
  for (const [j, event] of stream.entries()) {
    const at = `.stream[${j}]`;
    if (!isObject(event) || typeof event.data !== 'string') return `${at}.data must be a string`;
    if (
      typeof event.at_ms !== 'number' ||
      !Number.isFinite(event.at_ms) ||
      event.at_ms < 0 ||
      event.at_ms > MAX_EVENT_AT_MS
    ) {
      return `${at}.at_ms must be a number from 0 to ${MAX_EVENT_AT_MS}`;
    }
    if (
      event.event !== undefined &&
      (typeof event.event !== 'string' || /[\r\n]/.test(event.event))
    ) {
      return `${at}.event must be a string without line breaks`;
    }
    if (event.raw !== undefined && typeof event.raw !== 'string')
      return `${at}.raw must be a string`;
  }
  return undefined;
}

/** An fs error in a few words: its code (`EACCES`), else its message. */
const reasonOf = (err: unknown) =>
  (err as NodeJS.ErrnoException | undefined)?.code ?? (err as Error | undefined)?.message ?? err;

/** A response's bytes as they stand in its file (an element of `responses`). */
type Piece = Buffer;

interface Entry {
  file: string;
  recording: Recording;
  /** Its responses as written, made once each (a poll's file is rewritten with each answer). */
  pieces?: Piece[];
}

const indented = (text: string, by: string) => text.replaceAll('\n', `\n${by}`);

const piece = (response: RecordedResponse): Piece =>
  Buffer.from(indented(JSON.stringify(response, null, 2), '    '));
const SEPARATOR = Buffer.from(',\n    ');

/** The head of a recording's file, up to its first response. */
const headOf = ({ match, request }: Recording) =>
  `{\n  "match": ${indented(JSON.stringify(match, null, 2), '  ')},\n  "request": ${indented(JSON.stringify(request, null, 2), '  ')},\n  "responses": [\n    `;
const tailOf = ({ upstream }: Recording) =>
  `\n  ],\n  "upstream": ${JSON.stringify(upstream)}\n}\n`;

/**
 * A recording's file, `JSON.stringify(recording, null, 2)` and a line break, as the buffers
 * written one after the other: a request repeated many times (a poll) is not serialized again
 * whole each time, nor copied into one string.
 */
function fileBuffers(recording: Recording, pieces: Piece[]): Buffer[] {
  const buffers: Buffer[] = [Buffer.from(headOf(recording))];
  for (const [i, p] of pieces.entries()) {
    if (i > 0) buffers.push(SEPARATOR);
    buffers.push(p);
  }
  buffers.push(Buffer.from(tailOf(recording)));
  return buffers;
}

/** Writes every byte of the buffers (writev may write fewer than asked, and at most 1024 at once). */
function writevAll(fd: number, buffers: Buffer[]): void {
  let rest = buffers;
  while (rest.length > 0) {
    const batch = rest.slice(0, 1024);
    let written = writevSync(fd, batch);
    let i = 0;
    while (i < batch.length && written >= (batch[i] as Buffer).length) {
      written -= (batch[i] as Buffer).length;
      i += 1;
    }
    rest = rest.slice(i);
    if (written > 0) rest[0] = (rest[0] as Buffer).subarray(written);
  }
}

/** The recordings of a directory: read at start, written as requests are recorded. */
export class Recordings implements Feature {
  readonly name = 'recordings';
  private readonly byKey = new Map<string, Entry>();
  /** Replay positions, per session and recording. */
  private readonly used = new Map<string, number>();

  /** Throws RecordingsError for a directory that cannot be read or a file that is no recording. */
  constructor(
    readonly dir: string | undefined,
    /** The largest file read or written (RECORDING_MAX_BYTES; tests lower it). */
    readonly maxFileBytes = RECORDING_MAX_BYTES,
  ) {
    if (dir !== undefined && existsSync(dir)) {
      let isDirectory: boolean;
      try {
        isDirectory = statSync(dir).isDirectory();
      } catch (err) {
        throw new RecordingsError(`${dir} cannot be read (${reasonOf(err)})`);
      }
      if (!isDirectory) throw new RecordingsError(`${dir} is not a directory`);
      for (const file of walk(dir)) {
        const name = relative(dir, file);
        let text: string;
        try {
          // A FIFO named `x.json` would make the read wait for a writer, the process with it.
          const stat = statSync(file);
          if (!stat.isFile()) throw new RecordingsError(`${name} is not a regular file`);
          if (stat.size > this.maxFileBytes) {
            throw new RecordingsError(`${name} is larger than ${this.maxFileBytes} bytes`);
          }
          text = readFileSync(file, 'utf8');
        } catch (err) {
          if (err instanceof RecordingsError) throw err;
          throw new RecordingsError(`${name} cannot be read (${reasonOf(err)})`);
        }
        let parsed: unknown;
        try {
          parsed = JSON.parse(text);
        } catch {
          // (not the parser's words: they quote the file, which may be anything on the disk)
          throw new RecordingsError(`${name} is not valid JSON`);
        }
        const problem = recordingProblem(parsed);
        if (problem) throw new RecordingsError(`${name} is not a recording: ${problem}`);
        const recording = parsed as Recording;
        recording.request ??= {};
        this.byKey.set(keyOf(recording.match), { file, recording });
      }
    }
  }

  get size(): number {
    return this.byKey.size;
  }

  all(): Array<{ file: string; recording: Recording }> {
    return [...this.byKey.values()].map(({ file, recording }) => ({
      file: this.dir ? relative(this.dir, file) : file,
      recording,
    }));
  }

  /** The next recorded answer to this request in this session (the last one repeats). */
  next(match: RecordingMatch, session: string): RecordedResponse | undefined {
    const key = keyOf(match);
    const found = this.byKey.get(key);
    if (!found) return undefined;
    const position = `${session}\n${key}`;
    const at = this.used.get(position) ?? 0;
    if (this.used.size >= 100_000) this.used.clear();
    this.used.set(position, at + 1);
    const { responses } = found.recording;
    return responses[Math.min(at, responses.length - 1)];
  }

  /**
   * Adds an answer to the recording of a request (made if new), and writes its file; false when
   * the file would then be larger than `maxFileBytes`, which no start-up would read (the
   * answer is not kept: a request repeated without end, a poll, cannot grow its file without end).
   */
  add(
    match: RecordingMatch,
    request: Recording['request'],
    upstream: string,
    response: RecordedResponse,
  ): boolean {
    if (this.dir === undefined) return true;
    const key = keyOf(match);
    let found = this.byKey.get(key);
    if (!found) {
      const slug =
        `${match.method.toLowerCase()}${match.path.replace(/[^A-Za-z0-9]+/g, '-')}`.slice(0, 80);
      const id = createHash('sha256').update(key).digest('hex').slice(0, 10);
      const file = join(this.dir, match.group, `${slug}-${id}.json`);
      found = { file, recording: { match, request, responses: [], upstream } };
      this.byKey.set(key, found);
    }
    found.pieces ??= found.recording.responses.map(piece);
    const { pieces } = found;
    const buffers = fileBuffers(found.recording, [...pieces, piece(response)]);
    let bytes = 0;
    for (const b of buffers) bytes += b.length;
    if (bytes > this.maxFileBytes) {
      if (found.recording.responses.length === 0) this.byKey.delete(key);
      return false;
    }
    found.recording.responses.push(response);
    pieces.push(buffers[buffers.length - 2] as Buffer);
    mkdirSync(dirname(found.file), { recursive: true });
    const temporary = `${found.file}.tmp`;
    const fd = openSync(temporary, 'w');
    try {
      writevAll(fd, buffers);
    } finally {
      closeSync(fd);
    }
    renameSync(temporary, found.file);
    return true;
  }

  reset(): void {
    this.used.clear();
  }

  resetSession(session: string): void {
    for (const position of this.used.keys()) {
      if (position.startsWith(`${session}\n`)) this.used.delete(position);
    }
  }
}

/** The most bytes one recording file may have. */
export const RECORDING_MAX_BYTES = 64 * 1024 * 1024;

/** How far a recordings directory is walked: a directory deeper, or more entries, is refused. */
export const MAX_WALK_DEPTH = 16;
export const MAX_WALK_ENTRIES = 20_000;

/**
 * The `.json` files under a directory, in name order; RecordingsError for one it cannot read,
 * or for a tree deeper or larger than a recordings directory is (the walk blocks the process).
 */
function* walk(dir: string, root = dir, seen = { entries: 0 }, depth = 0): Generator<string> {
  if (depth > MAX_WALK_DEPTH) {
    throw new RecordingsError(`${root} is deeper than ${MAX_WALK_DEPTH} directories`);
  }
  let entries: Dirent[];
  try {
    entries = readdirSync(dir, { withFileTypes: true });
  } catch (err) {
    const name = dir === root ? dir : relative(root, dir);
    throw new RecordingsError(`${name} cannot be read (${reasonOf(err)})`);
  }
  seen.entries += entries.length;
  if (seen.entries > MAX_WALK_ENTRIES) {
    throw new RecordingsError(`${root} holds more than ${MAX_WALK_ENTRIES} files and directories`);
  }
  entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const entry of entries) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* walk(path, root, seen, depth + 1);
    else if (entry.name.endsWith('.json')) yield path;
  }
}
