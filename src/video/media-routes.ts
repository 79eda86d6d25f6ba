import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { Clock } from '../platform/clock.js';
import { type RefusedUploads, sendGroupError } from '../platform/group.js';
import { videoGroupSpec } from './errors.js';
import type { VideoService } from './service.js';

/** A byte range from a `Range` header, or why it cannot be served. */
export function parseRange(header: string | undefined, size: number) {
  if (header === undefined) return { kind: 'full' as const };
  const match = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!match || (match[1] === '' && match[2] === '')) return { kind: 'full' as const };
  const [, from, to] = match;
  let start: number;
  let end: number;
  if (from === '') {
    start = Math.max(size - Number(to), 0);
    end = size - 1;
  } else {
    start = Number(from);
    end = to === '' ? size - 1 : Math.min(Number(to), size - 1);
  }
  if (start >= size || start > end) return { kind: 'unsatisfiable' as const };
  return { kind: 'partial' as const, start, end };
}

export interface MediaRoutesOptions {
  /** Shared state: the clock offset read first. */
  begin?: () => Promise<void> | undefined;
  video: VideoService;
  clock: Clock;
  /** The MP4 every succeeded task serves. */
  clip: Buffer;
  /** What `sendGroupError` needs beyond the request. */
  errors: RefusedUploads;
}

const NOT_FOUND = { error: { type: 'not_found_error' as const, message: 'No such video' } };

const Mp4 = { 'video/mp4': { schema: Type.Unsafe<Buffer>({ type: 'string', format: 'binary' }) } };

/**
 * Result videos, public like a CDN link: `GET /media/videos/{token}/{video_id}.mp4` serves the shipped
 * clip for every succeeded task, with HTTP Range support. A request that does not name a result
 * (a bad file name included) is a 404; a bug is a 500 in the video group's envelope.
 */
export const mediaRoutes =
  ({ video, clock, clip, errors, begin }: MediaRoutesOptions): FastifyPluginAsyncTypebox =>
  async (app) => {
    if (begin) app.addHook('onRequest', async () => begin());
    app.setErrorHandler((err, request, reply) => {
      if ((err as { validation?: unknown }).validation) return reply.code(404).send(NOT_FOUND);
      return sendGroupError(videoGroupSpec, err, request, reply, errors);
    });

    app.get(
      '/videos/:token/:file',
      {
        schema: {
          summary: 'A result video (MP4, Range supported)',
          operationId: 'getResultVideo',
          params: Type.Object({
            token: Type.String({ pattern: '^[A-Za-z0-9_-]{22}$' }),
            file: Type.String({ pattern: '^[A-Za-z0-9_-]+\\.mp4$' }),
          }),
          response: {
            200: { description: 'The whole clip', content: Mp4 },
            206: { description: 'The bytes a `Range: bytes=…` header asked for', content: Mp4 },
            404: Type.Object(
              {
                error: Type.Object({
                  type: Type.Literal('not_found_error'),
                  message: Type.String(),
                }),
              },
              { description: 'No succeeded task has this token and file' },
            ),
            416: Type.Unsafe<void>({
              type: 'null',
              description: 'The range starts past the end of the clip',
            }),
          },
        },
      },
      async (request, reply) => {
        const { token, file } = request.params;
        if (!(await video.hasResult(token, file.slice(0, -4), clock.now()))) {
          return reply.code(404).send(NOT_FOUND);
        }
        reply.header('accept-ranges', 'bytes');
        const range = parseRange(request.headers.range, clip.length);
        if (range.kind === 'unsatisfiable') {
          // No body, so no media type; a refusal is not cached as the clip is.
          return reply.code(416).header('content-range', `bytes */${clip.length}`).send();
        }
        reply.header('content-type', 'video/mp4');
        reply.header('cache-control', 'public, max-age=86400');
        if (range.kind === 'full') return reply.send(clip);
        reply.header('content-range', `bytes ${range.start}-${range.end}/${clip.length}`);
        return reply.code(206).send(clip.subarray(range.start, range.end + 1));
      },
    );
  };
