/**
 * The bare-Fastify baseline: for each route it parses the body like any JSON route and answers
 * with fixed bytes captured from the emulator. Reads `{routes}` from argv[2] (a JSON file) and
 * listens on PORT.
 */
import { readFileSync } from 'node:fs';
import Fastify from 'fastify';

interface Route {
  method: 'GET' | 'POST';
  url: string;
  contentType: string;
  body: string;
}

const spec = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as { routes: Route[] };
const app = Fastify({ logger: false, bodyLimit: 32 * 1024 * 1024 });
for (const route of spec.routes) {
  // Bytes, as the limit and the emulator send them (a string is encoded at every answer).
  const bytes = Buffer.from(route.body);
  app.route({
    method: route.method,
    url: route.url,
    handler: async (_request, reply) => reply.type(route.contentType).send(bytes),
  });
}
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
