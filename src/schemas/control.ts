import { Type } from '@sinclair/typebox';
import { Literals } from './common.js';

export const ControlErrorSchema = Type.Object({
  error: Type.Object({ type: Type.String(), message: Type.String() }),
});

export const HealthSchema = Type.Object({ status: Type.Literal('ok') });

export const ClockSchema = Type.Object({
  now: Type.Integer({ description: 'emulator time, Unix ms' }),
  offset_ms: Type.Integer(),
});

export const AdvanceSchema = Type.Object(
  { ms: Type.Integer({ minimum: 0, maximum: 10 * 365 * 86_400_000 }) },
  { additionalProperties: false },
);

export const JournalEntrySchema = Type.Object({
  id: Type.String(),
  at: Type.Integer(),
  method: Type.String(),
  url: Type.String(),
  status: Type.Integer(),
  duration_ms: Type.Number(),
  headers: Type.Record(Type.String(), Type.String()),
  body: Type.Unknown(),
  body_truncated: Type.Boolean(),
  fault: Type.Union([Type.String(), Type.Null()]),
});

export const JournalSchema = Type.Object({ requests: Type.Array(JournalEntrySchema) });

export const ForceTaskSchema = Type.Object(
  {
    status: Literals(['submitted', 'processing', 'succeed', 'failed']),
    message: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
);

export const CallbackListSchema = Type.Object({
  callbacks: Type.Array(
    Type.Object({
      id: Type.Integer(),
      task_id: Type.String(),
      url: Type.String(),
      task_status: Type.String(),
      state: Literals(['pending', 'delivering', 'delivered', 'failed']),
      attempts: Type.Integer(),
      last_status: Type.Union([Type.Integer(), Type.Null()]),
      last_error: Type.Union([Type.String(), Type.Null()]),
      created_at: Type.Integer(),
      updated_at: Type.Integer(),
    }),
  ),
});
