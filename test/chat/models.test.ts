import { readFileSync } from 'node:fs';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator.js';
import { MODEL_TABLE } from '../../src/text/models.js';

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ apiKeys: ['sk-test'], logLevel: 'silent' });
});
afterAll(() => emulator.close());

// The same routes at OpenAI's path and at Azure's v1 API.
describe.each(['/v1', '/openai/v1'])('GET %s/models through the official SDK', (base) => {
  const sdk = () =>
    new OpenAI({ apiKey: 'sk-test', baseURL: `${emulator.url}${base}`, maxRetries: 0 });

  it('lists the chat models of the model table', async () => {
    const models = [];
    for await (const model of sdk().models.list()) models.push(model);
    expect(models).toEqual(
      MODEL_TABLE.chat.map(([id]) => ({
        id,
        object: 'model',
        created: 1_767_225_600,
        owned_by: 'system',
      })),
    );
  });

  it('retrieves one, and answers an unknown one with 404 model_not_found', async () => {
    expect(await sdk().models.retrieve('gpt-4o')).toEqual({
      id: 'gpt-4o',
      object: 'model',
      created: 1_767_225_600,
      owned_by: 'system',
    });
    const error = await sdk()
      .models.retrieve('no-such-model')
      .catch((err: unknown) => err);
    expect(error).toBeInstanceOf(OpenAI.NotFoundError);
    expect((error as InstanceType<typeof OpenAI.NotFoundError>).error).toEqual({
      message: "The model 'no-such-model' does not exist",
      type: 'invalid_request_error',
      param: null,
      code: 'model_not_found',
    });
  });

  it('needs a key like every chat route', async () => {
    const res = await fetch(`${emulator.url}${base}/models`);
    expect(res.status).toBe(401);
  });
});

describe("the docs' model table", () => {
  it('is the code table, row for row, defaults included', () => {
    const page = readFileSync(new URL('../../docs/limits.md', import.meta.url), 'utf8');
    const section = page.split('\n## Model limits\n')[1]?.split('\n## ')[0] ?? '';
    const rows = section
      .split('\n')
      .filter((line) => /^\| (chat|messages) \|/.test(line))
      .map((line) =>
        line
          .split('|')
          .slice(1, -1)
          .map((cell) => cell.trim()),
      );
    const number = (n: number) => n.toLocaleString('en-US').replaceAll(',', ' ');
    const expected = (api: 'chat' | 'messages') => [
      ...MODEL_TABLE[api].map(([prefix, window, output]) => [
        api,
        `\`${prefix}\``,
        number(window),
        number(output),
      ]),
      [
        api,
        'any other',
        number(MODEL_TABLE.defaults[api].contextWindow),
        number(MODEL_TABLE.defaults[api].maxOutput),
      ],
    ];
    expect(rows).toEqual([...expected('chat'), ...expected('messages')]);
  });
});
