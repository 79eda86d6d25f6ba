import { DEFAULT_SESSION } from '../harness/session.js';
import { GatewayError } from '../platform/errors.js';
import { ruleProblem } from '../text/fixtures.js';
import { MAX_STUB_BYTES, MAX_STUBS } from '../text/replies.js';
import { type ControlApp, type ControlOptions, compiled, errors, sessionOf } from './context.js';
import { ruleCollectionRoutes } from './rule-routes.js';
import { StubListSchema, StubSchema, StubViewSchema } from './schemas.js';

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

  ruleCollectionRoutes(app, {
    path: '/replies',
    noun: 'stub',
    summaries: {
      list: 'Stubs, in the order they are tried',
      clear: "Remove every stub (or one session's)",
      remove: 'Remove one stub',
    },
    listSchema: StubListSchema,
    list: async (session) => ({ replies: await replies.listStubs(session) }),
    clear: (session) => replies.clearStubs(session),
    remove: (id, session) => replies.removeStub(id, session),
  });
}
