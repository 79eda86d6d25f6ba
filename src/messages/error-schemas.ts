import { type Static, Type } from '@sinclair/typebox';

/** @see upstream-facts B2: `{type:"error", error:{type, message}, request_id}` */
export const MessagesErrorSchema = Type.Object({
  type: Type.Literal('error'),
  error: Type.Object({ type: Type.String(), message: Type.String() }),
  request_id: Type.String(),
});

export type MessagesError = Static<typeof MessagesErrorSchema>;
