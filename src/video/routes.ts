import { isIPv6 } from 'node:net';
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static, TSchema } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { fieldError, GatewayError, notFound } from '../platform/errors.js';
import { urlHostOf } from '../platform/host.js';
import type { CallbackGuard } from './callback-guard.js';
import { VideoErrorSchema } from './error-schemas.js';
import { VIDEO_CODES } from './errors.js';
import type { VideoKind } from './models.js';
import {
  checkImage2Video,
  checkMotionControl,
  checkMultiImage2Video,
  checkOmniVideo,
  checkText2Video,
  type TaskSpec,
} from './rules.js';
import {
  CreatedEnvelopeSchema,
  Image2VideoSchema,
  ListQuerySchema,
  MotionControlSchema,
  MultiImage2VideoSchema,
  OmniVideoSchema,
  TaskEnvelopeSchema,
  TaskListEnvelopeSchema,
  TaskParamsSchema,
  Text2VideoSchema,
} from './schemas.js';
import type { VideoService } from './service.js';
import type { Outcome } from './tasks.js';

const errors = { '4xx': VideoErrorSchema, '5xx': VideoErrorSchema };

/** The refusals no schema keyword states (rules of the model, across fields), for the document. */
const VIDEO_RULES = [
  'Refused besides what the schema states (400, code 1201, naming the field):',
  '- a `model_name` of no model: 404, code 1203 (a model of another kind is refused by the schema);',
  '- what the model takes: its durations, `sound` (v2.6 or later, and `mode` "pro" where the model needs it), `cfg_scale`, `multi_shot`, `image_tail` (`mode` "pro");',
  '- images: a public http(s) URL, or raw Base64 (no `data:` prefix) of a JPEG or PNG of at most 10 MB and at least 300x300 pixels; other URLs public http(s);',
  '- across fields: `shot_type` with `multi_shot`, `multi_prompt` with `shot_type` "customize" (and `duration`), `prompt` where the kind or the shot needs one, `aspect_ratio` without a first frame or base video (omni-video), an `end_frame` without a `first_frame`, `<<<image_N>>>`-style references within their lists, `sound` "off" with a `video_list`;',
  '- a `callback_url` the callback guard refuses (docs/video.md "Callbacks").',
].join('\n');

/** The upstream envelope of a successful answer. */
const success = <T>(request: FastifyRequest, data: T) => ({
  code: 0 as const,
  message: 'success' as const,
  request_id: request.id,
  data,
});

/** Emulator-only header: `x-emulator-task-outcome: failed` makes the new task end failed. */
function readOutcome(request: FastifyRequest): Outcome {
  const value = request.headers['x-emulator-task-outcome'];
  if (value === undefined || value === 'succeed') return 'succeed';
  if (value === 'failed') return 'failed';
  throw new GatewayError(400, 'x-emulator-task-outcome header must be "failed" or "succeed"', {
    code: VIDEO_CODES.invalidParameter,
  });
}

export interface VideoRoutesOptions {
  video: VideoService;
  /** Where a `callback_url` may point. */
  guard: CallbackGuard;
  /** Base of result URLs; unset: the origin each task was created through. */
  publicBaseUrl: string | undefined;
}

/**
 * Create, query and list routes of the five task kinds.
 * @see https://kling.ai/document-api/apiReference/model/textToVideo
 */
export const videoRoutes =
  ({ video, publicBaseUrl, guard }: VideoRoutesOptions): FastifyPluginAsyncTypebox =>
  async (app) => {
    const publicBase = publicBaseUrl?.replace(/\/+$/, '');
    /**
     * Where result URLs point: PUBLIC_BASE_URL, else the Host the client came through when it
     * is a plain host[:port], else the address it reached (a task keeps the string).
     */
    const baseUrl = (request: FastifyRequest) => {
      if (publicBase) return publicBase;
      const host = urlHostOf(request.host);
      if (host) return `${request.protocol}://${host}`;
      const { localAddress = '127.0.0.1', localPort } = request.socket;
      const address = isIPv6(localAddress) ? `[${localAddress}]` : localAddress;
      return `${request.protocol}://${address}${localPort ? `:${localPort}` : ''}`;
    };

    function kind<S extends TSchema>(name: VideoKind, body: S, check: (b: Static<S>) => TaskSpec) {
      // `motion-control` → `MotionControl`: the operation ids' noun.
      const noun = name.replace(/(^|-)([a-z])/g, (_, _dash, c: string) => c.toUpperCase());
      app.post(
        `/v1/videos/${name}`,
        {
          schema: {
            summary: `Create a ${name} task`,
            description: VIDEO_RULES,
            operationId: `create${noun}Task`,
            body,
            response: { 200: CreatedEnvelopeSchema, ...errors },
          },
        },
        async (request) => {
          const outcome = readOutcome(request);
          const spec = check(request.body as Static<S>);
          if (spec.callbackUrl) {
            const refused = guard.check(spec.callbackUrl, request.host);
            if (refused) throw fieldError(['callback_url'], refused);
          }
          const created = await video.create(
            spec,
            request.owner,
            baseUrl(request),
            outcome,
            request.receivedAt,
          );
          return success(request, created);
        },
      );

      app.get(
        `/v1/videos/${name}/:id`,
        {
          schema: {
            summary: `Query a ${name} task by task_id or external_task_id`,
            operationId: `get${noun}Task`,
            params: TaskParamsSchema,
            response: { 200: TaskEnvelopeSchema, ...errors },
          },
        },
        async (request) => {
          const { id } = request.params;
          const record = await video.find(request.owner, name, id, request.receivedAt);
          if (!record) throw notFound(`task ${id} does not exist`);
          return success(request, record);
        },
      );

      app.get(
        `/v1/videos/${name}`,
        {
          schema: {
            summary: `List this key's ${name} tasks, newest first`,
            operationId: `list${noun}Tasks`,
            querystring: ListQuerySchema,
            response: { 200: TaskListEnvelopeSchema, ...errors },
          },
        },
        async (request) => {
          const { pageNum = 1, pageSize = 30 } = request.query;
          const page = await video.list(request.owner, name, pageNum, pageSize, request.receivedAt);
          return success(request, page);
        },
      );
    }

    kind('text2video', Text2VideoSchema, checkText2Video);
    kind('image2video', Image2VideoSchema, checkImage2Video);
    kind('motion-control', MotionControlSchema, checkMotionControl);
    kind('omni-video', OmniVideoSchema, checkOmniVideo);
    kind('multi-image2video', MultiImage2VideoSchema, checkMultiImage2Video);
  };
