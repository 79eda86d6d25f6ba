import { afterEach, describe, expect, it, vi } from 'vitest';
import { Replies } from '../../src/text/replies.js';
import { VideoService } from '../../src/video/service.js';
import { buildTestApp, MEDIA_TOKEN_1, type TestApp } from '../helpers/app.js';

let t: TestApp;
afterEach(async () => {
  vi.restoreAllMocks();
  await t.app.close();
});

const boom = () => {
  throw new Error('boom');
};

/** The error log line of request `id`, parsed. */
const errorLine = (logs: string[], id: string) =>
  logs
    .map((line) => JSON.parse(line) as { level: number; reqId?: string; msg: string })
    .find((line) => line.level >= 50 && line.reqId === id && line.msg === 'request failed');

describe('an unexpected error in a route', () => {
  it('is a 500 in the video envelope, logged with the request id', async () => {
    vi.spyOn(VideoService.prototype, 'create').mockImplementation(boom);
    t = await buildTestApp();
    const res = await t.inject({
      method: 'POST',
      url: '/videogen/v1/videos/text2video',
      headers: { authorization: 'Bearer k' },
      payload: { model_name: 'vid-v1-6', prompt: 'a cat', duration: '5' },
    });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      code: 5000,
      message: 'The server had an error while processing your request.',
      request_id: 'req_1',
    });
    expect(errorLine(t.deps.logs, 'req_1')).toBeDefined();
  });

  it('is a 500 (never a 404) in the video envelope on the media route', async () => {
    vi.spyOn(VideoService.prototype, 'hasResult').mockImplementation(boom);
    t = await buildTestApp();
    const res = await t.inject({ url: `/media/videos/${MEDIA_TOKEN_1}/v1000001.mp4` });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      code: 5000,
      message: 'The server had an error while processing your request.',
      request_id: 'req_1',
    });
    expect(errorLine(t.deps.logs, 'req_1')).toBeDefined();
  });

  it('is a 500 in the messages envelope, with the request-id header', async () => {
    vi.spyOn(Replies.prototype, 'replies').mockImplementation(boom);
    t = await buildTestApp();
    const res = await t.inject({
      method: 'POST',
      url: '/messages-api/v1/messages',
      headers: { 'x-api-key': 'k', 'msgapi-version': '2023-06-01' },
      payload: { model: 'm', max_tokens: 10, messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.statusCode).toBe(500);
    expect(res.headers['request-id']).toBe('req_1');
    expect(res.json()).toEqual({
      type: 'error',
      error: {
        type: 'api_error',
        message: 'The server had an error while processing your request.',
      },
      request_id: 'req_1',
    });
    expect(errorLine(t.deps.logs, 'req_1')).toBeDefined();
  });

  it('is a 500 in the chat envelope', async () => {
    vi.spyOn(Replies.prototype, 'replies').mockImplementation(boom);
    t = await buildTestApp();
    const res = await t.inject({
      method: 'POST',
      url: '/v1/chat/completions',
      headers: { authorization: 'Bearer k' },
      payload: { model: 'm', messages: [{ role: 'user', content: 'hi' }] },
    });
    expect(res.statusCode).toBe(500);
    expect(res.json()).toEqual({
      error: {
        message: 'The server had an error while processing your request.',
        type: 'server_error',
        param: null,
        code: null,
      },
    });
    expect(errorLine(t.deps.logs, 'req_1')).toBeDefined();
  });
});
