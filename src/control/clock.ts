import { type ControlApp, type ControlOptions, errors } from './context.js';
import { AdvanceSchema, ClockSchema } from './schemas.js';

/** Emulator time: read it, move it forward. */
export function clockRoutes(app: ControlApp, { clock }: Pick<ControlOptions, 'clock'>): void {
  const clockView = () => ({ now: clock.now(), offset_ms: clock.offsetMs() });

  app.get(
    '/clock',
    { schema: { summary: 'Emulator time', response: { 200: ClockSchema, ...errors } } },
    async () => clockView(),
  );

  app.post(
    '/clock/advance',
    {
      schema: {
        summary: 'Move emulator time forward; due work runs at once',
        body: AdvanceSchema,
        response: { 200: ClockSchema, ...errors },
      },
    },
    async (request) => {
      await clock.advance(request.body.ms);
      return clockView();
    },
  );
}
