import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CONTENT_SAFETY_MESSAGE } from '../../src/video/tasks.js';
import { buildTestApp, MEDIA_TOKEN_1, T0, type TestApp } from '../helpers/app.js';
import { IMAGES } from '../helpers/images.js';
import { submitted } from '../helpers/video.js';

const KEY = { authorization: 'Bearer key-a' };
const IMG = 'https://cdn.example.com/cat.png';

/** A minimal valid creation body per kind. */
const BODIES = {
  text2video: { model_name: 'vid-v3', prompt: 'a cat on a skateboard', duration: '5' },
  image2video: { model_name: 'vid-v1-6', image: IMAGES.png320, prompt: 'wave', duration: '10' },
  'motion-control': {
    model_name: 'vid-v2-6',
    image_url: IMG,
    video_url: 'https://cdn.example.com/dance.mp4',
    character_orientation: 'image',
    mode: 'pro',
  },
  'omni-video': {
    model_name: 'vid-video-o1',
    prompt: 'Restyle <<<image_1>>> like <<<video_1>>>',
    image_list: [{ image_url: IMG }],
    video_list: [{ video_url: 'https://cdn.example.com/ref.mp4', refer_type: 'feature' }],
    aspect_ratio: '16:9',
    duration: '6',
  },
  'multi-image2video': {
    image_list: [{ image: IMG }, { image: IMAGES.jpeg640x360 }],
    prompt: 'morph between them',
    duration: '10',
  },
} as const;
const DURATIONS = {
  text2video: '5',
  image2video: '10',
  'motion-control': '5',
  'omni-video': '6',
  'multi-image2video': '10',
};
type Kind = keyof typeof BODIES;
const KINDS = Object.keys(BODIES) as Kind[];

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const create = (kind: Kind, body: object = BODIES[kind], key = 'key-a') =>
  t.video(kind, body, { key });
const query = (kind: Kind, id: string, key = 'key-a') =>
  t.video(`${kind}/${id}`, undefined, { key });
const advance = (ms: number) =>
  t.inject({ method: 'POST', url: '/_emulator/clock/advance', payload: { ms } });

const record = (id: string, status: string, updatedAt: number, extra: object = {}) => ({
  task_id: id,
  task_status: status,
  task_status_msg: '',
  task_info: { external_task_id: '' },
  task_result: { videos: [] },
  created_at: T0,
  updated_at: updatedAt,
  ...extra,
});

describe.each(KINDS)('%s tasks', (kind) => {
  it('are created with the success envelope and move submitted → processing → succeed', async () => {
    const res = await create(kind);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual(submitted('1000001', 'req_1'));

    const polled = async () => (await query(kind, '1000001')).json();
    expect(await polled()).toEqual({
      code: 0,
      message: 'success',
      request_id: expect.stringMatching(/^req_/),
      data: record('1000001', 'submitted', T0),
    });
    await advance(1999);
    expect((await polled()).data.task_status).toBe('submitted');
    await advance(1);
    expect((await polled()).data).toEqual(record('1000001', 'processing', T0 + 2000));
    await advance(7999);
    expect((await polled()).data.task_status).toBe('processing');
    await advance(1);
    expect((await polled()).data).toEqual(
      record('1000001', 'succeed', T0 + 10_000, {
        task_result: {
          videos: [
            {
              id: 'v1000001',
              url: `http://localhost:80/media/videos/${MEDIA_TOKEN_1}/v1000001.mp4`,
              duration: DURATIONS[kind],
            },
          ],
        },
      }),
    );
  });

  it('are found only under their own kind and by the key that made them', async () => {
    await create(kind);
    const otherKind = KINDS.find((k) => k !== kind) as Kind;
    for (const res of [await query(otherKind, '1000001'), await query(kind, '1000001', 'key-b')]) {
      expect(res.statusCode).toBe(404);
      expect(res.json()).toEqual({
        code: 1203,
        message: 'task 1000001 does not exist',
        request_id: expect.any(String),
      });
    }
  });
});

