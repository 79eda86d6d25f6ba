import { Type } from '@sinclair/typebox';
import { DEFAULT_SESSION } from '../harness/session.js';
import { GatewayError } from '../platform/errors.js';
import { ruleProblem } from '../text/fixtures.js';
import { MAX_STUB_BYTES, MAX_STUBS } from '../text/replies.js';
import {
  type ControlApp,
  type ControlOptions,
  compiled,
  errors,
  SessionQuery,
  sessionOf,
} from './context.js';
import { HealthSchema, StubListSchema, StubSchema, StubViewSchema } from './schemas.js';

/** Stubs, at `/replies`: reply rules added at run time (docs/stubs.md "Stubs"). */
export function stubRoutes(app: ControlApp, { text }: Pick<ControlOptions, 'text'>): void {
  const { replies } = text;

  app.post(
    '/replies',
    {
      schema: {
        summary: 'Add a stub: a reply rule for this session that wins over fixture files',
        body: StubSchema,
        response: { 200: StubViewSchema, ...errors },
      },
    },
    async (request) => {
      const problem = ruleProblem(request.body);
      if (problem) throw new GatewayError(400, problem);
      const session = sessionOf(request) ?? DEFAULT_SESSION;
      const added = await compiled(() => replies.addStub(request.body, session));
      if (!added) {
        throw new GatewayError(
          400,
          `At most ${MAX_STUBS} stubs, ${MAX_STUB_BYTES} bytes of JSON in all, can be held.`,
        );
      }
      return added;
    },
  );

  app.get(
    '/replies',
    {
      schema: {
        summary: 'Stubs, in the order they are tried',
        querystring: SessionQuery,
        response: { 200: StubListSchema, ...errors },
      },
    },
    async (request) => ({
      replies: await replies.listStubs(sessionOf(request, request.query.session)),
    }),
  );

  app.delete(
    '/replies',
    {
      schema: {
        summary: "Remove every stub (or one session's)",
        querystring: SessionQuery,
        response: { 200: HealthSchema, ...errors },
      },
    },
    async (request) => {
      await replies.clearStubs(sessionOf(request, request.query.session));
      return { status: 'ok' as const };
    },
  );

  app.delete(
    '/replies/:id',
    {
      schema: {
        summary: 'Remove one stub',
        params: Type.Object({
          id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
        }),
        response: { 200: HealthSchema, ...errors },
      },
    },
    async (request) => {
      if (!(await replies.removeStub(request.params.id, sessionOf(request)))) {
        throw new GatewayError(404, `No stub ${request.params.id}`);
      }
      return { status: 'ok' as const };
    },
  );
}
