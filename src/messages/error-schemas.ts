import { type Static, Type } from '@sinclair/typebox';

/** `{type:"error", error:{type, message}, request_id}`. @see https://platform.claude.com/docs/en/api/errors */
export const MessagesErrorSchema = Type.Object({
  type: Type.Literal('error'),
  error: Type.Object({
    type: Type.String(),
    message: Type.String(),
    details: Type.Optional(Type.Record(Type.String(), Type.Unknown())),
  }),
  request_id: Type.String(),
});

export type MessagesError = Static<typeof MessagesErrorSchema>;
