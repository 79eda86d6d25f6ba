import { Type } from '@sinclair/typebox';
import { GatewayError } from '../platform/errors.js';
import { TaskRecordSchema } from '../video/schemas.js';
import {
  type ControlApp,
  type ControlOptions,
  errors,
  ListQuery,
  SessionQuery,
  sessionOf,
} from './context.js';
import { CallbackListSchema, ForceTaskSchema, TaskListSchema } from './schemas.js';

/** The tasks listed when no `limit` is given. */
const TASKS_LISTED = 1000;

/** Video tasks as they are now. (Registered apart from taskRoutes: see controlRoutes.) */
export function taskListRoute(
  app: ControlApp,
  { clock, video }: Pick<ControlOptions, 'clock' | 'video'>,
): void {
  app.get(
    '/tasks',
    {
      schema: {
        summary:
          'Video tasks of every key (or of one session), as they are now: the newest `limit`, oldest first',
        querystring: ListQuery(10_000, TASKS_LISTED),
        response: { 200: TaskListSchema, ...errors },
      },
    },
    async (request) => {
      const session = sessionOf(request, request.query.session);
      const now = clock.now();
      return { now, ...(await video.all(now, request.query.limit ?? TASKS_LISTED, session)) };
    },
  );
}

/** A video task forced into a status, and the callbacks tasks sent. */
export function taskRoutes(
  app: ControlApp,
  { clock, video, callbacks }: Pick<ControlOptions, 'clock' | 'video' | 'callbacks'>,
): void {
  app.post(
    '/tasks/:task_id',
    {
      schema: {
        summary: 'Force a video task into a status (final from now on); its callback fires',
        params: Type.Object({ task_id: Type.String() }),
        body: ForceTaskSchema,
        response: { 200: TaskRecordSchema, ...errors },
      },
    },
    async (request) => {
      const { status, message } = request.body;
      const session = sessionOf(request);
      const record = await video.force(
        request.params.task_id,
        status,
        message,
        clock.now(),
        session,
      );
      if (!record) throw new GatewayError(404, `No task ${request.params.task_id}`);
      return record;
    },
  );

  app.get(
    '/callbacks',
    {
      schema: {
        summary: 'Video callback deliveries, oldest first',
        querystring: SessionQuery,
        response: { 200: CallbackListSchema, ...errors },
      },
    },
    async (request) => {
      const session = sessionOf(request, request.query.session);
      const { list, dropped } = await callbacks.view();
      return {
        callbacks: session === undefined ? list : list.filter((d) => d.session === session),
        dropped,
      };
    },
  );
}
