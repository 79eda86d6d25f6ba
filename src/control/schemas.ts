import { Type } from '@sinclair/typebox';
import { GROUPS, requestMatchFields } from '../harness/match.js';
import { SESSION_PATTERN } from '../harness/session.js';
import { STREAM_TIMELINE_WRITES } from '../platform/request.js';
import { Literals, Nullable, Refusal } from '../platform/schema-helpers.js';
import { BlockedTermSchema, ReplyRuleSchema } from '../text/fixtures.js';
import { TaskRecordSchema } from '../video/schemas.js';

export const ControlErrorSchema = Type.Object({
  error: Type.Object({ type: Type.String(), message: Type.String() }),
});

export const HealthSchema = Type.Object({ status: Type.Literal('ok') });
export const ReadySchema = Type.Object({
  status: Type.Union([
    Type.Literal('ready'),
    Type.Literal('starting'),
    Type.Literal('unavailable'),
  ]),
  reason: Type.Optional(
    Type.String({
      description: 'why it is unavailable: the state store, named without credentials',
    }),
  ),
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
  group: Literals(GROUPS),
  session: Type.String(),
  key_hash: Type.Union([Type.String(), Type.Null()], {
    description: 'a short fingerprint of the key (never the key)',
  }),
  model: Type.Union([Type.String(), Type.Null()]),
  source: Literals(['emulator', 'upstream', 'replay']),
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

export const JournalDetailSchema = Type.Object({
  ...JournalEntrySchema.properties,
  response: Type.Unknown({
    description:
      'the JSON answer (cut at 8 KiB), or the first 4000 bytes of an event stream as sent',
  }),
  response_truncated: Type.Boolean(),
  response_withheld: Type.Boolean({
    description:
      'a stream answered to a request whose body held a URL credential: not kept (null), for it may echo the credential in pieces',
  }),
  timeline: Type.Union(
    [
      Type.Object({
        writes: Type.Array(
          Type.Object({
            at_ms: Type.Number({ description: 'ms from the arrival of the request' }),
            frames: Type.Integer({ minimum: 0, description: 'frames this write carried' }),
          }),
          { maxItems: STREAM_TIMELINE_WRITES },
        ),
        writes_dropped: Type.Integer({
          minimum: 0,
          description: `writes past the first ${STREAM_TIMELINE_WRITES}, not timed`,
        }),
        frames: Type.Integer({ minimum: 0, description: 'frames written in all' }),
        first_content_ms: Type.Union([Type.Number(), Type.Null()], {
          description: 'from the arrival to the write of the first content frame',
        }),
        cut: Type.Union([
          Type.Object({
            kind: Type.Union([Type.Literal('stream_error'), Type.Literal('after_bytes')]),
            at_ms: Type.Number(),
          }),
          Type.Null(),
        ]),
      }),
      Type.Null(),
    ],
    { description: "an event stream's writes in time (null: not a stream)" },
  ),
});

export const CacheListSchema = Type.Object({
  now: Type.Integer({ description: 'emulator time the entries are read at' }),
  size: Type.Integer({ description: 'entries held, live or expired' }),
  entries: Type.Array(
    Type.Object({
      id: Type.String({ description: 'the start of the prefix hash' }),
      session: Type.String(),
      key_hash: Type.String(),
      model: Type.String(),
      tokens: Type.Integer(),
      reads: Type.Integer(),
      created_at: Type.Integer(),
      expires_at: Type.Integer(),
      ttl_ms: Type.Integer(),
      time_left_ms: Type.Integer(),
    }),
  ),
});

export const ForceTaskSchema = Type.Object(
  {
    status: Literals(['submitted', 'processing', 'succeed', 'failed']),
    message: Type.Optional(Type.String({ maxLength: 2048 })),
  },
  { additionalProperties: false },
);

export const TaskListSchema = Type.Object({
  now: Type.Integer({ description: 'emulator time the statuses are read at' }),
  size: Type.Integer({
    description: 'the tasks held (of the session), of which the newest are listed',
  }),
  tasks: Type.Array(
    Type.Object({
      ...TaskRecordSchema.properties,
      kind: Type.String(),
      session: Type.String(),
      key_hash: Type.Union([Type.String(), Type.Null()]),
      progress: Type.Integer({
        minimum: 0,
        maximum: 100,
        description: 'percent of the way from creation to the result, on the emulator clock',
      }),
    }),
  ),
});

export const CallbackListSchema = Type.Object({
  /** Notifications refused because the log was full of unfinished deliveries. */
  dropped: Type.Integer(),
  callbacks: Type.Array(
    Type.Object({
      id: Type.Integer(),
      task_id: Type.String(),
      session: Type.String(),
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

const Match = Type.Object(requestMatchFields, {
  additionalProperties: false,
  description:
    'which requests the rule is for (docs/stubs.md "Stubs"): every field given must hold',
});

export const FaultRuleSchema = Type.Object(
  {
    path: Type.Optional(
      Type.String({
        minLength: 1,
        maxLength: 2048,
        pattern: '^/',
        description: 'shorthand for match.path: exact path, or a prefix ending in *',
      }),
    ),
    method: Type.Optional(
      Type.String({ pattern: '^[A-Za-z]{1,16}$', description: 'shorthand for match.method' }),
    ),
    match: Type.Optional(Match),
    status: Type.Optional(Type.Integer({ minimum: 400, maximum: 599 })),
    times: Type.Optional(Type.Integer({ minimum: 1, maximum: 1_000_000 })),
    kind: Type.Optional(Literals(['error', 'disconnect', 'stream_error', 'delay', 'hang'])),
    after_events: Type.Optional(Type.Integer({ minimum: 0, maximum: 1_000_000 })),
    after_bytes: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 1_000_000_000,
        description: 'streams: the connection is cut once this many bytes were sent',
      }),
    ),
    retry_after_s: Type.Optional(Type.Integer({ minimum: 0, maximum: 86_400 })),
    delay_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 600_000,
        description: 'kind "delay": wait this long, then answer as usual',
      }),
    ),
    probability: Type.Optional(
      Type.Number({
        minimum: 0,
        maximum: 1,
        description: 'the share of matching requests it strikes',
      }),
    ),
    seed: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 4_294_967_295,
        description:
          'seeds the draws of `probability` (default 0): the same requests, the same strikes',
      }),
    ),
  },
  { additionalProperties: false },
);

