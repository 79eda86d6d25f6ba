import type { FastifyInstance } from 'fastify';
import { REDACTED } from '../platform/request.js';
import { type RecordedResponse, type Recording, Recordings } from './recordings.js';

/**
 * The drift check (docs/record-replay.md "Record and replay"): each recorded request is sent to the
 * emulator's own engine, and the answers are compared by shape — keys missing or extra, types,
 * values outside the enums the emulator knows, the order of stream events — never by value.
 * A video task is followed through its life: each recorded poll is compared with the
 * emulator's task in the same status.
 */

export type DriftKind = 'missing' | 'extra' | 'type' | 'enum' | 'event_order' | 'status';

export interface DriftDifference {
  /** The recording's file, relative to the recordings directory. */
  recording: string;
  /** Which of its recorded answers. */
  response: number;
  /** Where in the answer: `body.choices[0].message.role`, `event message_start.message`. */
  at: string;
  kind: DriftKind;
  /** What the emulator answers there (its type, key or value). */
  emulator: unknown;
  /** What the recording holds there. */
  recorded: unknown;
}

export interface DriftReport {
  drift: boolean;
  recordings: number;
  responses: number;
  differences: DriftDifference[];
}

const AUTH: Record<string, Record<string, string>> = {
  video: { authorization: 'Bearer drift-check' },
  chat: { authorization: 'Bearer drift-check' },
  messages: { 'x-api-key': 'drift-check', 'msgapi-version': '2023-06-01' },
};

type Json = unknown;
type Schema = Record<string, unknown>;

const typeOf = (v: Json) => (v === null ? 'null' : Array.isArray(v) ? 'array' : typeof v);

/** Differences of shape between the emulator's answer and a recorded one. */
function compareShape(
  emulator: Json,
  recorded: Json,
  at: string,
  out: Omit<DriftDifference, 'recording' | 'response'>[],
) {
  const a = typeOf(emulator);
  const b = typeOf(recorded);
  // A null stands for "absent here": nullable fields carry no shape.
  if (a === 'null' || b === 'null') return;
  if (a !== b) {
    out.push({ at, kind: 'type', emulator: a, recorded: b });
    return;
  }
  if (a === 'array') {
    const [x] = emulator as Json[];
    const [y] = recorded as Json[];
    if (x !== undefined && y !== undefined) compareShape(x, y, `${at}[0]`, out);
    return;
  }
  if (a !== 'object') return;
  const left = emulator as Record<string, Json>;
  const right = recorded as Record<string, Json>;
  for (const key of Object.keys(left)) {
    if (!(key in right))
      out.push({
        at: `${at}.${key}`,
        kind: 'missing',
        emulator: typeOf(left[key]),
        recorded: null,
      });
    else compareShape(left[key], right[key], `${at}.${key}`, out);
  }
  for (const key of Object.keys(right)) {
    if (!(key in left))
      out.push({ at: `${at}.${key}`, kind: 'extra', emulator: null, recorded: typeOf(right[key]) });
  }
}

/** Recorded string values outside the enums of the emulator's own answer schema. */
function compareEnums(
  value: Json,
  schema: Schema | undefined,
  at: string,
  resolve: (s: Schema) => Schema,
  out: Omit<DriftDifference, 'recording' | 'response'>[],
) {
  if (!schema) return;
  const s = resolve(schema);
  if (Array.isArray(s.enum) && typeof value === 'string' && !s.enum.includes(value)) {
    out.push({ at, kind: 'enum', emulator: s.enum, recorded: value });
    return;
  }
  for (const branch of (s.allOf as Schema[] | undefined) ?? [])
    compareEnums(value, branch, at, resolve, out);
  const options = ((s.anyOf ?? s.oneOf) as Schema[] | undefined)?.filter(
    (b) => resolve(b).type !== 'null',
  );
  if (options?.length === 1) compareEnums(value, options[0], at, resolve, out);
  if (Array.isArray(value) && s.items) {
    for (const [i, item] of value.entries()) {
      compareEnums(item, s.items as Schema, `${at}[${i}]`, resolve, out);
    }
  } else if (value !== null && typeof value === 'object' && s.properties) {
    const properties = s.properties as Record<string, Schema>;
    for (const [key, item] of Object.entries(value)) {
      compareEnums(item, properties[key], `${at}.${key}`, resolve, out);
    }
  }
}

/** A stream's events as `[name, data]`: chat's unnamed frames are `data`, `[DONE]` kept as is. */
const eventsOf = (text: string): Array<[string, string]> =>
  text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      let name = 'data';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) name = line.slice(7);
        else if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      return [name, data.join('\n')];
    });

/** The order of event kinds, runs of one kind counted once (deltas vary in number). */
const orderOf = (events: Array<[string, string]>) =>
  events.map(([name]) => name).filter((name, i, all) => name !== all[i - 1]);

const parse = (text: string): Json => {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
};

/** The video timeline of the emulator `build` makes (its VIDEO_QUEUE_MS and VIDEO_RENDER_MS). */
export interface VideoTimeline {
  queueMs: number;
  renderMs: number;
}

/**
 * Replays each recording in `dir` against the emulator `build` makes and lists where the
 * answers' shapes differ. `resign` is the messages group's: a recorded body with the signed
 * blocks it sends back signed again with the emulator's key (messages/resign.ts).
 */
