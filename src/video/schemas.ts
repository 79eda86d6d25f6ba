import { type Static, type TSchema, Type } from '@sinclair/typebox';
import { Literals, Refusal } from '../platform/schema-helpers.js';
import { MODELS_BY_KIND, type VideoKind } from './models.js';

/** @see https://kling.ai/document-api/apiReference/model/textToVideo */

const PROMPT_LIMIT = 2500;
const Prompt = Type.String({ maxLength: PROMPT_LIMIT });
const Text = Type.String({ maxLength: 2048 });
/** Durations are strings on the wire ("5"), never numbers. */
const Duration = Type.String({ pattern: '^[0-9]{1,3}$', description: 'seconds as a string' });
const Mode = Literals(['std', 'pro']);
const AspectRatio = Literals(['16:9', '9:16', '1:1']);
const OnOff = Literals(['on', 'off']);
const YesNo = Literals(['yes', 'no']);
/** A public URL, or (older usage) raw Base64 without a `data:` prefix. */
const ImageInput = Type.String({ minLength: 1, maxLength: 16 * 1024 * 1024 });

const quote = (values: readonly string[]) => values.map((v) => `"${v}"`).join(', ');

/**
 * A kind's `model_name`: a model of another kind is refused (a name of no model is a 404, which
 * the operation's description says).
 */
const ModelName = (kind: VideoKind) => {
  const allowed = MODELS_BY_KIND[kind];
  const others = [...new Set(Object.values(MODELS_BY_KIND).flat())].filter(
    (model) => !allowed.includes(model),
  );
  return Refusal(
    Type.String({
      minLength: 1,
      maxLength: 64,
      not: { enum: others },
      description: `one of ${quote(allowed)}`,
    }),
    { not: `must be one of ${quote(allowed)} for ${kind}` },
  );
};

const shared = {
  negative_prompt: Type.Optional(Prompt),
  mode: Type.Optional(Mode),
  aspect_ratio: Type.Optional(AspectRatio),
  sound: Type.Optional(OnOff),
  cfg_scale: Type.Optional(Type.Number({ minimum: 0, maximum: 1 })),
  callback_url: Type.Optional(Text),
  external_task_id: Type.Optional(Type.String({ maxLength: 256 })),
  watermark_info: Type.Optional(Type.Object({ enabled: Type.Boolean() })),
};

export const CameraControlSchema = Type.Object({
  type: Literals(['simple', 'down_back', 'forward_up', 'right_turn_forward', 'left_turn_forward']),
  config: Type.Optional(
    Type.Object({
      horizontal: Type.Optional(Type.Number({ minimum: -10, maximum: 10 })),
      vertical: Type.Optional(Type.Number({ minimum: -10, maximum: 10 })),
      pan: Type.Optional(Type.Number({ minimum: -10, maximum: 10 })),
      tilt: Type.Optional(Type.Number({ minimum: -10, maximum: 10 })),
      roll: Type.Optional(Type.Number({ minimum: -10, maximum: 10 })),
      zoom: Type.Optional(Type.Number({ minimum: -10, maximum: 10 })),
    }),
  ),
});

export const MultiPromptSchema = Type.Array(
  Type.Object({
    index: Type.Integer(),
    prompt: Type.String({ minLength: 1, maxLength: 512 }),
    duration: Type.Integer({ minimum: 1 }),
  }),
  { minItems: 1, maxItems: 6 },
);

const multiShot = {
  multi_shot: Type.Optional(Type.Boolean()),
  shot_type: Type.Optional(Literals(['customize', 'intelligence'])),
  multi_prompt: Type.Optional(MultiPromptSchema),
};

export const Text2VideoSchema = Type.Object({
  ...shared,
  model_name: ModelName('text2video'),
  prompt: Type.Optional(Prompt),
  duration: Duration,
  camera_control: Type.Optional(CameraControlSchema),
  ...multiShot,
});

export const Image2VideoSchema = Type.Object({
  ...shared,
  model_name: ModelName('image2video'),
  image: ImageInput,
  image_tail: Type.Optional(ImageInput),
  prompt: Prompt,
  duration: Duration,
  camera_control: Type.Optional(CameraControlSchema),
});

