import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { systemFingerprint } from '../../src/chat/service.js';
import { countTokens } from '../../src/platform/tokens.js';
import { generateReply } from '../../src/text/default-reply.js';
import { finishText } from '../../src/text/finish.js';
import { buildTestApp, T0, type TestApp } from '../helpers/app.js';
import { CHOICE_FILTERS, PROMPT_FILTERS } from '../helpers/chat.js';

function usage(prompt: number, completion: number, cached = 0) {
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: prompt + completion,
    completion_tokens_details: {
      accepted_prediction_tokens: 0,
      audio_tokens: 0,
      reasoning_tokens: 0,
      rejected_prediction_tokens: 0,
    },
    prompt_tokens_details: { audio_tokens: 0, cached_tokens: cached },
  };
}

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const post = (payload: unknown) => t.chat(payload);

describe('POST /v1/chat/completions', () => {
  it('answers with the whole chat.completion object', async () => {
    const res = await post({
      model: 'chat-model',
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['x-request-id']).toBe('req_1');
    const text = generateReply('Hello there', 0).text;
    expect(res.json()).toEqual({
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: T0 / 1000,
      model: 'chat-model',
      system_fingerprint: systemFingerprint('chat-model'),
      choices: [
        {
          index: 0,
          finish_reason: 'stop',
          logprobs: null,
          message: { role: 'assistant', content: text, refusal: null, annotations: [] },
          content_filter_results: CHOICE_FILTERS,
        },
      ],
      prompt_filter_results: PROMPT_FILTERS,
      // 3 (priming) + 3 (message framing) + 4 ("Hello there")
      usage: usage(10, countTokens(text)),
    });
    expect(systemFingerprint('chat-model')).toMatch(/^fp_[0-9a-f]{10}$/);
  });

  it('keeps the seed key order on the wire', async () => {
    const res = await post({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    const body = res.json();
    expect(Object.keys(body)).toEqual([
      'id',
      'object',
      'created',
      'model',
      'system_fingerprint',
      'choices',
      'prompt_filter_results',
      'usage',
    ]);
    expect(Object.keys(body.choices[0])).toEqual([
      'index',
      'finish_reason',
      'logprobs',
      'message',
      'content_filter_results',
    ]);
  });

  it('gives the same reply to the same request and a different one to another prompt', async () => {
    const ask = async (content: string) =>
      (await post({ model: 'm', messages: [{ role: 'user', content }] })).json().choices[0].message
        .content;
    const first = await ask('What is a gateway?');
    expect(await ask('What is a gateway?')).toBe(first);
    expect(await ask('What is an emulator?')).not.toBe(first);
  });

  it('counts every message, names and text parts in prompt_tokens', async () => {
    const res = await post({
      model: 'm',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'developer', content: [{ type: 'text', text: 'Use English' }] },
        { role: 'user', content: 'Hi', name: 'ann' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [{ id: 'c1', type: 'function', function: { name: 'look', arguments: '{}' } }],
        },
        { role: 'tool', tool_call_id: 'c1', content: 'done' },
        { role: 'user', content: [{ type: 'text', text: 'Go on' }] },
      ],
    });
    expect(res.statusCode).toBe(200);
    // priming 3 + 6 messages x 3 + "Be brief." 4 + "Use English" 3 + "Hi" 1 + name 1
    // + tool call "look" 1 + "{}" 2 + "done" 1 + "Go on" 2
    expect(res.json().usage.prompt_tokens).toBe(3 + 18 + 4 + 3 + 1 + 1 + 1 + 2 + 1 + 2);
    expect(res.json().choices[0].message.content).toBe(generateReply('Go on', 0).text);
  });

  it('keys the reply on the last run of user turns, joined', async () => {
    const res = await post({
      model: 'm',
      messages: [
        { role: 'user', content: 'first part' },
        { role: 'user', content: 'second part' },
      ],
    });
    expect(res.json().choices[0].message.content).toBe(
      generateReply('first part\nsecond part', 0).text,
    );
  });

  it('cuts the reply at max_tokens with finish_reason "length"', async () => {
    const full = generateReply('long one', 0).text;
    for (const key of ['max_tokens', 'max_completion_tokens']) {
      const res = await post({
        model: 'm',
        messages: [{ role: 'user', content: 'long one' }],
        [key]: 3,
      });
      const choice = res.json().choices[0];
      expect(choice.finish_reason).toBe('length');
      expect(full.startsWith(choice.message.content)).toBe(true);
      expect(countTokens(choice.message.content)).toBe(3);
      expect(res.json().usage.completion_tokens).toBe(3);
    }
  });

  it('takes max_completion_tokens as the limit, as max_tokens is', async () => {
    const res = await post({
      model: 'm',
      messages: [{ role: 'user', content: 'long one' }],
      max_completion_tokens: 5,
    });
    expect(res.json().usage.completion_tokens).toBe(5);
  });

  it.each([
    ['o3-mini', { max_completion_tokens: 5 }],
    ['gpt-5', { max_completion_tokens: 5, temperature: 1 }],
    ['gpt-5-chat-latest', { max_tokens: 5, temperature: 0.2 }],
    ['gpt-4o', { max_tokens: 5, temperature: 0.2 }],
  ])('takes %s with %j', async (model, extra) => {
    const res = await post({ model, messages: [{ role: 'user', content: 'long one' }], ...extra });
    expect(res.statusCode).toBe(200);
    expect(res.json().usage.completion_tokens).toBe(5);
  });

  it('cuts the reply before a stop sequence with finish_reason "stop"', async () => {
    const full = generateReply('stop here', 0).text;
    const stopWord = full.split(' ')[3] as string;
    for (const stop of [stopWord, [stopWord, 'zzz-not-there']]) {
      const res = await post({
        model: 'm',
        messages: [{ role: 'user', content: 'stop here' }],
        stop,
      });
      const choice = res.json().choices[0];
      expect(choice.finish_reason).toBe('stop');
      expect(choice.message.content).toBe(full.slice(0, full.indexOf(stopWord)));
    }
  });

  it('returns n choices, each its own deterministic text, usage summed', async () => {
    const res = await post({ model: 'm', messages: [{ role: 'user', content: 'three' }], n: 3 });
    const body = res.json();
    const texts = [0, 1, 2].map((i) => finishText(generateReply('three', i), []).text);
    expect(body.choices.map((c: { index: number }) => c.index)).toEqual([0, 1, 2]);
    expect(body.choices.map((c: { message: { content: string } }) => c.message.content)).toEqual(
      texts,
    );
    expect(new Set(texts).size).toBe(3);
    expect(body.usage.completion_tokens).toBe(texts.reduce((s, x) => s + countTokens(x), 0));
  });

  it('accepts the other common-format parameters, null values and unknown keys', async () => {
    const res = await post({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      temperature: 0,
      top_p: 1,
      presence_penalty: -2,
      frequency_penalty: 2,
      seed: 42,
      user: null,
      stream: false,
      max_tokens: null,
      logit_bias: { '50256': -100 },
      response_format: { type: 'text' },
      logprobs: true,
      top_logprobs: 3,
      tools: [
        { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
      ],
      tool_choice: 'auto',
      parallel_tool_calls: false,
      metadata: { run: 'ci', ['😀'.repeat(64)]: 'sixty-four characters, 128 UTF-16 units' },
      service_tier: 'auto',
      store: false,
      web_search_options: {},
    });
    expect(res.statusCode).toBe(200);
  });

  it('lets a reasoning model sample as asked when it does not reason, and takes the default values when it does', async () => {
    const sampled = {
      temperature: 0.2,
      top_p: 0.5,
      presence_penalty: 1,
      frequency_penalty: 1,
      logprobs: true,
    };
    for (const body of [
      { model: 'gpt-5.1', ...sampled },
      { model: 'gpt-5.2-2025-12-11', reasoning_effort: 'none', ...sampled },
      {
        model: 'o3',
        temperature: 1,
        top_p: 1,
        presence_penalty: 0,
        frequency_penalty: 0,
        logprobs: false,
      },
      { model: 'my-deployment', ...sampled },
    ]) {
      const res = await post({ ...body, messages: [{ role: 'user', content: 'x' }] });
      expect(res.statusCode, res.body).toBe(200);
    }
  });

  it('takes image_url parts on the models that see (a name it does not know among them)', async () => {
    for (const model of [
      'gpt-4o',
      'gpt-4-turbo',
      'gpt-4-1106-vision-preview',
      'gpt-4.1-mini',
      'o3',
      'gpt-5',
      'my-deployment',
    ]) {
      const res = await post({
        model,
        messages: [
          {
            role: 'user',
            content: [{ type: 'image_url', image_url: { url: 'https://example.com/a.png' } }],
          },
        ],
      });
      expect(res.statusCode, `${model}: ${res.body}`).toBe(200);
    }
  });

  it('takes null for every optional parameter, enums and tool_choice included, as if it were absent', async () => {
    const nulls = {
      reasoning_effort: null,
      verbosity: null,
      service_tier: null,
      prompt_cache_retention: null,
      tool_choice: null,
      parallel_tool_calls: null,
      logprobs: null,
      top_logprobs: null,
      stop: null,
      n: null,
    };
    const plain = { model: 'gpt-5', messages: [{ role: 'user', content: 'x' }] };
    const res = await post({ ...plain, ...nulls });
    expect(res.statusCode).toBe(200);
    const { id: _a, created: _b, ...answer } = res.json();
    const { id: _c, created: _d, ...without } = (await post(plain)).json();
    expect(answer).toEqual(without);
    // with tools, a null tool_choice is auto
    const tools = [
      { type: 'function', function: { name: 'get_weather', parameters: { type: 'object' } } },
    ];
    const called = (await post({ ...plain, tools, tool_choice: null })).json();
    expect(called.choices[0].finish_reason).toBe('tool_calls');
  });

  it.each([
    ['gpt-4o', '199999'],
    ['gpt-4o-mini', '0'],
    ['gpt-4.1', '199999'],
    ['gpt-4-turbo', '100257'],
    ['gpt-3.5-turbo', '100257'],
  ])('takes logit_bias keys up to the last token id of %s (%s)', async (model, key) => {
    const res = await post({
      model,
      messages: [{ role: 'user', content: 'x' }],
      logit_bias: { [key]: 100, '007': -100 },
    });
    expect(res.statusCode).toBe(200);
  });
});

describe('chat completions validation', () => {
  const base = { model: 'm', messages: [{ role: 'user', content: 'x' }] };
  const error = (message: string, param: string | null, code: string | null) => ({
    error: { message, type: 'invalid_request_error', param, code },
  });

  it.each([
    [
      { messages: base.messages },
      error("Missing required parameter: 'model'.", 'model', 'missing_required_parameter'),
    ],
    [
      { model: 'm' },
      error("Missing required parameter: 'messages'.", 'messages', 'missing_required_parameter'),
    ],
    [
      { ...base, messages: [] },
      error(
        "Invalid 'messages': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        'messages',
        'empty_array',
      ),
    ],
    [
      { ...base, tools: [] },
      error(
        "Invalid 'tools': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        'tools',
        'empty_array',
      ),
    ],
    [
      { ...base, messages: [...base.messages, { role: 'assistant', tool_calls: [] }] },
      error(
        "Invalid 'messages[1].tool_calls': empty array. Expected an array with minimum length 1, but got an empty array instead.",
        'messages[1].tool_calls',
        'empty_array',
      ),
    ],
    [
      { ...base, metadata: { ['k'.repeat(65)]: 'v' } },
      error(
        "Invalid value for 'metadata': keys must have at most 64 characters.",
        'metadata',
        'invalid_value',
      ),
    ],
    [
      { ...base, max_tokens: 2, max_completion_tokens: 5 },
      error(
        "Setting 'max_tokens' and 'max_completion_tokens' at the same time is not supported.",
        'max_tokens',
        'invalid_parameter_combination',
      ),
    ],
    ...['o1', 'o3-mini', 'o4-mini', 'gpt-5', 'gpt-5-mini', 'gpt-5.1'].map(
      (model): [object, object] => [
        { ...base, model, max_tokens: 100 },
        error(
          "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' instead.",
          'max_tokens',
          'unsupported_parameter',
        ),
      ],
    ),
    ...['gpt-4o', 'gpt-4o-mini', 'gpt-4.1', 'gpt-4', 'gpt-3.5-turbo', 'gpt-5-chat-latest'].map(
      (model): [object, object] => [
        { ...base, model, reasoning_effort: 'low' },
        error(
          "Unsupported parameter: 'reasoning_effort' is not supported with this model.",
          'reasoning_effort',
          'unsupported_parameter',
        ),
      ],
    ),
    ...(
      [
        ['o3-mini', 'minimal', "'low', 'medium', and 'high'"],
        ['o1-2024-12-17', 'none', "'low', 'medium', and 'high'"],
        ['gpt-5', 'none', "'minimal', 'low', 'medium', and 'high'"],
        ['gpt-5-nano-2025-08-07', 'xhigh', "'minimal', 'low', 'medium', and 'high'"],
        ['gpt-5-pro', 'medium', "'high'"],
        ['gpt-5.1', 'minimal', "'none', 'low', 'medium', and 'high'"],
        ['gpt-5.2', 'max', "'none', 'low', 'medium', 'high', and 'xhigh'"],
      ] as const
    ).map(([model, effort, supported]): [object, object] => [
      { ...base, model, reasoning_effort: effort },
      error(
        `Unsupported value: 'reasoning_effort' does not support '${effort}' with this model. Supported values are: ${supported}.`,
        'reasoning_effort',
        'unsupported_value',
      ),
    ]),
    [
      { ...base, model: 'gpt-5', temperature: 0.5 },
      error(
        "Unsupported value: 'temperature' does not support 0.5 with this model. Only the default (1) value is supported.",
        'temperature',
        'unsupported_value',
      ),
    ],
    [
      { ...base, model: 'gpt-5.1', reasoning_effort: 'low', temperature: 0.5 },
      error(
        "Unsupported value: 'temperature' does not support 0.5 with this model. Only the default (1) value is supported.",
        'temperature',
        'unsupported_value',
      ),
    ],
    ...(
      [
        ['o3', 'top_p', 0.5],
        ['gpt-5', 'presence_penalty', 0.5],
        ['o1', 'frequency_penalty', -1],
        ['gpt-5.2', 'top_p', 0.9, 'high'],
      ] as const
    ).map(([model, name, value, effort]): [object, object] => [
      { ...base, model, [name]: value, ...(effort ? { reasoning_effort: effort } : {}) },
      error(
        `Unsupported parameter: '${name}' is not supported with this model.`,
        name,
        'unsupported_parameter',
      ),
    ]),
    [
      { ...base, model: 'o4-mini', logprobs: true },
      error('You are not allowed to request logprobs from this model', 'logprobs', null),
    ],
    ...[
      'gpt-3.5-turbo',
      'gpt-35-turbo',
      'gpt-4',
      'gpt-4-0613',
      'gpt-4-32k',
      'gpt-4-turbo-preview',
      'o3-mini',
    ].map((model): [object, object] => [
      {
        ...base,
        model,
        messages: [
          {
            role: 'user',
            content: [
              { type: 'text', text: 'what is this' },
              { type: 'image_url', image_url: { url: 'https://example.com/a.png' } },
            ],
          },
        ],
      },
      error(
        'Invalid content type. image_url is only supported by certain models.',
        'messages.[0].content.[1].type',
        null,
      ),
    ]),
    [
      { ...base, model: 7 },
      error("Invalid type for 'model': must be a string.", 'model', 'invalid_type'),
    ],
    [
      { ...base, messages: [{ role: 'robot', content: 'x' }] },
      error(
        'Invalid value for \'messages[0].role\': must be one of "system", "developer", "user", "assistant", "tool", "function".',
        'messages[0].role',
        'invalid_value',
      ),
    ],
    [
      { ...base, messages: [{ role: 'user', content: 5 }] },
      error(
        "Invalid type for 'messages[0].content': must be a string or an array of text, image_url, input_audio and file parts.",
        'messages[0].content',
        'invalid_type',
      ),
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'text' }] }] },
      error(
        "Missing required parameter: 'messages[0].content[0].text'.",
        'messages[0].content[0].text',
        'missing_required_parameter',
      ),
    ],
    [
      { ...base, messages: [{ role: 'user' }] },
      error(
        "Missing required parameter: 'messages[0].content'.",
        'messages[0].content',
        'missing_required_parameter',
      ),
    ],
    [
      { ...base, messages: [{ role: 'tool', content: 'r' }] },
      error(
        "Missing required parameter: 'messages[0].tool_call_id'.",
        'messages[0].tool_call_id',
        'missing_required_parameter',
      ),
    ],
    [
      { ...base, temperature: 2.5 },
      error(
        "Invalid value for 'temperature': must be less than or equal to 2.",
        'temperature',
        'invalid_value',
      ),
    ],
    [
      { ...base, temperature: '1' },
      error("Invalid type for 'temperature': must be a number.", 'temperature', 'invalid_type'),
    ],
    [
      { ...base, top_p: 1.5 },
      error(
        "Invalid value for 'top_p': must be less than or equal to 1.",
        'top_p',
        'invalid_value',
      ),
    ],
    [
      { ...base, n: 0 },
      error("Invalid value for 'n': must be greater than or equal to 1.", 'n', 'invalid_value'),
    ],
    [{ ...base, n: 1.5 }, error("Invalid type for 'n': must be an integer.", 'n', 'invalid_type')],
    [
      { ...base, max_tokens: 0 },
      error(
        "Invalid value for 'max_tokens': must be greater than or equal to 1.",
        'max_tokens',
        'invalid_value',
      ),
    ],
    [
      { ...base, stop: ['a', 'b', 'c', 'd', 'e'] },
      error("Invalid value for 'stop': must have at most 4 item(s).", 'stop', 'invalid_value'),
    ],
    [
      { ...base, stop: '' },
      error("Invalid value for 'stop': must not be empty.", 'stop', 'invalid_value'),
    ],
    [
      { ...base, messages: [{ role: 'user', content: [{ type: 'image', text: 'x' }] }] },
      error(
        'Invalid value for \'messages[0].content[0].type\': must be one of "text", "image_url", "input_audio", "file".',
        'messages[0].content[0].type',
        'invalid_value',
      ),
    ],
    [
      { ...base, stop: 3 },
      error(
        "Invalid type for 'stop': must be a string, an array of up to 4 strings, or null.",
        'stop',
        'invalid_type',
      ),
    ],
    [
      { ...base, presence_penalty: -3 },
      error(
        "Invalid value for 'presence_penalty': must be greater than or equal to -2.",
        'presence_penalty',
        'invalid_value',
      ),
    ],
    [
      { ...base, frequency_penalty: 2.1 },
      error(
        "Invalid value for 'frequency_penalty': must be less than or equal to 2.",
        'frequency_penalty',
        'invalid_value',
      ),
    ],
    [
      { ...base, stream: 'yes' },
      error("Invalid type for 'stream': must be a boolean.", 'stream', 'invalid_type'),
    ],
    [
      { ...base, stream_options: { include_usage: true } },
      error(
        "The 'stream_options' parameter is only allowed when 'stream' is enabled.",
        'stream_options',
        null,
      ),
    ],
    [[1, 2], error('The request body must be a JSON object.', null, null)],
    [
      { ...base, logprobs: 'yes' },
      error("Invalid type for 'logprobs': must be a boolean.", 'logprobs', 'invalid_type'),
    ],
    [
      { ...base, logprobs: true, top_logprobs: 50 },
      error(
        "Invalid value for 'top_logprobs': must be less than or equal to 20.",
        'top_logprobs',
        'invalid_value',
      ),
    ],
    [
      { ...base, top_logprobs: 2 },
      error(
        "Invalid value for 'top_logprobs': is only allowed when logprobs is true.",
        'top_logprobs',
        'invalid_value',
      ),
    ],
    [
      { ...base, tools: 'x' },
      error("Invalid type for 'tools': must be an array.", 'tools', 'invalid_type'),
    ],
    [
      { ...base, tools: [{ type: 'function', function: { name: 'has space' } }] },
      error(
        "Invalid 'tools[0].function.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.",
        'tools[0].function.name',
        'invalid_value',
      ),
    ],
    [
      { ...base, tool_choice: 'sometimes' },
      error(
        'Invalid value for \'tool_choice\': must be one of "none", "auto", "required".',
        'tool_choice',
        'invalid_value',
      ),
    ],
    [
      { ...base, response_format: { type: 'yaml' } },
      error(
        'Invalid value for \'response_format.type\': must be one of "text", "json_object", "json_schema".',
        'response_format.type',
        'invalid_value',
      ),
    ],
    [
      { ...base, logit_bias: { '50256': -101 } },
      error(
        "Invalid value for 'logit_bias[50256]': must be greater than or equal to -100.",
        'logit_bias[50256]',
        'invalid_value',
      ),
    ],
    ...['You', '-1', '1.5', ' 7', ''].map((key): [object, object] => [
      { ...base, logit_bias: { 12: 1, [key]: -100 } },
      error(
        `Invalid key in 'logit_bias': ${key}. You should only be submitting non-negative integers.`,
        'logit_bias',
        null,
      ),
    ]),
    [
      { ...base, logit_bias: { '200000': -100 } },
      error("Invalid key in 'logit_bias': 200000. Maximum value is 199999.", 'logit_bias', null),
    ],
    [
      { ...base, model: 'gpt-3.5-turbo', logit_bias: { '100265': -100 } },
      error("Invalid key in 'logit_bias': 100265. Maximum value is 100257.", 'logit_bias', null),
    ],
    [
      { ...base, model: 'gpt-4', logit_bias: { '100258': 5 } },
      error("Invalid key in 'logit_bias': 100258. Maximum value is 100257.", 'logit_bias', null),
    ],
  ])('refuses %j', async (payload, expected) => {
    const res = await post(payload);
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(expected);
  });
});

