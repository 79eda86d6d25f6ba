import { isIP } from 'node:net';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { GatewayError, neutralError } from '../platform/errors.js';
import { canonicalHost, hostOfHeader, isLocalhostName } from '../platform/host.js';
import { reqIdField } from '../platform/request.js';
import { redactUrl } from '../platform/secrets.js';
import { normalizeError } from '../platform/validation.js';
import { cacheRoutes } from './cache.js';
import { clockRoutes } from './clock.js';
import type { ControlOptions } from './context.js';
import { driftRoutes } from './drift.js';
import { faultRoutes } from './faults.js';
import { fixtureRoutes } from './fixtures.js';
import { healthRoutes, openapiRoute } from './health.js';
import { journalRoutes } from './journal.js';
import { metricsRoutes } from './metrics.js';
import { statsRoutes } from './stats.js';
import { stubRoutes } from './stubs.js';
import { taskListRoute, taskRoutes } from './tasks.js';
import { UI_PATHS, uiRoutes } from './ui.js';

export type { ControlOptions };

/** No query parameter at all (see the onRoute hook of controlRoutes). */
const NoQuery = Type.Object({}, { additionalProperties: false });

/** Methods that change the emulator's state, which a page of another origin may not call. */
const STATE_CHANGING = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** Whether an `Origin` names this emulator: the same host and port as the request's `Host`. */
function isOwnOrigin(origin: string, host: string | undefined): boolean {
  if (host === undefined) return false;
  let url: URL;
  try {
    url = new URL(origin);
  } catch {
    return false; // `null` (a sandboxed page, a file) and anything else that is no origin
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false;
  const defaultPort = url.protocol === 'http:' ? ':80' : ':443';
  const own = host.toLowerCase();
  const normalized = own.endsWith(defaultPort) ? own.slice(0, -defaultPort.length) : own;
  return url.host === normalized;
}

/**
 * Why a control call from a browser page is refused, or undefined. A page of another origin can
 * send a "simple" POST (no preflight) and wipe the emulator's state, token or not: a
 * state-changing call is let through when it carries no `Origin` (curl, SDKs, tests), when its
 * `Origin` is the emulator's own (the dashboard) or the browser says `Sec-Fetch-Site:
 * same-origin`, or when CORS_ORIGINS lets that origin in (@fastify/cors, registered before this
 * plugin, has then answered it with `Access-Control-Allow-Origin` in its own onRequest hook).
 * A page of another origin cannot read an answer (CORS), but through DNS rebinding a page of the
 * attacker's name is same-origin (its name now points here): so, without an admin token, a page
 * of the emulator's own origin must have reached it by a name it knows, to read as to write.
 */
function crossSiteProblem(
  request: FastifyRequest,
  reply: FastifyReply,
  trustedHost: ((host: string | undefined) => boolean) | undefined,
): string | undefined {
  const origin = request.headers.origin;
  const site = request.headers['sec-fetch-site'];
  const { host } = request.headers;
  const rebound = () =>
    trustedHost === undefined || trustedHost(host)
      ? undefined
      : `Host ${host} is not a name this emulator knows: a page reached through it may not call ${request.method} /_emulator routes (a page of another site can point a name of its own here: DNS rebinding). Open it through localhost, an IP address, HOST or PUBLIC_BASE_URL, or set EMULATOR_ADMIN_TOKEN.`;
  if (!STATE_CHANGING.has(request.method)) {
    // The dashboard's files hold no data: they load, and its data calls say what is wrong.
    const data = site === 'same-origin' && !OPEN_ROUTES.has(request.routeOptions.url ?? '');
    return data ? rebound() : undefined;
  }
  const allowed = origin !== undefined && reply.getHeader('access-control-allow-origin');
  if (allowed === origin || allowed === '*') return undefined;
  if (site === 'same-origin' || (origin !== undefined && isOwnOrigin(origin, host))) {
    return rebound();
  }
  if (origin !== undefined) {
    return `Origin ${origin} is not this emulator's: a page of another origin may not call ${request.method} /_emulator routes (set CORS_ORIGINS to let it).`;
  }
  if (site === 'cross-site') {
    return `A cross-site page may not call ${request.method} /_emulator routes (Sec-Fetch-Site: cross-site).`;
  }
  return undefined;
}

/**
 * Routes that never need the admin token: the probes, and the OpenAPI document, which holds no
 * data (the docs UI at /_emulator/docs, mounted outside this plugin, serves it too).
 */
const OPEN_ROUTES = new Set([
  '/_emulator/health',
  '/_emulator/ready',
  '/_emulator/openapi.json',
  ...UI_PATHS,
]);

/**
 * The emulator-only surface under `/_emulator`: clock, journal, faults, tasks, fixtures. Each
 * resource registers its own routes (a file apiece, beside this one); this plugin holds what
 * they all go through: the query check, the cross-site and admin-token checks, the error and
 * not-found answers.
 */
export const controlRoutes =
  (options: ControlOptions): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { adminToken } = options;
    const knownHosts = new Set(options.knownHosts.map(canonicalHost));
    /** Whether a Host header names localhost, an IP address, or a name the emulator knows. */
    const trustedHost = (header: string | undefined): boolean => {
      const host = hostOfHeader(header);
      return (
        host !== undefined && (isIP(host) !== 0 || isLocalhostName(host) || knownHosts.has(host))
      );
    };

    // A change (POST, PUT, DELETE) that declares no query takes none: `/reset?onyl=faults`
    // mistyped would otherwise reset everything. (Reads may be given a cache-buster.)
    app.addHook('onRoute', (route) => {
      const methods = Array.isArray(route.method) ? route.method : [route.method];
      if (methods.every((m) => m === 'GET' || m === 'HEAD') || route.schema?.querystring) return;
      route.schema = { ...route.schema, querystring: NoQuery };
    });

    app.addHook('onRequest', (request, reply, done) => {
      const crossSite = crossSiteProblem(request, reply, adminToken ? undefined : trustedHost);
      if (crossSite !== undefined) return done(new GatewayError(403, crossSite));
      const open = OPEN_ROUTES.has(request.routeOptions.url ?? '');
      if (
        !open &&
        adminToken !== undefined &&
        request.headers['x-emulator-admin-token'] !== adminToken
      ) {
        return done(new GatewayError(401, 'x-emulator-admin-token header is missing or wrong.'));
      }
      const begun = open ? undefined : options.begin?.();
      if (begun === undefined) return done();
      begun.then(() => done(), done);
    });

    app.setErrorHandler((err, request, reply) => {
      const error = normalizeError(err);
      // A 500 is a bug: logged with the request id, as the API groups log theirs.
      if (error.status >= 500) request.log.error({ ...reqIdField(request), err }, 'request failed');
      const where = error.options.issue?.path.join('.');
      const message = where ? `${where} ${error.options.issue?.problem}` : error.message;
      return reply.code(error.status).send(neutralError(error.status, message));
    });

    app.setNotFoundHandler((request) => {
      throw new GatewayError(404, `No emulator route ${request.method} ${redactUrl(request.url)}`);
    });

    // The OpenAPI document lists the paths in the order they were registered: this order.
    // (GET /tasks, then /cache, then the other task routes, as the document has them.)
    healthRoutes(app, options);
    clockRoutes(app, options);
    journalRoutes(app, options);
    taskListRoute(app, options);
    cacheRoutes(app, options);
    taskRoutes(app, options);
    faultRoutes(app, options);
    stubRoutes(app, options);
    fixtureRoutes(app, options);
    metricsRoutes(app, options);
    statsRoutes(app, options);
    driftRoutes(app, options);
    await app.register(uiRoutes(adminToken !== undefined));
    openapiRoute(app);
  };
