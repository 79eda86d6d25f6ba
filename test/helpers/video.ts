import { T0 } from './app.js';

/** The answer to a video task creation at T0: the task, submitted. */
export const submitted = (taskId: string, requestId: unknown) => ({
  code: 0,
  message: 'success',
  request_id: requestId,
  data: {
    task_id: taskId,
    task_status: 'submitted',
    task_info: { external_task_id: '' },
    created_at: T0,
    updated_at: T0,
  },
});
