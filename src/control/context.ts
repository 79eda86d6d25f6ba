import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { Faults } from '../harness/faults.js';
import type { Journal } from '../harness/journal.js';
import { MatchError } from '../harness/match.js';
import type { Metrics } from '../harness/metrics.js';
import { readSession, SESSION_HEADER, SESSION_PATTERN } from '../harness/session.js';
import type { Stats } from '../harness/stats.js';
import type { Clock, SetTimer } from '../platform/clock.js';
import { GatewayError } from '../platform/errors.js';
import { holdOpen } from '../platform/request.js';
import type { DriftReport } from '../record/drift.js';
import type { TextEngine } from '../text/index.js';
import type { CallbackLog } from '../video/callbacks.js';
import type { VideoService } from '../video/service.js';
import { ControlErrorSchema } from './schemas.js';

/** The control plugin's options; each resource's routes take the few they use. */
export interface ControlOptions {
  /** Whether the server listens (fixtures are loaded before the app exists). */
  listening(): boolean;
  /** When set, every route but health, ready and openapi.json needs `x-emulator-admin-token`. */
  adminToken: string | undefined;
  clock: Clock;
  journal: Journal;
  faults: Faults;
  video: VideoService;
  callbacks: CallbackLog;
  text: Pick<TextEngine, 'fixtures' | 'reloadFixtures' | 'replies' | 'promptCache'>;
  /** Wall-clock timers, for `journal/wait`. */
  setTimer: SetTimer;
  metrics: Metrics;
  /** Traffic by emulator second (`/_emulator/stats`). */
  stats: Stats;
  /**
   * Names a browser page may reach the emulator by to change its state when no admin token is
   * set, besides localhost and IP addresses: HOST, PUBLIC_BASE_URL's host, the machine's name.
   */
  knownHosts: string[];
  /** RECORDINGS_DIR, the drift check's default directory. */
  recordingsDir: string | undefined;
  drift(dir: string): Promise<DriftReport>;
  /** Empties every store and puts the clock back to real time; or parts; or one session's. */
  reset(only?: readonly string[], session?: string): void | Promise<void>;
  /** Shared state: what a call waits for first (the clock and the rules as they are now). */
  begin?: () => Promise<void> | undefined;
  /** Shared state: why the store cannot be used now, if it cannot (`/ready` says it). */
  storeProblem?: () => string | undefined;
  /** Shared state: tells every replica the fixtures were read again. */
  fixturesReloaded?: () => Promise<void>;
}

/** The control plugin's instance, on which each resource registers its routes. */
export type ControlApp = Parameters<FastifyPluginAsyncTypebox>[0];

export const errors = { '4xx': ControlErrorSchema };

/**
 * The session a control call acts on: its `x-emulator-session` header, else the `session` it
 * names in its query (reads and resets), else none (reads see every session).
 */
export function sessionOf(request: FastifyRequest, named?: string): string | undefined {
  if (request.headers[SESSION_HEADER] === undefined) return named;
  const session = readSession(request);
  if (named !== undefined && named !== session) {
    throw new GatewayError(400, `session: ${named} differs from the ${SESSION_HEADER} header`);
  }
  return session;
}

export const SessionField = Type.Optional(Type.String({ pattern: SESSION_PATTERN }));

/** `?session=`: narrows a read, or a removal, to one session, as the session header does. */
export const SessionQuery = Type.Object({ session: SessionField }, { additionalProperties: false });

/** `?session=&limit=`: a list of one session (or of all), at most `limit` long. */
export const ListQuery = (most: number, fallback: number) =>
  Type.Object(
    {
      session: SessionField,
      limit: Type.Optional(Type.Integer({ minimum: 1, maximum: most, default: fallback })),
    },
    { additionalProperties: false },
  );

/** A match that cannot be compiled is the caller's 400, naming the field. */
export function compiled<T>(make: () => T): T {
  try {
    return make();
  } catch (err) {
    if (err instanceof MatchError) throw new GatewayError(400, err.message);
    throw err;
  }
}

/** The headers of a live event stream (`/journal/stream`, `/stats/stream`). */
const LIVE_STREAM_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache',
  'x-accel-buffering': 'no',
} as const;

/**
 * A HEAD of a live stream: its GET's headers, without a stream to hold (Node drops a HEAD's body
 * writes, so a watch would never flush its headers and would hold a live stream's slot for ever).
 */
export const liveStreamHead = (reply: FastifyReply) => reply.headers(LIVE_STREAM_HEADERS).send();

/** Takes the answer over as a live event stream: its headers sent, its socket held open. */
export function openLiveStream(reply: FastifyReply): FastifyReply['raw'] {
  reply.hijack();
  reply.raw.writeHead(200, LIVE_STREAM_HEADERS);
  holdOpen(reply.raw);
  return reply.raw;
}
