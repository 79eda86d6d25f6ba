import { fieldError, GatewayError, type PathSegment } from '../platform/errors.js';
import { decodeBase64, inspectImage } from '../platform/image.js';
import {
  DEFAULT_MODEL,
  isVideoModel,
  MODEL_RULES,
  MODELS_BY_KIND,
  type VideoKind,
  type VideoModel,
} from './models.js';
import type {
  Image2VideoRequest,
  MotionControlRequest,
  MultiImage2VideoRequest,
  OmniVideoRequest,
  Text2VideoRequest,
} from './schemas.js';

/**
 * The rules a video creation request must meet beyond its JSON schema. Each failure is a 400
 * naming the field; an unknown model is a 404.
 * @see https://kling.ai/document-api/apiReference/model/textToVideo
 * @see https://kling.ai/document-api/apiReference/commonInfo
 */

export const IMAGE_MAX_BYTES = 10 * 1024 * 1024;
export const IMAGE_MIN_SIDE = 300;
export const IMAGE_MAX_RATIO = 2.5;

/** What the task store needs from a valid creation request. */
export interface TaskSpec {
  kind: VideoKind;
  model: VideoModel;
  /** Seconds, as the result reports them (a string, as upstream). */
  duration: string;
  externalId: string;
  callbackUrl: string | undefined;
}

const quote = (values: readonly string[]) => values.map((v) => `"${v}"`).join(', ');

function checkModel(kind: VideoKind, name: string | undefined): VideoModel {
  const model = name ?? DEFAULT_MODEL[kind];
  if (model === undefined) throw fieldError(['model_name'], 'is required', 'missing');
  if (!isVideoModel(model)) {
    throw new GatewayError(404, `model_name: model "${model}" does not exist`, { code: 1203 });
  }
  const allowed = MODELS_BY_KIND[kind];
  if (!allowed.includes(model)) {
    throw fieldError(['model_name'], `must be one of ${quote(allowed)} for ${kind}`);
  }
  return model;
}

