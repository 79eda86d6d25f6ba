/**
 * The limit: a bare node:http server that reads each request body, parses it as JSON (as any
 * JSON API must) and answers with fixed bytes captured from the emulator. Nothing can answer
 * the same request with the same bytes faster on this machine. Reads `{routes}` from argv[2]
 * and listens on PORT.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

interface Route {
  method: string;
  url: string;
  contentType: string;
  body: string;
}

const spec = JSON.parse(readFileSync(process.argv[2] as string, 'utf8')) as { routes: Route[] };
const routes = new Map(
  spec.routes.map((r) => [
    `${r.method} ${r.url}`,
    {
      body: Buffer.from(r.body),
      headers: { 'content-type': r.contentType, 'content-length': Buffer.byteLength(r.body) },
    },
  ]),
);

createServer((req, res) => {
  const chunks: Buffer[] = [];
  req.on('data', (chunk: Buffer) => chunks.push(chunk));
  req.on('end', () => {
    if (chunks.length > 0) JSON.parse(Buffer.concat(chunks).toString('utf8'));
    const route = routes.get(`${req.method} ${req.url}`);
    if (!route) {
      res.writeHead(404).end();
      return;
    }
    res.writeHead(200, route.headers).end(route.body);
  });
}).listen(Number(process.env.PORT), '127.0.0.1');
