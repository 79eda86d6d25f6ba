import { type Static, Type } from '@sinclair/typebox';

/** @see upstream-facts A0, A4: the envelope without `data` */
export const VideoErrorSchema = Type.Object({
  code: Type.Integer(),
  message: Type.String(),
  request_id: Type.String(),
});

export type VideoError = Static<typeof VideoErrorSchema>;
