import { Type } from '@sinclair/typebox';
import { Literals } from '../platform/schema-helpers.js';
import { BlockedTermSchema, ReplyRuleSchema } from '../text/fixtures.js';

export const ControlErrorSchema = Type.Object({
  error: Type.Object({ type: Type.String(), message: Type.String() }),
});

export const HealthSchema = Type.Object({ status: Type.Literal('ok') });
export const ReadySchema = Type.Object({
  status: Type.Union([Type.Literal('ready'), Type.Literal('starting')]),
});

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
  aborted: Type.Boolean({
    description: 'a stream the client left, or that stalled, before it ended',
  }),
  bytes_sent: Type.Union([Type.Integer(), Type.Null()], {
    description: 'bytes an aborted stream sent',
  }),
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
  /** Notifications refused because the log was full of unfinished deliveries. */
  dropped: Type.Integer(),
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

export const FaultRuleSchema = Type.Object(
  {
    path: Type.String({
      minLength: 1,
      maxLength: 2048,
      pattern: '^/',
      description: 'exact path, or a prefix ending in *',
    }),
    method: Type.Optional(Type.String({ pattern: '^[A-Za-z]{1,16}$' })),
    status: Type.Optional(Type.Integer({ minimum: 400, maximum: 599 })),
    times: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    kind: Type.Optional(Literals(['error', 'disconnect', 'stream_error', 'delay', 'hang'])),
    after_events: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
    retry_after_s: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400 })),
    delay_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 600_000,
        description: 'kind "delay": wait this long, then answer as usual',
      }),
    ),
  },
  { additionalProperties: false },
);

export const FaultViewSchema = Type.Object({
  id: Type.Integer(),
  path: Type.String(),
  method: Type.Union([Type.String(), Type.Null()]),
  kind: Type.String(),
  status: Type.Union([Type.Integer(), Type.Null()]),
  times: Type.Union([Type.Integer(), Type.Null()]),
  remaining: Type.Union([Type.Integer(), Type.Null()]),
  after_events: Type.Integer(),
  retry_after_s: Type.Union([Type.Integer(), Type.Null()]),
  delay_ms: Type.Union([Type.Integer(), Type.Null()]),
  fired: Type.Integer(),
});

export const FaultListSchema = Type.Object({ faults: Type.Array(FaultViewSchema) });

export const FixturesViewSchema = Type.Object({
  rules: Type.Array(
    Type.Object({ file: Type.String(), index: Type.Integer(), ...ReplyRuleSchema.properties }),
  ),
  blocked_terms: Type.Array(BlockedTermSchema),
});
