import { type ControlApp, type ControlOptions, errors } from './context.js';

/** Prometheus metrics (docs/control.md "Metrics"). */
export function metricsRoutes(app: ControlApp, { metrics }: Pick<ControlOptions, 'metrics'>): void {
  app.get(
    '/metrics',
    {
      schema: {
        summary:
          'Prometheus metrics: requests by group and status, stream durations, tasks by status, cache hits and misses, callback attempts, and the process (CPU, memory, event-loop delay, GC)',
        produces: ['text/plain'],
        response: {
          200: {
            description: 'Prometheus text exposition format 0.0.4',
            content: { 'text/plain': { schema: { type: 'string' } } },
          },
          ...errors,
        },
      },
    },
    async (_request, reply) => {
      const { contentType, body } = await metrics.text();
      return reply
        .type(contentType)
        .serializer((payload: unknown) => payload as string)
        .send(body);
    },
  );
}
