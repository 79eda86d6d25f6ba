import type { InjectOptions, LightMyRequestResponse } from 'fastify';

/** The credentials each API group expects, for a key. */
export const AUTH = {
  video: (key: string) => ({ authorization: `Bearer ${key}` }),
  messages: (key: string) => ({ 'x-api-key': key, 'msgapi-version': '2023-06-01' }),
  chat: (key: string) => ({ authorization: `Bearer ${key}` }),
};

export const TEST_KEY = 'test-key';

export interface GroupRequest {
  /** The API key (default `test-key`); `null` sends no credentials at all. */
  key?: string | null;
  /** Added after the group's credentials (so they may replace them). */
  headers?: Record<string, string>;
}

type Inject = (options: InjectOptions) => Promise<LightMyRequestResponse>;

/** One request helper per group, each setting that group's credentials. */
export function groupRequests(inject: Inject) {
  const headersOf = (group: keyof typeof AUTH, options: GroupRequest) => ({
    ...(options.key === null ? {} : AUTH[group](options.key ?? TEST_KEY)),
    ...options.headers,
  });
  return {
    /** `POST /v1/chat/completions`. */
    chat: (payload: unknown, options: GroupRequest = {}) =>
      inject({
        method: 'POST',
        url: '/v1/chat/completions',
        headers: headersOf('chat', options),
        payload: payload as object,
      }),
    /** `POST /messages-api/v1/messages` (or `url` under `/messages-api`). */
    messages: (payload: unknown, options: GroupRequest & { path?: string } = {}) =>
      inject({
        method: 'POST',
        url: `/messages-api/v1/messages${options.path ?? ''}`,
        headers: headersOf('messages', options),
        payload: payload as object,
      }),
    /** `/videogen/v1/videos/{path}`: a POST with a payload, else a GET. */
    video: (path: string, payload?: unknown, options: GroupRequest = {}) =>
      inject({
        method: payload === undefined ? 'GET' : 'POST',
        url: `/videogen/v1/videos/${path}`,
        headers: headersOf('video', options),
        ...(payload === undefined ? {} : { payload: payload as object }),
      }),
  };
}
