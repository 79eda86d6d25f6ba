import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { FastifyPluginAsync } from 'fastify';
import { UI_DIR } from '../config.js';
import { GatewayError } from '../platform/errors.js';

/** The dashboard's files: the page, its script and style, and its icon. */
const FILES: Record<string, string> = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
  'favicon.svg': 'image/svg+xml',
};

/**
 * `/_emulator/ui`: the dashboard (docs/control.md "Dashboard"), one page whose data comes from the
 * documented `/_emulator/*` routes. Its files are built by `npm run build` into dist/ui and read
 * once, on first use. The page and its files need no admin token (they hold no data); the page
 * asks for the token and sends it with its data calls.
 */
export function uiRoutes(needsToken: boolean, dir = UI_DIR): FastifyPluginAsync {
  const cache = new Map<string, Buffer>();
  const load = async (name: string) => {
    let body = cache.get(name);
    if (body === undefined) {
      try {
        body = await readFile(join(dir, name));
      } catch {
        throw new GatewayError(503, `The dashboard is not built (no ${name}): run npm run build.`);
      }
      // The page asks for the admin token before its first data call when one is needed.
      if (name === 'index.html' && needsToken) {
        body = Buffer.from(body.toString().replace('<body>', '<body data-token="required">'));
      }
      cache.set(name, body);
    }
    return body;
  };
  return async (app) => {
    const send = (name: string) => ({
      schema: { hide: true },
      handler: async (_request: unknown, reply: import('fastify').FastifyReply) =>
        reply
          .type(FILES[name] as string)
          .header('cache-control', 'no-cache')
          // No other site may frame the dashboard and lead a click onto its buttons.
          .header('x-frame-options', 'DENY')
          .header('content-security-policy', "frame-ancestors 'none'")
          .header('x-content-type-options', 'nosniff')
          .send(await load(name)),
    });
    app.get('/ui', send('index.html'));
    for (const name of Object.keys(FILES)) app.get(`/ui/${name}`, send(name));
  };
}

/** The control routes that need no admin token. */
export const UI_PATHS = ['/_emulator/ui', ...Object.keys(FILES).map((f) => `/_emulator/ui/${f}`)];
