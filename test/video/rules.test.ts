import { describe, expect, it } from 'vitest';
import { GatewayError } from '../../src/platform/errors.js';
import {
  checkImage2Video,
  checkMotionControl,
  checkMultiImage2Video,
  checkOmniVideo,
  checkText2Video,
} from '../../src/video/rules.js';
import { IMAGES } from '../helpers/images.js';

/** The error a rule throws, as `{status, code?, path, problem}`. */
function failure(fn: () => unknown) {
  try {
    fn();
  } catch (err) {
    if (!(err instanceof GatewayError)) throw err;
    return {
      status: err.status,
      code: err.options.code,
      path: err.options.issue?.path,
      problem: err.options.issue?.problem ?? err.message,
    };
  }
  throw new Error('expected the rule to refuse the request');
}

const URL_IMG = 'https://cdn.example.com/cat.png';

describe('model per capability', () => {
  it.each([
    ['text2video', () => checkText2Video({ model_name: 'vid-v2-6', prompt: 'x', duration: '5' })],
    [
      'image2video',
      () =>
        checkImage2Video({
          model_name: 'vid-video-o1',
          image: URL_IMG,
          prompt: 'x',
          duration: '5',
        }),
    ],
    [
      'motion-control',
      () =>
        checkMotionControl({
          model_name: 'vid-v3',
          image_url: URL_IMG,
          video_url: 'https://v/x.mp4',
        }),
    ],
    [
      'omni-video',
      () => checkOmniVideo({ model_name: 'vid-v3', prompt: 'x', aspect_ratio: '1:1' }),
    ],
    [
      'multi-image2video',
      () =>
        checkMultiImage2Video({
          model_name: 'vid-v3',
          image_list: [{ image: URL_IMG }],
          prompt: 'x',
        }),
    ],
  ])('refuses a model of another capability for %s', (kind, fn) => {
    expect(failure(fn)).toMatchObject({ status: 400, path: ['model_name'] });
    expect(failure(fn).problem).toContain(`for ${kind}`);
  });

  it('answers 404 / 1203 for a model the gateway does not have', () => {
    expect(
      failure(() => checkText2Video({ model_name: 'vid-v9', prompt: 'x', duration: '5' })),
    ).toEqual({
      status: 404,
      code: 1203,
      path: undefined,
      problem: 'model_name: model "vid-v9" does not exist',
    });
  });

  it('defaults the model where upstream has a default', () => {
    expect(checkOmniVideo({ prompt: 'x', aspect_ratio: '16:9' }).model).toBe('vid-video-o1');
    expect(checkMultiImage2Video({ image_list: [{ image: URL_IMG }], prompt: 'x' }).model).toBe(
      'vid-v1-6',
    );
  });
});

describe('text2video', () => {
  const base = { model_name: 'vid-v1-6', prompt: 'a cat', duration: '5' };

  it('returns the task spec', () => {
    expect(
      checkText2Video({ ...base, external_task_id: 'e1', callback_url: 'http://127.0.0.1/cb' }),
    ).toEqual({
      kind: 'text2video',
      model: 'vid-v1-6',
      duration: '5',
      externalId: 'e1',
      callbackUrl: 'http://127.0.0.1/cb',
    });
  });

  it.each([
    [{ ...base, prompt: undefined }, ['prompt'], 'is required'],
    [{ ...base, duration: '7' }, ['duration'], 'must be one of "5", "10" for vid-v1-6'],
    [
      { ...base, model_name: 'vid-v3', duration: '16' },
      ['duration'],
      expect.stringContaining('"15"'),
    ],
    [{ ...base, sound: 'on' }, ['sound'], 'must be "off" for vid-v1-6 (sound needs v2.6 or later)'],
    [
      { ...base, model_name: 'vid-v2-5-turbo', cfg_scale: 0.5 },
      ['cfg_scale'],
      'is not supported by vid-v2-5-turbo',
    ],
    [{ ...base, callback_url: 'ftp://x' }, ['callback_url'], 'must be a public http(s) URL'],
    [{ ...base, multi_shot: true }, ['multi_shot'], 'is not supported by vid-v1-6'],
    [
      { ...base, model_name: 'vid-v3', multi_shot: true },
      ['shot_type'],
      'is required when multi_shot is true',
    ],
    [
      { ...base, model_name: 'vid-v3', multi_shot: true, shot_type: 'customize' },
      ['multi_prompt'],
      'is required when shot_type is "customize"',
    ],
    [
      {
        ...base,
        model_name: 'vid-v3',
        multi_shot: true,
        shot_type: 'customize',
        multi_prompt: [
          { index: 1, prompt: 'a', duration: 2 },
          { index: 3, prompt: 'b', duration: 3 },
        ],
      },
      ['multi_prompt', 1, 'index'],
      'must be 2 (shots are numbered 1..n in order)',
    ],
    [
      {
        ...base,
        model_name: 'vid-v3',
        duration: '6',
        multi_shot: true,
        shot_type: 'customize',
        multi_prompt: [
          { index: 1, prompt: 'a', duration: 2 },
          { index: 2, prompt: 'b', duration: 3 },
        ],
      },
      ['multi_prompt'],
      'durations must add up to duration 6 (got 5)',
    ],
  ] as const)('refuses %j', (body, path, problem) => {
    expect(failure(() => checkText2Video(body as never))).toEqual({
      status: 400,
      code: undefined,
      path,
      problem,
    });
  });

  it('accepts a customized multi-shot whose durations add up, without a prompt', () => {
    const spec = checkText2Video({
      model_name: 'vid-v3',
      duration: '5',
      multi_shot: true,
      shot_type: 'customize',
      multi_prompt: [
        { index: 1, prompt: 'a', duration: 2 },
        { index: 2, prompt: 'b', duration: 3 },
      ],
    });
    expect(spec.duration).toBe('5');
  });

  it('lets v2.6-style sound rules and v3 sound through', () => {
    expect(checkText2Video({ ...base, model_name: 'vid-v3', sound: 'on' }).model).toBe('vid-v3');
  });
});

