import { type Static, Type } from '@sinclair/typebox';
import { Literals } from '../platform/schema-helpers.js';

/**
 * @see https://platform.claude.com/docs/en/api/messages
 * @see https://platform.claude.com/docs/en/build-with-claude/streaming
 * @see https://platform.claude.com/docs/en/build-with-claude/prompt-caching
 */

export const CacheControlSchema = Type.Object(
  { type: Type.Literal('ephemeral'), ttl: Type.Optional(Literals(['5m', '1h'])) },
  { additionalProperties: false },
);

export const TextBlockSchema = Type.Object(
  {
    type: Type.Literal('text'),
    text: Type.String(),
    cache_control: Type.Optional(CacheControlSchema),
  },
  { additionalProperties: false },
);

const Content = Type.Union([Type.String(), Type.Array(TextBlockSchema, { minItems: 1 })], {
  description: 'a string or a non-empty array of text blocks',
});

export const MessageParamSchema = Type.Object(
  { role: Literals(['user', 'assistant']), content: Content },
  { additionalProperties: false },
);

const System = Type.Union([Type.String(), Type.Array(TextBlockSchema)], {
  description: 'a string or an array of text blocks',
});

/** The fields count_tokens shares with messages. */
const prompt = {
  model: Type.String({ minLength: 1, maxLength: 256 }),
  messages: Type.Array(MessageParamSchema, { minItems: 1, maxItems: 100_000 }),
  system: Type.Optional(System),
};

export const MessagesRequestSchema = Type.Object(
  {
    ...prompt,
    max_tokens: Type.Integer({ minimum: 1 }),
    stream: Type.Optional(Type.Boolean()),
    temperature: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    top_p: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
    top_k: Type.Optional(Type.Integer({ minimum: 0 })),
    stop_sequences: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { maxItems: 64 })),
    metadata: Type.Optional(
      Type.Object(
        { user_id: Type.Optional(Type.Union([Type.String({ maxLength: 256 }), Type.Null()])) },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);

export const CountTokensRequestSchema = Type.Object(prompt, { additionalProperties: false });

export type MessagesRequest = Static<typeof MessagesRequestSchema>;
export type MessageParam = Static<typeof MessageParamSchema>;
export type TextBlock = Static<typeof TextBlockSchema>;
export type CountTokensRequest = Static<typeof CountTokensRequestSchema>;

export const StopReasonSchema = Literals(['end_turn', 'max_tokens', 'stop_sequence']);
export type StopReason = Static<typeof StopReasonSchema>;

export const UsageSchema = Type.Object({
  input_tokens: Type.Integer(),
  cache_creation_input_tokens: Type.Integer(),
  cache_read_input_tokens: Type.Integer(),
  cache_creation: Type.Object({
    ephemeral_5m_input_tokens: Type.Integer(),
    ephemeral_1h_input_tokens: Type.Integer(),
  }),
  output_tokens: Type.Integer(),
});
export type Usage = Static<typeof UsageSchema>;

export const MessageSchema = Type.Object({
  id: Type.String(),
  type: Type.Literal('message'),
  role: Type.Literal('assistant'),
  content: Type.Array(Type.Object({ type: Type.Literal('text'), text: Type.String() })),
  model: Type.String(),
  stop_reason: StopReasonSchema,
  stop_sequence: Type.Union([Type.String(), Type.Null()]),
  usage: UsageSchema,
});
export type Message = Static<typeof MessageSchema>;

export const CountTokensResponseSchema = Type.Object({ input_tokens: Type.Integer() });
