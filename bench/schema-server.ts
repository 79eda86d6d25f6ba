/**
 * The framework baseline: a Fastify route at the emulator's URL with the emulator's own request
 * and response schemas (validated and serialized by the emulator's own compilers, as the
 * emulator's routes are), answering the bytes the emulator answered, and nothing else: no key,
 * no journal, no reply engine. What any schema-validated Fastify route pays for this request;
 * the emulator's own work is what it adds to this. Reads `{routes}` from argv[2] and listens on
 * PORT.
 */
import { readFileSync } from 'node:fs';
import type { TSchema } from '@sinclair/typebox';
import Fastify from 'fastify';
import { ChatCompletionRequestSchema, ChatCompletionSchema } from '../src/chat/schemas.js';
import { MessageSchema, MessagesRequestSchema } from '../src/messages/schemas.js';
import { lazySerializers, validatorFactory } from '../src/platform/validation.js';
import {
  CreatedEnvelopeSchema,
  TaskEnvelopeSchema,
  TaskParamsSchema,
  Text2VideoSchema,
} from '../src/video/schemas.js';

interface Route {
  method: 'GET' | 'POST';
  url: string;
  contentType: string;
  body: string;
}

/** The emulator's route for a bench URL: its path pattern and schemas. */
interface RouteSchemas {
  path: string;
  body?: TSchema;
  params?: TSchema;
  /** The 200 answer's schema, for JSON answers. */
  answer: TSchema;
}

function schemasOf(route: Route): RouteSchemas {
  if (route.url === '/v1/chat/completions') {
    return { path: route.url, body: ChatCompletionRequestSchema, answer: ChatCompletionSchema };
  }
  if (route.url === '/messages-api/v1/messages') {
    return { path: route.url, body: MessagesRequestSchema, answer: MessageSchema };
  }
  if (route.url === '/videogen/v1/videos/text2video') {
    return { path: route.url, body: Text2VideoSchema, answer: CreatedEnvelopeSchema };
  }
  if (route.url.startsWith('/videogen/v1/videos/text2video/')) {
    return {
      path: '/videogen/v1/videos/text2video/:id',
      params: TaskParamsSchema,
      answer: TaskEnvelopeSchema,
    };
  }
  throw new Error(`no emulator route known for ${route.url}`);
}

const spec = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as { routes: Route[] };
const app = Fastify({
  logger: false,
  bodyLimit: 32 * 1024 * 1024,
  schemaController: {
    compilersFactory: { buildValidator: validatorFactory, buildSerializer: lazySerializers() },
  },
});
for (const route of spec.routes) {
  const { path, body, params, answer } = schemasOf(route);
  const json = route.contentType.startsWith('application/json');
  // A JSON answer goes through the route's serializer, as the emulator's does; a stream's
  // bytes are sent as they are.
  const payload: unknown = json ? JSON.parse(route.body) : Buffer.from(route.body);
  app.route({
    method: route.method,
    url: path,
    schema: {
      ...(body ? { body } : {}),
      ...(params ? { params } : {}),
      ...(json ? { response: { 200: answer } } : {}),
    },
    handler: async (_request, reply) => reply.type(route.contentType).send(payload),
  });
}
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