const NullableInt = Type.Union([Type.Integer(), Type.Null()]);

export const FaultViewSchema = Type.Object({
  id: Type.Integer(),
  session: Type.String(),
  path: Type.Union([Type.String(), Type.Null()]),
  method: Type.Union([Type.String(), Type.Null()]),
  match: Type.Record(Type.String(), Type.Unknown()),
  kind: Literals(['error', 'disconnect', 'stream_error', 'delay', 'hang']),
  status: NullableInt,
  times: NullableInt,
  remaining: NullableInt,
  after_events: Type.Integer(),
  after_bytes: NullableInt,
  retry_after_s: NullableInt,
  delay_ms: NullableInt,
  probability: Type.Union([Type.Number(), Type.Null()]),
  seed: NullableInt,
  fired: Type.Integer(),
});

export const FaultListSchema = Type.Object({ faults: Type.Array(FaultViewSchema) });

export const StubSchema = Type.Object(
  {
    ...ReplyRuleSchema.properties,
    priority: Type.Optional(
      Type.Integer({
        minimum: -1_000_000,
        maximum: 1_000_000,
        description: 'higher wins (default 0); stubs always win over fixture files',
      }),
    ),
    times: Type.Optional(
      Type.Integer({
        minimum: 1,
        maximum: 1_000_000,
        description: 'answers this often, then goes',
      }),
    ),
  },
  { additionalProperties: false },
);

export const StubViewSchema = Type.Object({
  ...ReplyRuleSchema.properties,
  match: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  id: Type.Integer(),
  session: Type.String(),
  priority: Type.Optional(Type.Integer()),
  times: Type.Optional(Type.Integer()),
  remaining: NullableInt,
  fired: Type.Integer(),
});

export const StubListSchema = Type.Object({ replies: Type.Array(StubViewSchema) });

