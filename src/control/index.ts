import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Clock } from '../platform/clock.js';
import { GatewayError } from '../platform/errors.js';
import { type Faults, MAX_FAULT_RULES } from '../platform/faults.js';
import type { Journal } from '../platform/journal.js';
import { normalizeError } from '../platform/validation.js';
import { FixtureError, type Fixtures } from '../text/fixtures.js';
import type { TextEngine } from '../text/index.js';
import type { Callbacks } from '../video/callbacks.js';
import { TaskRecordSchema } from '../video/schemas.js';
import type { VideoService } from '../video/service.js';
import {
  AdvanceSchema,
  CallbackListSchema,
  ClockSchema,
  ControlErrorSchema,
  FaultListSchema,
  FaultRuleSchema,
  FaultViewSchema,
  FixturesViewSchema,
  ForceTaskSchema,
  HealthSchema,
  JournalSchema,
  ReadySchema,
} from './schemas.js';

const errors = { '4xx': ControlErrorSchema };

export interface ControlOptions {
  /** Whether the server listens (fixtures are loaded before the app exists). */
  listening(): boolean;
  /** When set, every route but health and ready needs it in `x-emulator-admin-token`. */
  adminToken: string | undefined;
  clock: Clock;
  journal: Journal;
  faults: Faults;
  video: VideoService;
  callbacks: Callbacks;
  text: Pick<TextEngine, 'fixtures' | 'reloadFixtures'>;
  /** Empties every store and puts the clock back to real time. */
  reset(only?: readonly string[]): void;
}

/** What `POST /_emulator/reset?only=` can name: each is a registered feature's name. */
export const RESETTABLE = [
  'tasks',
  'cache',
  'faults',
  'stubs',
  'journal',
  'callbacks',
  'limits',
  'clock',
];

