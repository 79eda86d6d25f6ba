import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { PROMPT_FILTERED_MESSAGE } from '../../src/chat/service.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';

/** Uses the shipped fixtures: blocked term "forbidden-demo-term" (violence, medium). */
const AUTH = { authorization: 'Bearer k' };
const SAFE = { filtered: false, severity: 'safe' };

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const chat = (content: string, extra: object = {}) =>
  t.inject({
    method: 'POST',
    url: '/v1/chat/completions',
    headers: AUTH,
    payload: { model: 'chat-model', messages: [{ role: 'user', content }], ...extra },
  });

describe('Azure-style content filter', () => {
  it('refuses a prompt with a blocked term: 400, code content_filter, innererror', async () => {
    const res = await chat('Tell me about the FORBIDDEN-DEMO-TERM please');
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: {
        message: PROMPT_FILTERED_MESSAGE,
        type: null,
        param: 'prompt',
        code: 'content_filter',
        status: 400,
        innererror: {
          code: 'ResponsibleAIPolicyViolation',
          content_filter_result: {
            hate: SAFE,
            self_harm: SAFE,
            sexual: SAFE,
            violence: { filtered: true, severity: 'medium' },
          },
        },
      },
    });
  });

  it('ends a reply that contains one with finish_reason content_filter', async () => {
    const res = await chat('[demo] unsafe reply');
    expect(res.statusCode).toBe(200);
    expect(res.json().choices[0]).toEqual({
      index: 0,
      finish_reason: 'content_filter',
      logprobs: null,
      message: { role: 'assistant', content: 'Here is the ', refusal: null, annotations: [] },
      content_filter_results: {
        hate: SAFE,
        self_harm: SAFE,
        sexual: SAFE,
        violence: { filtered: true, severity: 'medium' },
        protected_material_code: { filtered: false, detected: false },
        protected_material_text: { filtered: false, detected: false },
      },
    });
    expect(res.json().usage.completion_tokens).toBe(3);
  });

  it('streams the same cut and marks the finish frame', async () => {
    const frames = parseSse((await chat('[demo] unsafe reply', { stream: true })).body);
    const chunks = frames
      .slice(1, -1)
      .map((f) => (f.data as { choices: Array<Record<string, unknown>> }).choices[0]);
    const text = chunks
      .map((c) => (c?.delta as { content?: string } | undefined)?.content ?? '')
      .join('');
    expect(text).toBe('Here is the ');
    expect(chunks.at(-1)).toMatchObject({
      finish_reason: 'content_filter',
      content_filter_results: { violence: { filtered: true, severity: 'medium' } },
    });
  });
});
