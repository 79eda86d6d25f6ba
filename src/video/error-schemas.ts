import { type Static, Type } from '@sinclair/typebox';

/** The envelope without `data`. @see https://kling.ai/document-api/apiReference/commonInfo */
export const VideoErrorSchema = Type.Object({
  code: Type.Integer(),
  message: Type.String(),
  request_id: Type.String(),
});

export type VideoError = Static<typeof VideoErrorSchema>;
