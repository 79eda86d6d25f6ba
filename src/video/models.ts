/**
 * The video models of the gateway and what each accepts (upstream's, renamed
 * `kling-*` → `vid-*`).
 */

export type VideoKind =
  | 'text2video'
  | 'image2video'
  | 'motion-control'
  | 'omni-video'
  | 'multi-image2video';

export type VideoModel =
  | 'vid-v1-6'
  | 'vid-v2-5-turbo'
  | 'vid-v2-6'
  | 'vid-v3'
  | 'vid-video-o1'
  | 'vid-v3-omni';

/** Models per capability. @see https://kling.ai/document-api/apiReference/model/videoModels */
export const MODELS_BY_KIND: Record<VideoKind, readonly VideoModel[]> = {
  text2video: ['vid-v3', 'vid-v2-5-turbo', 'vid-v1-6'],
  image2video: ['vid-v3', 'vid-v2-5-turbo', 'vid-v1-6'],
  'motion-control': ['vid-v2-6'],
  'omni-video': ['vid-video-o1', 'vid-v3-omni'],
  'multi-image2video': ['vid-v1-6'],
};

/** Default model where the upstream API has one and the gateway does not require the field. */
export const DEFAULT_MODEL: Partial<Record<VideoKind, VideoModel>> = {
  'omni-video': 'vid-video-o1',
  'multi-image2video': 'vid-v1-6',
};

const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => String(from + i));

export interface ModelRules {
  durations: readonly string[];
  /** `sound: "on"` allowed (v2.6 and later). */
  sound: boolean;
  /** `sound: "on"` needs `mode: "pro"` (v2.6: std has no audio). */
  soundNeedsPro: boolean;
  /** `image_tail` (an end frame) needs `mode: "pro"`. */
  tailNeedsPro: boolean;
  /** `cfg_scale` allowed (not on v2.x models). */
  cfgScale: boolean;
  multiShot: boolean;
}

export const MODEL_RULES: Record<VideoModel, ModelRules> = {
  'vid-v1-6': {
    durations: ['5', '10'],
    sound: false,
    soundNeedsPro: false,
    tailNeedsPro: false,
    cfgScale: true,
    multiShot: false,
  },
  'vid-v2-5-turbo': {
    durations: ['5', '10'],
    sound: false,
    soundNeedsPro: false,
    tailNeedsPro: true,
    cfgScale: false,
    multiShot: false,
  },
  'vid-v2-6': {
    durations: ['5', '10'],
    sound: true,
    soundNeedsPro: true,
    tailNeedsPro: false,
    cfgScale: false,
    multiShot: false,
  },
  'vid-v3': {
    durations: range(3, 15),
    sound: true,
    soundNeedsPro: false,
    tailNeedsPro: false,
    cfgScale: true,
    multiShot: true,
  },
  'vid-video-o1': {
    durations: range(3, 10),
    sound: false,
    soundNeedsPro: false,
    tailNeedsPro: false,
    cfgScale: false,
    multiShot: true,
  },
  'vid-v3-omni': {
    durations: range(3, 15),
    sound: true,
    soundNeedsPro: false,
    tailNeedsPro: false,
    cfgScale: false,
    multiShot: true,
  },
};

export const isVideoModel = (name: string): name is VideoModel => name in MODEL_RULES;