describe('video task details', () => {
  it('finds a task by the caller external_task_id, unique per key', async () => {
    const body = { ...BODIES.text2video, external_task_id: 'order-42' };
    await create('text2video', body);
    const res = await query('text2video', 'order-42');
    expect(res.json().data).toEqual(
      record('1000001', 'submitted', T0, { task_info: { external_task_id: 'order-42' } }),
    );

    const duplicate = await create('text2video', body);
    expect(duplicate.statusCode).toBe(400);
    expect(duplicate.json()).toEqual({
      code: 1201,
      message: 'Invalid parameter: external_task_id is already used by another task of this key',
      request_id: expect.any(String),
    });
    // Another key may use the same external id.
    expect((await create('text2video', body, 'key-b')).statusCode).toBe(200);
    expect((await query('text2video', 'order-42', 'key-b')).json().data.task_id).toBe('1000002');
  });

  it('ends failed with a content-safety message when asked by header', async () => {
    await t.inject({
      method: 'POST',
      url: '/videogen/v1/videos/text2video',
      headers: { ...KEY, 'x-emulator-task-outcome': 'failed' },
      payload: BODIES.text2video,
    });
    await advance(10_000);
    expect((await query('text2video', '1000001')).json().data).toEqual(
      record('1000001', 'failed', T0 + 10_000, { task_status_msg: CONTENT_SAFETY_MESSAGE }),
    );
    const bad = await t.inject({
      method: 'POST',
      url: '/videogen/v1/videos/text2video',
      headers: { ...KEY, 'x-emulator-task-outcome': 'explode' },
      payload: BODIES.text2video,
    });
    expect(bad.statusCode).toBe(400);
    expect(bad.json().message).toBe('x-emulator-task-outcome header must be "failed" or "succeed"');
  });

  it('can be forced into any status through the control surface', async () => {
    await create('text2video');
    const forced = await t.inject({
      method: 'POST',
      url: '/_emulator/tasks/1000001',
      payload: { status: 'failed', message: 'GPU on fire' },
    });
    expect(forced.json()).toEqual(
      record('1000001', 'failed', T0, { task_status_msg: 'GPU on fire' }),
    );
    await advance(60_000);
    expect((await query('text2video', '1000001')).json().data.task_status).toBe('failed');
    const missing = await t.inject({
      method: 'POST',
      url: '/_emulator/tasks/999',
      payload: { status: 'succeed' },
    });
    expect(missing.statusCode).toBe(404);
    const invalid = await t.inject({
      method: 'POST',
      url: '/_emulator/tasks/1000001',
      payload: { status: 'done' },
    });
    expect(invalid.statusCode).toBe(400);
  });

  it('lists this key tasks of a kind, newest first, with pageNum and pageSize', async () => {
    for (let i = 0; i < 5; i++) await create('text2video');
    await create('image2video');
    await create('text2video', BODIES.text2video, 'key-b');
    const list = async (qs: string) =>
      (await t.inject({ url: `/videogen/v1/videos/text2video${qs}`, headers: KEY })).json();
    const ids = (body: { data: Array<{ task_id: string }> }) => body.data.map((d) => d.task_id);
    expect(ids(await list(''))).toEqual(['1000005', '1000004', '1000003', '1000002', '1000001']);
    expect(ids(await list('?pageNum=2&pageSize=2'))).toEqual(['1000003', '1000002']);
    expect(ids(await list('?pageNum=4&pageSize=2'))).toEqual([]);
    const whole = await list('?pageSize=1');
    expect(whole).toEqual({
      code: 0,
      message: 'success',
      request_id: expect.any(String),
      data: [record('1000005', 'submitted', T0)],
    });
    for (const qs of ['?pageSize=501', '?pageNum=0', '?pageNum=1001', '?pageSize=x']) {
      const res = await t.inject({ url: `/videogen/v1/videos/text2video${qs}`, headers: KEY });
      expect(res.statusCode).toBe(400);
      expect(res.json().code).toBe(1201);
      expect(res.json().message).toMatch(/^Invalid parameter: page(Num|Size) /);
    }
  });

  it('builds result URLs on PUBLIC_BASE_URL when set', async () => {
    const app = await buildTestApp({
      publicBaseUrl: 'https://emu.example.com/',
      videoQueueMs: 0,
      videoRenderMs: 0,
    });
    await app.inject({
      method: 'POST',
      url: '/videogen/v1/videos/text2video',
      headers: KEY,
      payload: BODIES.text2video,
    });
    const res = await app.inject({ url: '/videogen/v1/videos/text2video/1000001', headers: KEY });
    expect(res.json().data.task_result.videos[0].url).toBe(
      `https://emu.example.com/media/videos/${MEDIA_TOKEN_1}/v1000001.mp4`,
    );
    await app.app.close();
  });

  it('keeps at most MAX_TASKS tasks, evicting the oldest finished first', async () => {
    const app = await buildTestApp({ maxTasks: 3 });
    const make = (headers = KEY) =>
      app.inject({
        method: 'POST',
        url: '/videogen/v1/videos/text2video',
        headers,
        payload: BODIES.text2video,
      });
    await make();
    await make();
    await app.inject({
      method: 'POST',
      url: '/_emulator/tasks/1000002',
      payload: { status: 'succeed' },
    });
    await make();
    await make(); // 4th task: 1000002 is the oldest finished one
    const found = async (id: string) =>
      (await app.inject({ url: `/videogen/v1/videos/text2video/${id}`, headers: KEY })).statusCode;
    expect(await Promise.all(['1000001', '1000002', '1000003', '1000004'].map(found))).toEqual([
      200, 404, 200, 200,
    ]);
    await make(); // none finished: the oldest goes
    expect(await found('1000001')).toBe(404);
    expect((await app.inject({ url: '/_emulator/tasks' })).json().size).toBe(3);
    await app.app.close();
  });

  it('empties on reset', async () => {
    await create('text2video');
    await t.inject({ method: 'POST', url: '/_emulator/reset' });
    expect((await query('text2video', '1000001')).statusCode).toBe(404);
  });
});

