import { defaultKind, MAX_FAULT_BYTES, MAX_FAULT_RULES } from '../harness/faults.js';
import { DEFAULT_SESSION } from '../harness/session.js';
import { GatewayError } from '../platform/errors.js';
import { type ControlApp, type ControlOptions, compiled, errors, sessionOf } from './context.js';
import { ruleCollectionRoutes } from './rule-routes.js';
import { FaultListSchema, FaultRuleSchema, FaultViewSchema } from './schemas.js';

/** Fault rules: add, list, remove (docs/testing-your-client.md "Testing your client"). */
export function faultRoutes(app: ControlApp, { faults }: Pick<ControlOptions, 'faults'>): void {
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
      const kind = rule.kind ?? defaultKind(rule);
      if (rule.match?.path !== undefined && rule.path !== undefined) {
        throw new GatewayError(400, 'path is given twice: as path and as match.path');
      }
      if (rule.match?.method !== undefined && rule.method !== undefined) {
        throw new GatewayError(400, 'method is given twice: as method and as match.method');
      }
      if (rule.after_bytes !== undefined && kind !== 'disconnect') {
        throw new GatewayError(400, `after_bytes is only for kind "disconnect" (not "${kind}")`);
      }
      if (rule.seed !== undefined && rule.probability === undefined) {
        throw new GatewayError(400, 'seed needs probability');
      }
      if (kind === 'error' && rule.status === undefined) {
        throw new GatewayError(400, 'status is required for kind "error"');
      }
      if (kind === 'delay' && rule.delay_ms === undefined) {
        throw new GatewayError(400, 'delay_ms is required for kind "delay"');
      }
      if (kind !== 'delay' && rule.delay_ms !== undefined) {
        throw new GatewayError(400, `delay_ms is only for kind "delay" (not "${kind}")`);
      }
      const session = sessionOf(request) ?? DEFAULT_SESSION;
      const added = await compiled(() => faults.add(rule, session));
      if (!added)
        throw new GatewayError(
          400,
          `At most ${MAX_FAULT_RULES} fault rules, ${MAX_FAULT_BYTES} bytes of JSON in all, can be active.`,
        );
      return added;
    },
  );

  ruleCollectionRoutes(app, {
    path: '/faults',
    noun: 'fault rule',
    summaries: {
      list: 'Active fault rules',
      clear: "Remove every fault rule (or one session's)",
      remove: 'Remove one fault rule',
    },
    listSchema: FaultListSchema,
    list: async (session) => ({ faults: await faults.list(session) }),
    clear: (session) => (session === undefined ? faults.reset() : faults.resetSession(session)),
    remove: (id, session) => faults.remove(id, session),
  });
}