describe('image inputs', () => {
  const base = { model_name: 'vid-v1-6', prompt: 'move', duration: '5' };
  it('accepts URLs and Base64 PNG or JPEG of at least 300 px', () => {
    expect(checkImage2Video({ ...base, image: URL_IMG }).kind).toBe('image2video');
    expect(
      checkImage2Video({ ...base, image: IMAGES.png320, image_tail: IMAGES.jpeg640x360 }).kind,
    ).toBe('image2video');
  });

  it.each([
    [
      { image: `data:image/png;base64,${IMAGES.png320}` },
      ['image'],
      'must be a URL or raw Base64 without a "data:" prefix',
    ],
    [
      { image: 'not base64 at all!' },
      ['image'],
      'must be a public http(s) URL or Base64 image content',
    ],
    [{ image: IMAGES.gif }, ['image'], 'must be a JPEG or PNG image'],
    [{ image: IMAGES.pngTooSmall }, ['image'], 'must be at least 300x300 pixels (got 200x200)'],
    [
      { image: IMAGES.jpegTooWide },
      ['image'],
      'must have an aspect ratio between 1:2.5 and 2.5:1 (got 1000x300)',
    ],
    [
      { image: URL_IMG, image_tail: 'ftp://x/y.png' },
      ['image_tail'],
      'must be a public http(s) URL or Base64 image content',
    ],
    [
      { image: URL_IMG, image_tail: URL_IMG, model_name: 'vid-v2-5-turbo', mode: 'std' },
      ['image_tail'],
      'needs mode "pro" for vid-v2-5-turbo',
    ],
  ] as const)('refuses %j', (extra, path, problem) => {
    expect(failure(() => checkImage2Video({ ...base, ...extra } as never))).toMatchObject({
      status: 400,
      path,
      problem,
    });
  });

  it('refuses an image over 10 MB', () => {
    const huge = Buffer.alloc(10 * 1024 * 1024 + 3, 0).toString('base64');
    expect(failure(() => checkImage2Video({ ...base, image: huge }))).toMatchObject({
      path: ['image'],
      problem: 'must be an image of at most 10 MB',
    });
  });

  it('checks every image of a multi-image request, naming its position', () => {
    expect(
      failure(() =>
        checkMultiImage2Video({
          image_list: [{ image: URL_IMG }, { image: IMAGES.gif }],
          prompt: 'x',
        }),
      ),
    ).toMatchObject({ path: ['image_list', 1, 'image'], problem: 'must be a JPEG or PNG image' });
  });
});

describe('motion-control', () => {
  it('needs a public video URL and reports a 5 s result', () => {
    const body = {
      model_name: 'vid-v2-6',
      image_url: URL_IMG,
      video_url: 'https://v.example.com/dance.mp4',
    };
    expect(checkMotionControl(body)).toMatchObject({ kind: 'motion-control', duration: '5' });
    expect(failure(() => checkMotionControl({ ...body, video_url: 'dance.mp4' }))).toMatchObject({
      path: ['video_url'],
      problem: 'must be a public http(s) URL',
    });
    expect(failure(() => checkMotionControl({ ...body, sound: 'on', mode: 'std' }))).toMatchObject({
      path: ['sound'],
      problem: 'must be "off" unless mode is "pro" for vid-v2-6',
    });
  });
});

