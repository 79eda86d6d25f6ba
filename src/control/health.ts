import { Type } from '@sinclair/typebox';
import { SESSION_PATTERN } from '../harness/session.js';
import { type ControlApp, type ControlOptions, errors, sessionOf } from './context.js';
import { HealthSchema, ReadySchema } from './schemas.js';

/** What `POST /_emulator/reset?only=` can name: each is a registered feature's name. */
export const RESETTABLE = [
  'tasks',
  'cache',
  'faults',
  'stubs',
  'journal',
  'callbacks',
  'limits',
  'stats',
  'clock',
];

/** The emulator as a whole: liveness, readiness, and the reset of its stores. */
export function healthRoutes(
  app: ControlApp,
  options: Pick<ControlOptions, 'listening' | 'storeProblem' | 'reset'>,
): void {
  app.get(
    '/health',
    { schema: { summary: 'Liveness', response: { 200: HealthSchema } } },
    async () => ({ status: 'ok' as const }),
  );

  app.get(
    '/ready',
    {
      schema: {
        summary:
          'Readiness: 503 until the fixtures are loaded and the server listens, and while the state store (STATE_URL) cannot be used',
        response: { 200: ReadySchema, 503: ReadySchema },
      },
    },
    async (_request, reply) => {
      if (!options.listening()) return reply.code(503).send({ status: 'starting' as const });
      const problem = options.storeProblem?.();
      if (problem !== undefined) {
        return reply.code(503).send({ status: 'unavailable' as const, reason: problem });
      }
      return { status: 'ready' as const };
    },
  );

  app.post(
    '/reset',
    {
      schema: {
        summary: 'Empty every store, or only the parts named in `only`',
        querystring: Type.Object(
          {
            only: Type.Optional(
              Type.String({
                pattern: `^(${RESETTABLE.join('|')})(,(${RESETTABLE.join('|')}))*$`,
                description: `comma-separated: ${RESETTABLE.join(', ')}`,
              }),
            ),
            session: Type.Optional(
              Type.String({
                pattern: SESSION_PATTERN,
                description: 'only what this session made (the clock is shared and stays)',
              }),
            ),
          },
          { additionalProperties: false },
        ),
        response: { 200: HealthSchema, ...errors },
      },
    },
    async (request) => {
      const session = sessionOf(request, request.query.session);
      await options.reset(request.query.only?.split(','), session);
      return { status: 'ok' as const };
    },
  );
}

/** The OpenAPI document, made on its first request from every route's schema (platform/openapi.ts). */
export function openapiRoute(app: ControlApp): void {
  app.get('/openapi.json', { schema: { hide: true } }, () => app.openapi());
}
