import swagger from '@fastify/swagger';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import { Ajv, type Options as AjvOptions } from 'ajv';
import Fastify, {
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
  LogController,
} from 'fastify';
import secureJson from 'secure-json-parse';
import { chatGroup } from './chat/errors.js';
import chatApi from './chat/index.js';
import type { Config } from './config.js';
import controlRoutes from './control/index.js';
import { messagesGroup } from './messages/errors.js';
import messagesApi from './messages/index.js';
import { createDeps, type Deps } from './platform/clock.js';
import { GatewayError } from './platform/errors.js';
import type { Fault } from './platform/faults.js';
import type { GroupSpec, StreamFault } from './platform/group.js';
import { redactUrl, SECRET_HEADERS } from './platform/journal.js';
import { createState, type EmulatorState } from './state.js';
import { loadClip } from './video/clip.js';
import { videoGroup } from './video/errors.js';
import videoApi from './video/index.js';
import media from './video/media-routes.js';

declare module 'fastify' {
  interface FastifyRequest {
    /** Opaque id of the API key that made the request (never the key itself). */
    owner: string;
    /** Emulator time at arrival. */
    receivedAt: number;
    /** The request body as received, kept for the journal. */
    rawBody: string | undefined;
    /** The injected fault this request got, for the journal. */
    fault: string | undefined;
    /** A `stream_error` fault asked for by header, waiting to see whether the request streams. */
    pendingFault: Fault | undefined;
    /** A `stream_error` fault the route applies while streaming. */
    streamFault: StreamFault | undefined;
  }
  interface FastifyInstance {
    emulator: EmulatorState;
  }
}

/** Upstream accepts 32 MB request bodies (upstream-facts B2, B4). */
export const BODY_LIMIT = 32 * 1024 * 1024;

const AJV_BASE: AjvOptions = { strict: false, useDefaults: true, allErrors: false, verbose: true };

/**
 * Bodies are validated without type coercion (`"5"` is not `5`); query strings and params are
 * text on the wire, so there numbers are coerced.
 */
function validatorCompiler() {
  const strict = new Ajv({ ...AJV_BASE, coerceTypes: false });
  const coercing = new Ajv({ ...AJV_BASE, coerceTypes: true });
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) =>
    (httpPart === 'body' ? strict : coercing).compile(schema);
}

const GROUPS: ReadonlyArray<[string, GroupSpec]> = [
  ['/videogen/', videoGroup],
  ['/messages-api/', messagesGroup],
  ['/v1/', chatGroup],
];

/** Router-level failures (a bad URL, an over-long path parameter) in the group's own shape. */
function renderFrameworkError(error: FastifyError, request: FastifyRequest, reply: FastifyReply) {
  const status = error.statusCode ?? 400;
  const group = GROUPS.find(([prefix]) => request.url.startsWith(prefix))?.[1];
  if (!group) {
    reply.code(status).send({ error: { type: 'invalid_request_error', message: error.message } });
    return;
  }
  if (group.requestIdHeader) reply.header(group.requestIdHeader, request.id);
  const rendered = group.render(new GatewayError(status, error.message), request);
  reply.code(rendered.status).send(rendered.body);
}

/** Logs each request once, when it completes (Fastify's default also logs its arrival). */
class OneLinePerRequest extends LogController {
  override incomingRequest(): void {}

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
  ): void {
    const line = {
      method: request.method,
      url: redactUrl(request.url),
      statusCode: reply.statusCode,
      responseTime: reply.elapsedTime,
    };
    if (error) reply.log.error({ ...line, err: error }, 'request errored');
    else reply.log.info(line, 'request completed');
  }
}

/** Builds the whole emulator as a Fastify instance. It never listens and never reads env. */
export async function buildApp(
  config: Config,
  deps: Deps = createDeps(),
): Promise<FastifyInstance> {
  const state = createState(config, deps);
  const perRequestLogs = ['info', 'debug', 'trace'].includes(config.logLevel);
  const app = Fastify({
    logger: {
      level: config.logLevel,
      redact: {
        paths: [...SECRET_HEADERS].map((h) => `req.headers["${h}"]`),
        censor: '[REDACTED]',
      },
      ...(deps.logStream ? { stream: deps.logStream } : {}),
    },
    logController: new OneLinePerRequest(),
    // Request-scoped child loggers only when per-request lines are on (info and below).
    childLoggerFactory: (logger, bindings, options) =>
      perRequestLogs ? logger.child(bindings, options) : logger,
    bodyLimit: BODY_LIMIT,
    // close() ends open connections and streams at once instead of waiting for them.
    forceCloseConnections: true,
    genReqId: () => deps.ids.next('request'),
    requestIdHeader: false,
    routerOptions: { ignoreTrailingSlash: true, maxParamLength: 1024 },
    frameworkErrors: renderFrameworkError,
  }).withTypeProvider<TypeBoxTypeProvider>();

  app.decorate('emulator', state);
  app.decorateRequest('owner', '');
  app.decorateRequest('receivedAt', 0);
  app.decorateRequest('rawBody', undefined);
  app.decorateRequest('fault', undefined);
  app.decorateRequest('pendingFault', undefined);
  app.decorateRequest('streamFault', undefined);
  app.setValidatorCompiler(validatorCompiler());

  app.removeAllContentTypeParsers();
  app.addContentTypeParser(
    'application/json',
    { parseAs: 'string', bodyLimit: BODY_LIMIT },
    (request, body, done) => {
      const text = body as string;
      request.rawBody = text;
      if (text.length === 0) {
        return done(new GatewayError(400, 'Request body is empty; a JSON object is required.'));
      }
      try {
        done(null, secureJson.parse(text, { protoAction: 'error', constructorAction: 'error' }));
      } catch (err) {
        done(new GatewayError(400, `Request body is not valid JSON: ${(err as Error).message}`));
      }
    },
  );

  app.addHook('onClose', async () => state.close());

  await app.register(swagger, {
    openapi: {
      info: {
        title: 'Media and Text Generation Gateway (emulator)',
        version: '1.0.0',
        description:
          'Video tasks, messages and chat completions, plus the /_emulator control surface.',
      },
    },
  });

  await app.register(controlRoutes, { prefix: '/_emulator', state });
  await app.register(media, { prefix: '/media', state, clip: loadClip(config.fixturesDir) });
  await app.register(videoApi, { prefix: '/videogen', state });
  await app.register(messagesApi, { prefix: '/messages-api', state });
  await app.register(chatApi, { prefix: '/v1', state });

  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({
      error: {
        type: 'not_found',
        message: `No route ${request.method} ${request.url.split('?')[0]}`,
      },
    }),
  );

  if (state.keyring.open) {
    app.log.warn('GATEWAY_API_KEYS is not set: every non-empty API key is accepted');
  }
  return app;
}