export async function checkDrift(
  dir: string,
  build: () => Promise<FastifyInstance>,
  timeline: VideoTimeline,
  resign: (body: unknown) => unknown,
): Promise<DriftReport> {
  const recordings = new Recordings(dir).all();
  const app = await build();
  try {
    await app.ready();
    const doc = (await app.openapi()) as unknown as {
      paths: Record<string, Record<string, Schema>>;
      components?: { schemas?: Record<string, Schema> };
    };
    const resolve = (s: Schema): Schema => {
      const ref = s.$ref;
      if (typeof ref !== 'string') return s;
      return resolve(doc.components?.schemas?.[ref.split('/').pop() as string] ?? {});
    };
    const answerSchema = (method: string, path: string): Schema | undefined => {
      for (const [pattern, item] of Object.entries(doc.paths)) {
        const regex = new RegExp(`^${pattern.replace(/\{[^}]+\}/g, '[^/]+')}$`);
        if (!regex.test(path)) continue;
        const op = item[method.toLowerCase()] as
          | { responses?: Record<string, { content?: Record<string, { schema?: Schema }> }> }
          | undefined;
        return op?.responses?.['200']?.content?.['application/json']?.schema;
      }
      return undefined;
    };

    const differences: DriftDifference[] = [];
    let responses = 0;
    /** The emulator's task ids for recorded ones, and how far its clock was moved for each. */
    const tasks = new Map<string, { id: string; advanced: number }>();
    const ordered = [...recordings].sort((x, y) => rank(x.recording) - rank(y.recording));

    for (const { file, recording } of ordered) {
      const { match, request } = recording;
      for (const [index, recorded] of recording.responses.entries()) {
        responses++;
        const found: Omit<DriftDifference, 'recording' | 'response'>[] = [];
        let path = match.path;
        const query = request.query ? `?${request.query.replaceAll(`=${REDACTED}`, '=drift')}` : '';
        const headers = AUTH[match.group];
        if (match.group === 'video') {
          const prepared = await prepareVideo(app, recording, recorded, tasks, timeline);
          if (prepared === undefined) continue;
          path = prepared;
        }
        const body = match.group === 'messages' ? resign(request.body) : request.body;
        const res = await app.inject({
          method: match.method as 'GET',
          url: `${path}${query}`,
          headers: {
            ...headers,
            ...(request.betas?.length ? { 'anthropic-beta': request.betas.join(',') } : {}),
            ...(body === undefined ? {} : { 'content-type': 'application/json' }),
          },
          ...(body === undefined ? {} : { payload: JSON.stringify(body) }),
        });
        if (match.group === 'video' && match.method === 'POST' && res.statusCode === 200) {
          const recordedId = (recorded.body as { data?: { task_id?: string } } | undefined)?.data
            ?.task_id;
          const id = (parse(res.body) as { data?: { task_id?: string } } | null)?.data?.task_id;
          if (recordedId && id) tasks.set(recordedId, { id, advanced: 0 });
        }
        if (res.statusCode !== recorded.status) {
          found.push({
            at: 'status',
            kind: 'status',
            emulator: res.statusCode,
            recorded: recorded.status,
          });
        } else if (recorded.stream) {
          const mine = eventsOf(res.body);
          const theirs = recorded.stream.map((e): [string, string] => [e.event ?? 'data', e.data]);
          const a = orderOf(mine);
          const b = orderOf(theirs);
          if (a.join() !== b.join())
            found.push({ at: 'events', kind: 'event_order', emulator: a, recorded: b });
          // Each kind of event compared by its first and last occurrence.
          for (const name of new Set(b)) {
            for (const pick of ['first', 'last'] as const) {
              const x =
                pick === 'first'
                  ? mine.find(([n]) => n === name)
                  : mine.findLast(([n]) => n === name);
              const y =
                pick === 'first'
                  ? theirs.find(([n]) => n === name)
                  : theirs.findLast(([n]) => n === name);
              if (x && y) compareShape(parse(x[1]), parse(y[1]), `event ${name} (${pick})`, found);
            }
          }
        } else {
          // parsed leniently: an answer that is not JSON is a `type` difference, not a failure
          compareShape(parse(res.body), recorded.body, 'body', found);
          compareEnums(recorded.body, answerSchema(match.method, path), 'body', resolve, found);
        }
        const seen = new Set<string>();
        for (const d of found) {
          const key = `${d.kind} ${d.at}`;
          if (seen.has(key)) continue;
          seen.add(key);
          differences.push({ recording: file, response: index, ...d });
        }
      }
    }
    return { drift: differences.length > 0, recordings: recordings.length, responses, differences };
  } finally {
    await app.close();
  }
}

/** Video creations first, so that polls find the emulator's task. */
const rank = (r: Recording) => (r.match.group === 'video' && r.match.method === 'POST' ? 0 : 1);

/**
 * The path of a recorded video request, aimed at the emulator's own task moved to the recorded status (its
 * clock advanced, or its status forced for a failure); undefined for a poll of a task whose
 * creation was not recorded.
 */
async function prepareVideo(
  app: FastifyInstance,
  recording: Recording,
  recorded: RecordedResponse,
  tasks: Map<string, { id: string; advanced: number }>,
  timeline: VideoTimeline,
): Promise<string | undefined> {
  const { match } = recording;
  if (match.method === 'POST') return match.path;
  const recordedId = match.path.split('/').pop() as string;
  const task = tasks.get(recordedId);
  if (!task) return undefined;
  const status = (recorded.body as { data?: { task_status?: string } } | undefined)?.data
    ?.task_status;
  const { queueMs, renderMs } = timeline;
  const target =
    status === 'processing'
      ? queueMs
      : status === 'succeed' || status === 'failed'
        ? queueMs + renderMs + 1
        : 0;
  if (status === 'failed') {
    await app.inject({
      method: 'POST',
      url: `/_emulator/tasks/${task.id}`,
      payload: { status: 'failed' },
    });
  } else if (target > task.advanced) {
    await app.inject({
      method: 'POST',
      url: '/_emulator/clock/advance',
      payload: { ms: target - task.advanced },
    });
    task.advanced = target;
  }
  return match.path.replace(recordedId, task.id);
}