function isHttpUrl(value: string): boolean {
  if (!/^https?:\/\//i.test(value)) return false;
  try {
    const url = new URL(value);
    return url.hostname.length > 0;
  } catch {
    return false;
  }
}

function checkUrl(path: PathSegment[], value: string): void {
  if (!isHttpUrl(value)) throw fieldError(path, 'must be a public http(s) URL');
}

/** An image is a public URL, or Base64 (no `data:` prefix) of a real JPEG or PNG. */
function checkImage(path: PathSegment[], value: string): void {
  if (isHttpUrl(value)) return;
  if (value.startsWith('data:')) {
    throw fieldError(path, 'must be a URL or raw Base64 without a "data:" prefix');
  }
  const bytes = decodeBase64(value);
  if (!bytes) throw fieldError(path, 'must be a public http(s) URL or Base64 image content');
  if (bytes.length > IMAGE_MAX_BYTES) throw fieldError(path, 'must be an image of at most 10 MB');
  const info = inspectImage(bytes);
  if (info?.format !== 'jpeg' && info?.format !== 'png') {
    throw fieldError(path, 'must be a JPEG or PNG image');
  }
  const { width, height } = info;
  if (width < IMAGE_MIN_SIDE || height < IMAGE_MIN_SIDE) {
    throw fieldError(path, `must be at least 300x300 pixels (got ${width}x${height})`);
  }
  if (Math.max(width / height, height / width) > IMAGE_MAX_RATIO) {
    throw fieldError(
      path,
      `must have an aspect ratio between 1:2.5 and 2.5:1 (got ${width}x${height})`,
    );
  }
}

function checkDuration(model: VideoModel, value: string, allowed = MODEL_RULES[model].durations) {
  if (!allowed.includes(value)) {
    throw fieldError(['duration'], `must be one of ${quote(allowed)} for ${model}`);
  }
}

interface Common {
  mode?: 'std' | 'pro';
  sound?: 'on' | 'off';
  cfg_scale?: number;
  callback_url?: string;
  external_task_id?: string;
}

function checkCommon(model: VideoModel, body: Common): void {
  const rules = MODEL_RULES[model];
  if (body.sound === 'on' && !rules.sound) {
    throw fieldError(['sound'], `must be "off" for ${model} (sound needs v2.6 or later)`);
  }
  if (body.sound === 'on' && rules.soundNeedsPro && body.mode !== 'pro') {
    throw fieldError(['sound'], `must be "off" unless mode is "pro" for ${model}`);
  }
  if (body.cfg_scale !== undefined && !rules.cfgScale) {
    throw fieldError(['cfg_scale'], `is not supported by ${model}`);
  }
  if (body.callback_url) checkUrl(['callback_url'], body.callback_url);
}

interface MultiShot {
  multi_shot?: boolean;
  shot_type?: 'customize' | 'intelligence';
  multi_prompt?: Array<{ index: number; prompt: string; duration: number }>;
}

/** Multi-shot: `shot_type` required; `customize` needs shots 1..n whose durations sum up. */
function checkMultiShot(model: VideoModel, body: MultiShot, duration: string | undefined): void {
  if (!body.multi_shot) return;
  if (!MODEL_RULES[model].multiShot)
    throw fieldError(['multi_shot'], `is not supported by ${model}`);
  if (!body.shot_type)
    throw fieldError(['shot_type'], 'is required when multi_shot is true', 'missing');
  if (body.shot_type !== 'customize') return;
  const shots = body.multi_prompt;
  if (!shots) {
    throw fieldError(['multi_prompt'], 'is required when shot_type is "customize"', 'missing');
  }
  shots.forEach((shot, i) => {
    if (shot.index !== i + 1) {
      throw fieldError(
        ['multi_prompt', i, 'index'],
        `must be ${i + 1} (shots are numbered 1..n in order)`,
      );
    }
  });
  const total = shots.reduce((sum, shot) => sum + shot.duration, 0);
  if (duration === undefined) {
    throw fieldError(['duration'], 'is required with customized multi-shot', 'missing');
  }
  if (total !== Number(duration)) {
    throw fieldError(
      ['multi_prompt'],
      `durations must add up to duration ${duration} (got ${total})`,
    );
  }
}

/** Every `<<<type_N>>>` token must point at an existing item of that list (1-based). */
function checkReferences(
  prompts: Array<{ path: PathSegment[]; text: string | undefined }>,
  counts: Record<string, number>,
): void {
  for (const { path, text } of prompts) {
    for (const match of text?.matchAll(/<<<(\w+?)_(\d+)>>>/g) ?? []) {
      const [token, type = '', position = '0'] = match;
      const count = counts[type];
      if (count === undefined) {
        throw fieldError(
          path,
          `refers to ${token}, but only video, image and element can be referred to`,
        );
      }
      const n = Number(position);
      if (n < 1 || n > count) {
        throw fieldError(path, `refers to ${token}, but ${type}_list has ${count} item(s)`);
      }
    }
  }
}

const spec = (kind: VideoKind, model: VideoModel, duration: string, body: Common): TaskSpec => ({
  kind,
  model,
  duration,
  externalId: body.external_task_id ?? '',
  callbackUrl: body.callback_url || undefined,
});

export function checkText2Video(body: Text2VideoRequest): TaskSpec {
  const model = checkModel('text2video', body.model_name);
  checkCommon(model, body);
  if (!body.multi_shot && !body.prompt) throw fieldError(['prompt'], 'is required', 'missing');
  checkDuration(model, body.duration);
  checkMultiShot(model, body, body.duration);
  return spec('text2video', model, body.duration, body);
}

export function checkImage2Video(body: Image2VideoRequest): TaskSpec {
  const model = checkModel('image2video', body.model_name);
  checkCommon(model, body);
  checkImage(['image'], body.image);
  if (body.image_tail !== undefined) {
    checkImage(['image_tail'], body.image_tail);
    if (MODEL_RULES[model].tailNeedsPro && body.mode !== 'pro') {
      throw fieldError(['image_tail'], `needs mode "pro" for ${model}`);
    }
  }
  checkDuration(model, body.duration);
  return spec('image2video', model, body.duration, body);
}

/** The output follows the reference video's length; the emulator's clip is 5 s. */
export const MOTION_CONTROL_DURATION = '5';

export function checkMotionControl(body: MotionControlRequest): TaskSpec {
  const model = checkModel('motion-control', body.model_name);
  checkCommon(model, body);
  checkImage(['image_url'], body.image_url);
  checkUrl(['video_url'], body.video_url);
  return spec('motion-control', model, MOTION_CONTROL_DURATION, body);
}

export function checkOmniVideo(body: OmniVideoRequest): TaskSpec {
  const model = checkModel('omni-video', body.model_name);
  checkCommon(model, body);
  const images = body.image_list ?? [];
  const videos = body.video_list ?? [];
  const elements = body.element_list ?? [];
  const customized = body.multi_shot === true && body.shot_type === 'customize';
  if (!body.prompt && !customized) throw fieldError(['prompt'], 'is required', 'missing');

  images.forEach((image, i) => {
    checkImage(['image_list', i, 'image_url'], image.image_url);
  });
  videos.forEach((video, i) => {
    checkUrl(['video_list', i, 'video_url'], video.video_url);
  });
  const limit = videos.length > 0 ? 4 : 7;
  if (images.length + elements.length > limit) {
    throw fieldError(
      ['image_list'],
      `and element_list may hold at most ${limit} items together${videos.length > 0 ? ' with a reference video' : ''}`,
    );
  }
  const firstFrame = images.some((image) => image.type === 'first_frame');
  const endFrame = images.findIndex((image) => image.type === 'end_frame');
  if (endFrame !== -1 && !firstFrame) {
    throw fieldError(['image_list', endFrame, 'type'], 'end_frame needs a first_frame image');
  }
  if (endFrame !== -1 && images.length > 2) {
    throw fieldError(
      ['image_list', endFrame, 'type'],
      'end_frame is not allowed with more than 2 images',
    );
  }
  const baseEdit = videos.some((video) => video.refer_type === 'base');
  if (body.sound === 'on' && videos.length > 0) {
    throw fieldError(['sound'], 'must be "off" when video_list is given');
  }
  if (!body.aspect_ratio && !firstFrame && !baseEdit) {
    throw fieldError(
      ['aspect_ratio'],
      'is required unless a first frame or a base video is given',
      'missing',
    );
  }

  const duration = body.duration ?? '5';
  if (baseEdit) {
    if (body.duration !== undefined) {
      throw fieldError(
        ['duration'],
        'cannot be set when editing a base video (it follows the video)',
      );
    }
  } else {
    // o1 renders only 5 or 10 s for text-to-video and first-frame image-to-video.
    const plain =
      model === 'vid-video-o1' &&
      videos.length === 0 &&
      elements.length === 0 &&
      (images.length === 0 || (firstFrame && images.length <= 2));
    checkDuration(model, duration, plain ? ['5', '10'] : undefined);
  }
  checkMultiShot(model, body, body.duration);

  checkReferences(
    [
      { path: ['prompt'], text: body.prompt },
      ...(body.multi_prompt ?? []).map((shot, i) => ({
        path: ['multi_prompt', i, 'prompt'] as PathSegment[],
        text: shot.prompt,
      })),
    ],
    { video: videos.length, image: images.length, element: elements.length },
  );
  return spec('omni-video', model, duration, body);
}

export function checkMultiImage2Video(body: MultiImage2VideoRequest): TaskSpec {
  const model = checkModel('multi-image2video', body.model_name);
  checkCommon(model, body);
  body.image_list.forEach((item, i) => {
    checkImage(['image_list', i, 'image'], item.image);
  });
  const duration = body.duration ?? '5';
  checkDuration(model, duration);
  return spec('multi-image2video', model, duration, body);
}