describe('the size of a JSON answer', () => {
  const echo = (n: number, extra: object = {}) =>
    t.chat({
      model: 'gpt-4o',
      n,
      max_tokens: 16_384,
      messages: [{ role: 'user', content: `[demo] echo ${'abcd '.repeat(16_384)}` }],
      ...extra,
    });

  it('holds at most 400 000 token entries (n × tokens, × 4 × (1 + top_logprobs) with logprobs); the same request streamed is answered', async () => {
    const fits = await echo(24); // 24 × 16 384 = 393 216
    expect(fits.statusCode).toBe(200);
    expect(fits.json().choices.map((c: { finish_reason: string }) => c.finish_reason)).toEqual(
      new Array(24).fill('length'),
    );
    const over = await echo(25); // 409 600
    expect(over.statusCode).toBe(400);
    expect(over.json()).toEqual({
      error: {
        message:
          'This answer would hold 409600 token entries (n × completion tokens, × 4 × (1 + top_logprobs) with logprobs), more than the emulator builds in one JSON answer (400000): ask for fewer choices, fewer tokens or fewer top_logprobs, or set stream: true.',
        type: 'invalid_request_error',
        param: 'n',
        code: 'answer_too_large',
      },
    });
    // 2 × 16 384 × 4 × 21: an echo with 20 alternatives a token ran the process out of memory at n: 32
    const logprobs = await echo(2, { logprobs: true, top_logprobs: 20 });
    expect(logprobs.statusCode).toBe(400);
    expect(logprobs.json().error.message).toMatch(/^This answer would hold 2752512 token entries/);
    // within it: 1 × 4 000 × 4 × 21 = 336 000
    expect((await echo(1, { max_tokens: 4000, logprobs: true, top_logprobs: 20 })).statusCode).toBe(
      200,
    );
    // over the bound as JSON (2 × 5 000 × 4 × 21 = 840 000), answered as a stream
    const asJson = { max_tokens: 5_000, logprobs: true, top_logprobs: 20 };
    expect((await echo(2, asJson)).statusCode).toBe(400);
    const streamed = await echo(2, { ...asJson, stream: true });
    expect(streamed.statusCode).toBe(200);
    expect(streamed.body.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(streamed.body.split('"top_logprobs":[{').length - 1).toBe(10_000);
  });

  it('counts no reasoning tokens among the entries: only their count is sent', async () => {
    const reasoning = { model: 'm', reasoning_effort: 'max' };
    const first = (await echo(1, { ...reasoning, max_tokens: 16_384 })).json();
    const r = first.usage.completion_tokens_details.reasoning_tokens as number;
    expect(r).toBeGreaterThan(0);
    // 4 761 content tokens × 84 = 399 924 entries, and r reasoning tokens beside them
    const res = await echo(1, {
      ...reasoning,
      max_tokens: 4_761 + r,
      logprobs: true,
      top_logprobs: 20,
    });
    expect(res.statusCode).toBe(200);
    const { usage, choices } = res.json();
    expect(usage.completion_tokens).toBe(4_761 + r);
    expect(choices[0].logprobs.content).toHaveLength(4_761);
  });
});