describe('omni-video', () => {
  const video = { video_url: 'https://v.example.com/ref.mp4', refer_type: 'feature' as const };

  it('accepts references that point at existing items', () => {
    const spec = checkOmniVideo({
      model_name: 'vid-v3-omni',
      prompt: 'Put <<<image_1>>> into the style of <<<video_1>>> with <<<element_1>>>',
      aspect_ratio: '9:16',
      duration: '12',
      image_list: [{ image_url: URL_IMG }],
      element_list: [{ element_id: 42 }],
      video_list: [video],
    });
    expect(spec).toMatchObject({ kind: 'omni-video', model: 'vid-v3-omni', duration: '12' });
  });

  it.each([
    [
      { prompt: 'see <<<video_1>>>', aspect_ratio: '16:9' },
      ['prompt'],
      'refers to <<<video_1>>>, but video_list has 0 item(s)',
    ],
    [
      { prompt: 'see <<<image_2>>>', aspect_ratio: '16:9', image_list: [{ image_url: URL_IMG }] },
      ['prompt'],
      'refers to <<<image_2>>>, but image_list has 1 item(s)',
    ],
    [
      { prompt: 'see <<<image_0>>>', aspect_ratio: '16:9' },
      ['prompt'],
      'refers to <<<image_0>>>, but image_list has 0 item(s)',
    ],
    [
      { prompt: 'see <<<audio_1>>>', aspect_ratio: '16:9' },
      ['prompt'],
      'refers to <<<audio_1>>>, but only video, image and element can be referred to',
    ],
    [{ aspect_ratio: '16:9' }, ['prompt'], 'is required'],
    [
      { prompt: 'x' },
      ['aspect_ratio'],
      'is required unless a first frame or a base video is given',
    ],
    [
      { prompt: 'x', aspect_ratio: '16:9', duration: '7' },
      ['duration'],
      'must be one of "5", "10" for vid-video-o1',
    ],
    [
      {
        prompt: 'x',
        aspect_ratio: '16:9',
        video_list: [video],
        sound: 'on',
        model_name: 'vid-v3-omni',
      },
      ['sound'],
      'must be "off" when video_list is given',
    ],
    [
      { prompt: 'x', video_list: [{ ...video, refer_type: 'base' }], duration: '5' },
      ['duration'],
      'cannot be set when editing a base video (it follows the video)',
    ],
    [
      {
        prompt: 'x',
        aspect_ratio: '16:9',
        image_list: [{ image_url: URL_IMG, type: 'end_frame' }],
      },
      ['image_list', 0, 'type'],
      'end_frame needs a first_frame image',
    ],
    [
      {
        prompt: 'x',
        image_list: [
          { image_url: URL_IMG, type: 'first_frame' },
          { image_url: URL_IMG },
          { image_url: URL_IMG, type: 'end_frame' },
        ],
      },
      ['image_list', 2, 'type'],
      'end_frame is not allowed with more than 2 images',
    ],
    [
      {
        prompt: 'x',
        aspect_ratio: '16:9',
        video_list: [video],
        image_list: Array(5).fill({ image_url: URL_IMG }),
      },
      ['image_list'],
      'and element_list may hold at most 4 items together with a reference video',
    ],
    [
      {
        model_name: 'vid-v3-omni',
        aspect_ratio: '16:9',
        duration: '8',
        multi_shot: true,
        shot_type: 'customize',
        multi_prompt: [
          { index: 1, prompt: 'open on <<<image_1>>>', duration: 4 },
          { index: 2, prompt: 'close', duration: 4 },
        ],
      },
      ['multi_prompt', 0, 'prompt'],
      'refers to <<<image_1>>>, but image_list has 0 item(s)',
    ],
  ] as const)('refuses %j', (body, path, problem) => {
    expect(failure(() => checkOmniVideo(body as never))).toEqual({
      status: 400,
      code: undefined,
      path,
      problem,
    });
  });

  it('takes any o1 duration from 3 to 10 with reference material, and none for a base edit', () => {
    expect(
      checkOmniVideo({
        prompt: 'x <<<video_1>>>',
        aspect_ratio: '16:9',
        duration: '7',
        video_list: [video],
      }).duration,
    ).toBe('7');
    expect(
      checkOmniVideo({ prompt: 'edit', video_list: [{ ...video, refer_type: 'base' }] }).duration,
    ).toBe('5');
  });
});
