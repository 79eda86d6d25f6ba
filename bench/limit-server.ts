/**
 * The limit: a bare node:http server that reads each request body, parses it as JSON (as any
 * JSON API must) and answers with fixed bytes captured from the emulator. Nothing can answer
 * the same request with the same bytes faster on this machine. Reads `{routes}` from argv[2]
 * and listens on PORT. `BUSY_US=n` (calibration only, `npm run bench -- --calibrate`) spins n µs
 * of CPU before each answer: what n µs of work per request costs the limit's throughput.
 */
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';

interface Route {
  method: string;
  url: string;
  contentType: string;
  body: string;
}

const busyMs = Number(process.env.BUSY_US ?? 0) / 1000;
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
    if (busyMs > 0) {
      const until = performance.now() + busyMs;
      while (performance.now() < until) {
        // busy: the work a server would add to this request
      }
    }
    res.writeHead(200, route.headers).end(route.body);
  });
}).listen(Number(process.env.PORT), '127.0.0.1');
