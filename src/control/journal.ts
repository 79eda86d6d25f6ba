import { Type } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import {
  type Journal,
  type JournalFilter,
  MAX_JOURNAL_WAITS,
  MAX_JOURNAL_WATCHERS,
} from '../harness/journal.js';
import { SESSION_PATTERN } from '../harness/session.js';
import { GatewayError } from '../platform/errors.js';
import { holdOpen, reqIdField } from '../platform/request.js';
import {
  type ControlApp,
  type ControlOptions,
  compiled,
  errors,
  liveStreamHead,
  openLiveStream,
  SessionQuery,
  sessionOf,
} from './context.js';
import {
  HealthSchema,
  JournalDetailSchema,
  JournalEntrySchema,
  JournalQuerySchema,
  JournalSchema,
  JournalWaitQuerySchema,
  VerifiedSchema,
  VerifyFailedSchema,
  VerifySchema,
  WaitTimeoutSchema,
} from './schemas.js';

const WAIT_DEFAULT_MS = 30_000;

/**
 * What a live journal (`journal/stream`) may hold written but not yet taken by its client's
 * socket. A watcher past it has stopped reading: it is dropped (its connection closed), so that
 * a paused or stuck client cannot make the emulator buffer every request for it.
 */
export const JOURNAL_STREAM_MAX_BUFFERED = 1024 * 1024;

/** Each entry's event, made once however many watchers send it. */
const entryFrames = new WeakMap<object, string>();
const entryFrame = (entry: object): string => {
  let frame = entryFrames.get(entry);
  if (frame === undefined) {
    frame = `event: entry\ndata: ${JSON.stringify(entry)}\n\n`;
    entryFrames.set(entry, frame);
  }
  return frame;
};

/** A query's filter, compiled, in the session the call acts on. */
type FilterOf = (request: FastifyRequest, query: JournalFilter) => ReturnType<Journal['compile']>;

/** The journal of gateway requests: list, empty, watch live, read one, verify, wait for one. */
export function journalRoutes(
  app: ControlApp,
  { journal, setTimer }: Pick<ControlOptions, 'journal' | 'setTimer'>,
): void {
  const journalFilter: FilterOf = (request, query) =>
    compiled(() => journal.compile({ ...query, session: sessionOf(request, query.session) }));

  for (const url of ['/journal', '/requests']) listRoutes(app, url, journal, journalFilter);
  streamRoute(app, journal);
  entryRoute(app, journal);
  verifyRoute(app, journal, journalFilter);
  waitRoute(app, journal, journalFilter, setTimer);
}

/** `GET` and `DELETE` of the journal, at `url`. */
function listRoutes(app: ControlApp, url: string, journal: Journal, journalFilter: FilterOf) {
  app.get(
    url,
    {
      schema: {
        summary:
          url === '/journal'
            ? 'Journal of gateway requests, oldest first, filtered'
            : 'The journal (alias of /_emulator/journal)',
        querystring: JournalQuerySchema,
        response: { 200: JournalSchema, ...errors },
      },
    },
    async (request) => ({
      requests: await journal.list(journalFilter(request, request.query)),
    }),
  );
  app.delete(
    url,
    {
      schema: {
        summary: "Empty the journal (or one session's part of it)",
        querystring: SessionQuery,
        response: { 200: HealthSchema, ...errors },
      },
    },
    async (request) => {
      const session = sessionOf(request, request.query.session);
      if (session === undefined) await journal.reset();
      else await journal.resetSession(session);
      return { status: 'ok' as const };
    },
  );
}

