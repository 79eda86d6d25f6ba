import { type ControlApp, type ControlOptions, errors, ListQuery, sessionOf } from './context.js';
import { CacheListSchema } from './schemas.js';

/** The cache entries listed when no `limit` is given. */
const CACHE_LISTED = 200;

/** The prompt cache's live entries (never their text). */
export function cacheRoutes(
  app: ControlApp,
  { clock, text }: Pick<ControlOptions, 'clock' | 'text'>,
): void {
  app.get(
    '/cache',
    {
      schema: {
        summary:
          'Live prompt-cache entries, most recently used first: tokens, reads, time left (never the text)',
        querystring: ListQuery(1000, CACHE_LISTED),
        response: { 200: CacheListSchema, ...errors },
      },
    },
    async (request) => {
      const session = sessionOf(request, request.query.session);
      const now = clock.now();
      const [size, entries] = await Promise.all([
        text.promptCache.count(),
        text.promptCache.list(now, request.query.limit ?? CACHE_LISTED, session),
      ]);
      return { now, size, entries };
    },
  );
}