describe('video validation over HTTP', () => {
  const error = (message: string, code = 1201) => ({
    code,
    message,
    request_id: expect.any(String),
  });

  it.each([
    [
      'text2video',
      { prompt: 'x', duration: '5' },
      error('Invalid parameter: model_name is required'),
    ],
    [
      'text2video',
      { model_name: 'vid-v1-6', prompt: 'x' },
      error('Invalid parameter: duration is required'),
    ],
    [
      'text2video',
      { model_name: 'vid-v1-6', prompt: 'x', duration: 5 },
      error('Invalid parameter: duration must be a string'),
    ],
    [
      'text2video',
      { model_name: 'vid-v1-6', prompt: 'x'.repeat(2501), duration: '5' },
      error('Invalid parameter: prompt must have at most 2500 characters'),
    ],
    [
      'text2video',
      { model_name: 'vid-v1-6', prompt: 'x', negative_prompt: 'y'.repeat(2501), duration: '5' },
      error('Invalid parameter: negative_prompt must have at most 2500 characters'),
    ],
    [
      'text2video',
      { model_name: 'vid-v1-6', prompt: 'x', duration: '5', mode: 'ultra' },
      error('Invalid parameter: mode must be one of "std", "pro"'),
    ],
    [
      'text2video',
      { model_name: 'vid-v1-6', prompt: 'x', duration: '5', aspect_ratio: '4:3' },
      error('Invalid parameter: aspect_ratio must be one of "16:9", "9:16", "1:1"'),
    ],
    [
      'text2video',
      { model_name: 'vid-v1-6', prompt: 'x', duration: '5', sound: 'loud' },
      error('Invalid parameter: sound must be one of "on", "off"'),
    ],
    [
      'text2video',
      {
        model_name: 'vid-v3',
        duration: '5',
        multi_shot: true,
        shot_type: 'customize',
        multi_prompt: [{ index: 1, prompt: 'a', duration: '5' }],
      },
      error('Invalid parameter: multi_prompt[0].duration must be an integer'),
    ],
    [
      'text2video',
      { model_name: 'vid-v3', duration: '5', multi_shot: true, shot_type: 'auto' },
      error('Invalid parameter: shot_type must be one of "customize", "intelligence"'),
    ],
    [
      'image2video',
      { model_name: 'vid-v1-6', prompt: 'x', duration: '5' },
      error('Invalid parameter: image is required'),
    ],
    [
      'motion-control',
      { model_name: 'vid-v2-6', image_url: IMG },
      error('Invalid parameter: video_url is required'),
    ],
    [
      'motion-control',
      {
        model_name: 'vid-v2-6',
        image_url: IMG,
        video_url: 'https://v/x.mp4',
        keep_original_sound: 'maybe',
      },
      error('Invalid parameter: keep_original_sound must be one of "yes", "no"'),
    ],
    [
      'motion-control',
      {
        model_name: 'vid-v2-6',
        image_url: IMG,
        video_url: 'https://v/x.mp4',
        character_orientation: 'left',
      },
      error('Invalid parameter: character_orientation must be one of "image", "video"'),
    ],
    [
      'omni-video',
      {
        prompt: 'x',
        aspect_ratio: '1:1',
        video_list: [{ video_url: 'https://v/x.mp4', refer_type: 'style' }],
      },
      error('Invalid parameter: video_list[0].refer_type must be one of "feature", "base"'),
    ],
    [
      'multi-image2video',
      { image_list: [1, 2, 3, 4, 5].map(() => ({ image: IMG })), prompt: 'x' },
      error('Invalid parameter: image_list must have at most 4 item(s)'),
    ],
    [
      'multi-image2video',
      { image_list: [], prompt: 'x' },
      error('Invalid parameter: image_list must have at least 1 item(s)'),
    ],
    [
      'text2video',
      { model_name: 'vid-v9', prompt: 'x', duration: '5' },
      error('model_name: model "vid-v9" does not exist', 1203),
    ],
    // A model of another kind: refused by the kind's schema, worded as before it was there.
    [
      'text2video',
      { model_name: 'vid-video-o1', prompt: 'x', duration: '5' },
      error(
        'Invalid parameter: model_name must be one of "vid-v3", "vid-v2-5-turbo", "vid-v1-6" for text2video',
      ),
    ],
    [
      'motion-control',
      { model_name: 'vid-v1-6', image_url: IMG, video_url: 'https://example.com/v.mp4' },
      error('Invalid parameter: model_name must be one of "vid-v2-6" for motion-control'),
    ],
    [
      'omni-video',
      { model_name: 'vid-v3', prompt: 'x', aspect_ratio: '16:9' },
      error(
        'Invalid parameter: model_name must be one of "vid-video-o1", "vid-v3-omni" for omni-video',
      ),
    ],
  ] as const)('%s refuses %j', async (kind, body, expected) => {
    const res = await create(kind, body);
    expect(res.statusCode).toBe(expected.code === 1203 ? 404 : 400);
    expect(res.json()).toEqual(expected);
  });

  it('refuses a wrong content type and unknown kinds', async () => {
    const res = await t.inject({
      method: 'POST',
      url: '/videogen/v1/videos/text2video',
      headers: { ...KEY, 'content-type': 'text/plain' },
      payload: 'a cat',
    });
    expect(res.statusCode).toBe(415);
    expect(res.json().code).toBe(1200);
    const unknown = await t.inject({
      method: 'POST',
      url: '/videogen/v1/videos/text2audio',
      headers: KEY,
      payload: {},
    });
    expect(unknown.statusCode).toBe(404);
    expect(unknown.json().code).toBe(1202);
  });
});