/** The journal filter's fields, as a query string (`GET /_emulator/journal`). */
export const journalQueryFields = {
  group: Type.Optional(Literals(GROUPS)),
  method: Type.Optional(Type.String({ pattern: '^[A-Za-z]{1,16}$' })),
  path: Type.Optional(
    Type.String({ pattern: '^/', maxLength: 2048, description: 'exact, or a prefix ending in *' }),
  ),
  status: Type.Optional(Type.Integer({ minimum: 0, maximum: 599 })),
  model: Type.Optional(Type.String({ minLength: 1, maxLength: 256 })),
  key: Type.Optional(
    Type.String({
      minLength: 1,
      maxLength: 4096,
      description: 'a raw key: compared by its fingerprint',
    }),
  ),
  session: Type.Optional(Type.String({ pattern: SESSION_PATTERN })),
  since: Type.Optional(
    Type.Integer({
      minimum: 0,
      maximum: Number.MAX_SAFE_INTEGER,
      description: 'emulator time (epoch ms): entries from then on',
    }),
  ),
};

export const JournalQuerySchema = Type.Object(journalQueryFields, { additionalProperties: false });

export const JournalWaitQuerySchema = Type.Object(
  {
    ...journalQueryFields,
    timeout_ms: Type.Optional(
      Type.Integer({
        minimum: 0,
        maximum: 120_000,
        description: 'how long to wait for a match (default 30000, at most 120000)',
      }),
    ),
  },
  { additionalProperties: false },
);

export const VerifySchema = Type.Object(
  {
    match: Type.Object(
      {
        ...journalQueryFields,
        header: requestMatchFields.header,
        body: requestMatchFields.body,
      },
      { additionalProperties: false },
    ),
    count: Type.Optional(
      Type.Object(
        {
          exactly: Type.Optional(Type.Integer({ minimum: 0 })),
          at_least: Type.Optional(Type.Integer({ minimum: 0 })),
          at_most: Type.Optional(Type.Integer({ minimum: 0 })),
        },
        {
          additionalProperties: false,
          minProperties: 1,
          description: 'default: at_least 1',
        },
      ),
    ),
  },
  { additionalProperties: false },
);

const NearMissSchema = Type.Object({
  request: JournalEntrySchema,
  differences: Type.Array(
    Type.Object({ field: Type.String(), expected: Type.Unknown(), actual: Type.Unknown() }),
  ),
});

export const VerifiedSchema = Type.Object({ status: Type.Literal('ok'), matched: Type.Integer() });

export const VerifyFailedSchema = Type.Object({
  error: Type.Object({ type: Type.Literal('verification_failed'), message: Type.String() }),
  matched: Type.Integer(),
  near_misses: Type.Array(NearMissSchema),
});

export const WaitTimeoutSchema = Type.Object({
  error: Type.Object({ type: Type.Literal('timeout'), message: Type.String() }),
});

export const FixturesViewSchema = Type.Object({
  rules: Type.Array(
    Type.Object({ file: Type.String(), index: Type.Integer(), ...ReplyRuleSchema.properties }),
  ),
  blocked_terms: Type.Array(BlockedTermSchema),
});

/** `POST /_emulator/drift`'s body: none (null), or the recordings' directory. */
export const DriftBodySchema = Nullable(
  Refusal(
    Type.Object(
      {
        recordings: Type.Optional(
          Refusal(Type.String({ minLength: 1, maxLength: 4096 }), {
            type: 'must be a directory path',
            default: 'must be a directory path',
          }),
        ),
      },
      { additionalProperties: false },
    ),
    {
      type: 'the body must be a JSON object, or none',
      additionalProperties: 'is not a field of this body',
    },
  ),
);

export const DriftReportSchema = Type.Object({
  drift: Type.Boolean(),
  recordings: Type.Integer(),
  responses: Type.Integer({ description: 'recorded answers compared' }),
  differences: Type.Array(
    Type.Object({
      recording: Type.String({ description: 'the file, relative to the recordings directory' }),
      response: Type.Integer({ description: 'which recorded answer of the file' }),
      at: Type.String(),
      kind: Literals(['missing', 'extra', 'type', 'enum', 'event_order', 'status']),
      emulator: Type.Unknown(),
      recorded: Type.Unknown(),
    }),
  ),
});