/** The live journal: each entry as it is journaled, as server-sent events. */
function streamRoute(app: ControlApp, journal: Journal) {
  /** Live journals dropped for not reading (each is logged with this count). */
  let journalStreamsDropped = 0;

  app.get(
    '/journal/stream',
    {
      schema: {
        summary:
          'The live journal: each request as it is journaled, as server-sent events (`event: entry`)',
        querystring: Type.Object(
          { session: Type.Optional(Type.String({ pattern: SESSION_PATTERN })) },
          { additionalProperties: false },
        ),
        produces: ['text/event-stream'],
        response: {
          200: {
            description: 'one `event: entry` with a journal entry (without its response) each',
            content: { 'text/event-stream': { schema: { type: 'string' } } },
          },
          ...errors,
        },
      },
    },
    async (request, reply) => {
      const session = sessionOf(request, request.query.session);
      if (request.method === 'HEAD') return liveStreamHead(reply);
      const raw = reply.raw;
      const stop = journal.watch(
        (entry) => {
          if (session !== undefined && entry.session !== session) return;
          if (raw.destroyed) return; // gone: its 'close' stops the watch
          raw.write(entryFrame(entry));
          // Bytes the socket has not taken: a client that reads keeps this near zero.
          const buffered = raw.writableLength;
          if (buffered > JOURNAL_STREAM_MAX_BUFFERED) {
            if (typeof stop === 'function') stop();
            journalStreamsDropped++;
            request.log.warn(
              {
                ...reqIdField(request),
                bufferedBytes: buffered,
                limitBytes: JOURNAL_STREAM_MAX_BUFFERED,
                dropped: journalStreamsDropped,
              },
              'live journal dropped: its client stopped reading',
            );
            raw.destroy();
          }
        },
        () => raw.end(),
      );
      if (stop === 'closed') throw new GatewayError(503, 'The emulator is shutting down.');
      if (!stop) {
        throw new GatewayError(429, `At most ${MAX_JOURNAL_WATCHERS} live journals at once.`);
      }
      openLiveStream(reply);
      raw.write(': live journal\n\n');
      raw.once('close', stop);
    },
  );
}

/** One entry, with what was answered. */
function entryRoute(app: ControlApp, journal: Journal) {
  app.get(
    '/journal/:id',
    {
      schema: {
        summary: 'One journal entry, with what was answered (a JSON body, or the stream as sent)',
        params: Type.Object({ id: Type.String({ maxLength: 64 }) }),
        response: { 200: JournalDetailSchema, ...errors },
      },
    },
    async (request) => {
      const entry = await journal.get(request.params.id);
      const session = sessionOf(request);
      if (!entry || (session !== undefined && entry.session !== session)) {
        throw new GatewayError(404, `No journal entry ${request.params.id}`);
      }
      return entry;
    },
  );
}

/** How many requests match: 200, or 409 with the near misses. */
function verifyRoute(app: ControlApp, journal: Journal, journalFilter: FilterOf) {
  app.post(
    '/journal/verify',
    {
      schema: {
        summary: 'Check how many journaled requests match: 200, or 409 with the near misses',
        body: VerifySchema,
        response: { 200: VerifiedSchema, 409: VerifyFailedSchema, ...errors },
      },
    },
    async (request, reply) => {
      const count = request.body.count ?? { at_least: 1 };
      const result = await journal.verify(journalFilter(request, request.body.match), count);
      if (result.ok) return { status: 'ok' as const, matched: result.matched };
      const wanted = Object.entries(count)
        .map(([how, n]) => `${how.replace('_', ' ')} ${n}`)
        .join(' and ');
      return reply.code(409).send({
        error: {
          type: 'verification_failed' as const,
          message: `Expected ${wanted} matching request(s), found ${result.matched}.`,
        },
        matched: result.matched,
        near_misses: result.nearMisses,
      });
    },
  );
}

/** The first matching request, waited for up to `timeout_ms` (wall clock). */
function waitRoute(
  app: ControlApp,
  journal: Journal,
  journalFilter: FilterOf,
  setTimer: ControlOptions['setTimer'],
) {
  app.get(
    '/journal/wait',
    {
      schema: {
        summary: 'Wait for a matching request: 200 with the first, or 408 after timeout_ms',
        querystring: JournalWaitQuerySchema,
        response: { 200: JournalEntrySchema, 408: WaitTimeoutSchema, ...errors },
      },
    },
    async (request, reply) => {
      const { timeout_ms: timeoutMs = WAIT_DEFAULT_MS, ...query } = request.query;
      const gone = new AbortController();
      reply.raw.once('close', () => gone.abort());
      holdOpen(reply.raw); // the wait has its own bound (timeout_ms)
      const found = journal.wait(journalFilter(request, query), timeoutMs, setTimer, gone.signal);
      if (found === 'busy') {
        throw new GatewayError(429, `At most ${MAX_JOURNAL_WAITS} waits can be held at once.`);
      }
      const entry = await found;
      if (entry) return entry;
      return reply.code(408).send({
        error: {
          type: 'timeout' as const,
          message: `No matching request within ${timeoutMs} ms.`,
        },
      });
    },
  );
}