/** The emulator-only surface under `/_emulator`: clock, journal, faults, tasks, fixtures. */
export const controlRoutes =
  (options: ControlOptions): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { adminToken, clock, journal, faults, video, callbacks, text } = options;

    app.addHook('onRequest', (request, _reply, done) => {
      const open = request.routeOptions.url;
      if (adminToken === undefined || open === '/_emulator/health' || open === '/_emulator/ready')
        return done();
      if (request.headers['x-emulator-admin-token'] !== adminToken) {
        return done(new GatewayError(401, 'x-emulator-admin-token header is missing or wrong.'));
      }
      done();
    });

    app.setErrorHandler((err, _request, reply) => {
      const error = normalizeError(err);
      const where = error.options.issue?.path.join('.');
      const message = where ? `${where} ${error.options.issue?.problem}` : error.message;
      const type =
        error.status === 401
          ? 'authentication_error'
          : error.status === 404
            ? 'not_found_error'
            : error.status >= 500
              ? 'api_error'
              : 'invalid_request_error';
      return reply.code(error.status).send({ error: { type, message } });
    });

    app.setNotFoundHandler((request) => {
      throw new GatewayError(404, `No emulator route ${request.method} ${request.url}`);
    });

    const clockView = () => ({ now: clock.now(), offset_ms: clock.offsetMs() });

    app.get(
      '/health',
      { schema: { summary: 'Liveness', response: { 200: HealthSchema } } },
      async () => ({ status: 'ok' as const }),
    );

    app.get(
      '/ready',
      {
        schema: {
          summary: 'Readiness: 503 until the fixtures are loaded and the server listens',
          response: { 200: ReadySchema, 503: ReadySchema },
        },
      },
      async (_request, reply) =>
        options.listening()
          ? { status: 'ready' as const }
          : reply.code(503).send({ status: 'starting' as const }),
    );

    app.post(
      '/reset',
      {
        schema: {
          summary: 'Empty every store, or only the parts named in `only`',
          querystring: Type.Object({
            only: Type.Optional(
              Type.String({
                pattern: `^(${RESETTABLE.join('|')})(,(${RESETTABLE.join('|')}))*$`,
                description: `comma-separated: ${RESETTABLE.join(', ')}`,
              }),
            ),
          }),
          response: { 200: HealthSchema, ...errors },
        },
      },
      async (request) => {
        options.reset(request.query.only?.split(','));
        return { status: 'ok' as const };
      },
    );

    app.get(
      '/clock',
      { schema: { summary: 'Emulator time', response: { 200: ClockSchema, ...errors } } },
      async () => clockView(),
    );

    app.post(
      '/clock/advance',
      {
        schema: {
          summary: 'Move emulator time forward; due work runs at once',
          body: AdvanceSchema,
          response: { 200: ClockSchema, ...errors },
        },
      },
      async (request) => {
        clock.advance(request.body.ms);
        return clockView();
      },
    );

    app.get(
      '/requests',
      {
        schema: {
          summary: 'Journal of gateway requests',
          response: { 200: JournalSchema, ...errors },
        },
      },
      async () => ({ requests: journal.list() }),
    );

    app.delete(
      '/requests',
      { schema: { summary: 'Empty the journal', response: { 200: HealthSchema, ...errors } } },
      async () => {
        journal.reset();
        return { status: 'ok' as const };
      },
    );

    app.post(
      '/tasks/:task_id',
      {
        schema: {
          summary: 'Force a video task into a status (final from now on); its callback fires',
          params: Type.Object({ task_id: Type.String() }),
          body: ForceTaskSchema,
          response: { 200: TaskRecordSchema, ...errors },
        },
      },
      async (request) => {
        const { status, message } = request.body;
        const record = video.force(request.params.task_id, status, message, clock.now());
        if (!record) throw new GatewayError(404, `No task ${request.params.task_id}`);
        return record;
      },
    );

    app.get(
      '/callbacks',
      {
        schema: {
          summary: 'Video callback deliveries, oldest first',
          response: { 200: CallbackListSchema, ...errors },
        },
      },
      async () => ({ callbacks: callbacks.list(), dropped: callbacks.dropped }),
    );

    app.post(
      '/faults',
      {
        schema: {
          summary: "Add a fault rule: matching requests fail in their group's own way",
          body: FaultRuleSchema,
          response: { 200: FaultViewSchema, ...errors },
        },
      },
      async (request) => {
        const rule = request.body;
        const kind =
          rule.kind ??
          (rule.delay_ms !== undefined && rule.status === undefined ? 'delay' : 'error');
        if (kind === 'error' && rule.status === undefined) {
          throw new GatewayError(400, 'status is required for kind "error"');
        }
        if (kind === 'delay' && rule.delay_ms === undefined) {
          throw new GatewayError(400, 'delay_ms is required for kind "delay"');
        }
        if (kind !== 'delay' && rule.delay_ms !== undefined) {
          throw new GatewayError(400, `delay_ms is only for kind "delay" (not "${kind}")`);
        }
        const added = faults.add(rule);
        if (!added)
          throw new GatewayError(400, `At most ${MAX_FAULT_RULES} fault rules can be active.`);
        return added;
      },
    );

    app.get(
      '/faults',
      { schema: { summary: 'Active fault rules', response: { 200: FaultListSchema, ...errors } } },
      async () => ({ faults: faults.list() }),
    );

    app.delete(
      '/faults',
      {
        schema: { summary: 'Remove every fault rule', response: { 200: HealthSchema, ...errors } },
      },
      async () => {
        faults.reset();
        return { status: 'ok' as const };
      },
    );

    const fixturesView = (fixtures: Fixtures) => ({
      rules: fixtures.rules,
      blocked_terms: fixtures.blockedTerms,
    });

    app.get(
      '/fixtures',
      {
        schema: {
          summary: 'Active scripted-reply rules (first match wins) and blocked terms',
          response: { 200: FixturesViewSchema, ...errors },
        },
      },
      async () => fixturesView(text.fixtures()),
    );

    app.post(
      '/fixtures/reload',
      {
        schema: {
          summary: 'Read FIXTURES_DIR again (on an error the active fixtures stay)',
          response: { 200: FixturesViewSchema, ...errors },
        },
      },
      async () => {
        try {
          return fixturesView(text.reloadFixtures());
        } catch (err) {
          if (err instanceof FixtureError) throw new GatewayError(400, err.message);
          throw err;
        }
      },
    );

    app.get('/openapi.json', { schema: { hide: true } }, async () => app.swagger());
  };