export const MotionControlSchema = Type.Object({
  ...shared,
  model_name: ModelName('motion-control'),
  image_url: ImageInput,
  video_url: Type.String({ minLength: 1, maxLength: 2048 }),
  prompt: Type.Optional(Prompt),
  keep_original_sound: Type.Optional(YesNo),
  character_orientation: Type.Optional(Literals(['image', 'video'])),
});

export const OmniVideoSchema = Type.Object({
  ...shared,
  model_name: Type.Optional(ModelName('omni-video')),
  prompt: Type.Optional(Prompt),
  duration: Type.Optional(Duration),
  image_list: Type.Optional(
    Type.Array(
      Type.Object({
        image_url: ImageInput,
        type: Type.Optional(Literals(['first_frame', 'end_frame'])),
      }),
      { maxItems: 7 },
    ),
  ),
  element_list: Type.Optional(
    Type.Array(Type.Object({ element_id: Type.Integer({ minimum: 1 }) }), { maxItems: 7 }),
  ),
  video_list: Type.Optional(
    Type.Array(
      Type.Object({
        video_url: Type.String({ minLength: 1, maxLength: 2048 }),
        refer_type: Type.Optional(Literals(['feature', 'base'])),
        keep_original_sound: Type.Optional(YesNo),
      }),
      { maxItems: 1 },
    ),
  ),
  ...multiShot,
});

export const MultiImage2VideoSchema = Type.Object({
  ...shared,
  model_name: Type.Optional(ModelName('multi-image2video')),
  image_list: Type.Array(Type.Object({ image: ImageInput }), { minItems: 1, maxItems: 4 }),
  prompt: Prompt,
  duration: Type.Optional(Duration),
});

export type Text2VideoRequest = Static<typeof Text2VideoSchema>;
export type Image2VideoRequest = Static<typeof Image2VideoSchema>;
export type MotionControlRequest = Static<typeof MotionControlSchema>;
export type OmniVideoRequest = Static<typeof OmniVideoSchema>;
export type MultiImage2VideoRequest = Static<typeof MultiImage2VideoSchema>;

export const TaskStatusSchema = Literals(['submitted', 'processing', 'succeed', 'failed']);
export type TaskStatus = Static<typeof TaskStatusSchema>;

/** The task record of the query endpoints and callbacks. @see https://kling.ai/document-api/apiReference/callbackProtocol */
export const TaskRecordSchema = Type.Object({
  task_id: Type.String(),
  task_status: TaskStatusSchema,
  task_status_msg: Type.String(),
  task_info: Type.Object({ external_task_id: Type.String() }),
  task_result: Type.Object({
    videos: Type.Array(
      Type.Object({ id: Type.String(), url: Type.String(), duration: Type.String() }),
    ),
  }),
  created_at: Type.Integer({ description: 'Unix ms' }),
  updated_at: Type.Integer({ description: 'Unix ms' }),
});
export type TaskRecord = Static<typeof TaskRecordSchema>;

/** What creation returns in `data`. */
export const CreatedTaskSchema = Type.Object({
  task_id: Type.String(),
  task_status: TaskStatusSchema,
  task_info: Type.Object({ external_task_id: Type.String() }),
  created_at: Type.Integer(),
  updated_at: Type.Integer(),
});
export type CreatedTask = Static<typeof CreatedTaskSchema>;

const envelope = <T extends TSchema>(data: T) =>
  Type.Object({
    code: Type.Literal(0),
    message: Type.Literal('success'),
    request_id: Type.String(),
    data,
  });

export const CreatedEnvelopeSchema = envelope(CreatedTaskSchema);
export const TaskEnvelopeSchema = envelope(TaskRecordSchema);
export const TaskListEnvelopeSchema = envelope(Type.Array(TaskRecordSchema));

export const TaskParamsSchema = Type.Object({ id: Type.String({ minLength: 1, maxLength: 256 }) });

export const ListQuerySchema = Type.Object({
  pageNum: Type.Optional(Type.Integer({ minimum: 1, maximum: 1000, default: 1 })),
  pageSize: Type.Optional(Type.Integer({ minimum: 1, maximum: 500, default: 30 })),
});
