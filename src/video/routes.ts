import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { Static, TSchema } from '@sinclair/typebox';
import type { FastifyRequest } from 'fastify';
import { fieldError, GatewayError, notFound } from '../platform/errors.js';
import type { EmulatorState } from '../state.js';
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
import { createdTask, type Outcome, taskRecord } from './tasks.js';

const errors = { '4xx': VideoErrorSchema, '5xx': VideoErrorSchema };

/** The upstream envelope of a successful answer (seed 2.7). */
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

/** Create, query and list routes of the five task kinds (seed 4.1, upstream A1, A2). */
const videos: FastifyPluginAsyncTypebox<{ state: EmulatorState }> = async (app, { state }) => {
  const { clock } = state.deps;
  const { video } = state;
  const publicBase = state.config.publicBaseUrl?.replace(/\/+$/, '');
  const baseUrl = (request: FastifyRequest) =>
    publicBase ?? `${request.protocol}://${request.host}`;

  function kind<S extends TSchema>(name: VideoKind, body: S, check: (b: Static<S>) => TaskSpec) {
    app.post(
      `/videos/${name}`,
      {
        schema: {
          summary: `Create a ${name} task`,
          body,
          response: { 200: CreatedEnvelopeSchema, ...errors },
        },
      },
      async (request) => {
        const outcome = readOutcome(request);
        const spec = check(request.body as Static<S>);
        if (spec.externalId && video.store.hasExternal(request.owner, spec.externalId)) {
          throw fieldError(['external_task_id'], 'is already used by another task of this key');
        }
        const task = video.create(spec, request.owner, baseUrl(request), outcome);
        return success(request, createdTask(task, clock.now()));
      },
    );

    app.get(
      `/videos/${name}/:id`,
      {
        schema: {
          summary: `Query a ${name} task by task_id or external_task_id`,
          params: TaskParamsSchema,
          response: { 200: TaskEnvelopeSchema, ...errors },
        },
      },
      async (request) => {
        const task = video.store.find(request.owner, name, request.params.id);
        if (!task) throw notFound(`task ${request.params.id} does not exist`);
        return success(request, taskRecord(task, clock.now()));
      },
    );

    app.get(
      `/videos/${name}`,
      {
        schema: {
          summary: `List this key's ${name} tasks, newest first`,
          querystring: ListQuerySchema,
          response: { 200: TaskListEnvelopeSchema, ...errors },
        },
      },
      async (request) => {
        const { pageNum = 1, pageSize = 30 } = request.query;
        const now = clock.now();
        const page = video.store.list(request.owner, name, pageNum, pageSize);
        return success(
          request,
          page.map((task) => taskRecord(task, now)),
        );
      },
    );
  }

  kind('text2video', Text2VideoSchema, checkText2Video);
  kind('image2video', Image2VideoSchema, checkImage2Video);
  kind('motion-control', MotionControlSchema, checkMotionControl);
  kind('omni-video', OmniVideoSchema, checkOmniVideo);
  kind('multi-image2video', MultiImage2VideoSchema, checkMultiImage2Video);
};

export default videos;
