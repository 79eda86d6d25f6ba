import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { EmulatorState } from '../state.js';
import { statusAt, taskIdOfVideo } from './tasks.js';

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

/**
 * Result videos, public like a CDN link: `GET /media/videos/{video_id}.mp4` serves the shipped
 * clip for every succeeded task, with HTTP Range support.
 */
const media: FastifyPluginAsyncTypebox<{ state: EmulatorState; clip: Buffer }> = async (
  app,
  { state, clip },
) => {
  const notFound = { error: { type: 'not_found', message: 'No such video' } };
  app.get(
    '/videos/:file',
    {
      schema: {
        summary: 'A result video (MP4, Range supported)',
        params: Type.Object({ file: Type.String({ pattern: '^[A-Za-z0-9_-]+\\.mp4$' }) }),
      },
    },
    async (request, reply) => {
      const taskId = taskIdOfVideo(request.params.file.slice(0, -4));
      const task = taskId === undefined ? undefined : state.video.store.get(taskId);
      if (!task || statusAt(task, state.deps.clock.now()).status !== 'succeed') {
        return reply.code(404).send(notFound);
      }
      reply.header('content-type', 'video/mp4').header('accept-ranges', 'bytes');
      reply.header('cache-control', 'public, max-age=86400');
      const range = parseRange(request.headers.range, clip.length);
      if (range.kind === 'unsatisfiable') {
        return reply.code(416).header('content-range', `bytes */${clip.length}`).send();
      }
      if (range.kind === 'full') return reply.send(clip);
      reply.header('content-range', `bytes ${range.start}-${range.end}/${clip.length}`);
      return reply.code(206).send(clip.subarray(range.start, range.end + 1));
    },
  );
  app.setErrorHandler((_err, _request, reply) => reply.code(404).send(notFound));
};

export default media;
