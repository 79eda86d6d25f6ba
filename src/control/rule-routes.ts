import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { GatewayError } from '../platform/errors.js';
import { type ControlApp, errors, SessionQuery, sessionOf } from './context.js';
import { HealthSchema } from './schemas.js';

/** A collection of rules held per session (fault rules, stubs): how to list and remove them. */
export interface RuleCollection<L extends TSchema> {
  /** The collection's path under `/_emulator`, e.g. `/faults`. */
  path: string;
  /** What one rule is called in a 404, e.g. `fault rule`. */
  noun: string;
  summaries: { list: string; clear: string; remove: string };
  /** The answer of the list route. */
  listSchema: L;
  /** The rules a session sees (every session's when none is given), in the order they are tried. */
  list(session: string | undefined): Promise<Static<L>>;
  /** Removes every rule, or one session's. */
  clear(session: string | undefined): void | Promise<void>;
  /** Removes one rule of the session (any session's when none is given); false: none such. */
  remove(id: number, session: string | undefined): boolean | Promise<boolean>;
}

const RuleIdParams = Type.Object({
  id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
});

/**
 * The list and remove routes of a collection of rules, alike for every collection: `GET path`,
 * `DELETE path` (every rule, or the session's) and `DELETE path/:id`. Each collection's own add
 * route, whose checks are its own, stays with it.
 */
export function ruleCollectionRoutes<L extends TSchema>(
  app: ControlApp,
  rules: RuleCollection<L>,
): void {
  // (the list is checked against its schema where the collection is declared, and serialized
  // by it here)
  const listSchema: TSchema = rules.listSchema;
  const list: (session: string | undefined) => Promise<unknown> = rules.list;
  app.get(
    rules.path,
    {
      schema: {
        summary: rules.summaries.list,
        querystring: SessionQuery,
        response: { 200: listSchema, ...errors },
      },
    },
    (request) => list(sessionOf(request, request.query.session)),
  );

  app.delete(
    rules.path,
    {
      schema: {
        summary: rules.summaries.clear,
        querystring: SessionQuery,
        response: { 200: HealthSchema, ...errors },
      },
    },
    async (request) => {
      await rules.clear(sessionOf(request, request.query.session));
      return { status: 'ok' as const };
    },
  );

  app.delete(
    `${rules.path}/:id`,
    {
      schema: {
        summary: rules.summaries.remove,
        params: RuleIdParams,
        response: { 200: HealthSchema, ...errors },
      },
    },
    async (request) => {
      if (!(await rules.remove(request.params.id, sessionOf(request)))) {
        throw new GatewayError(404, `No ${rules.noun} ${request.params.id}`);
      }
      return { status: 'ok' as const };
    },
  );
}
