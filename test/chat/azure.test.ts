import OpenAI, { AzureOpenAI } from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator.js';

let emu: Emulator;
beforeAll(async () => {
  emu = await startEmulator({ apiKeys: ['azure-key'] });
});
afterAll(() => emu.close());

const client = (apiKey = 'azure-key') =>
  new AzureOpenAI({
    endpoint: emu.url,
    apiKey,
    apiVersion: '2024-10-21',
    deployment: 'my-gpt4o',
    maxRetries: 0,
  });

/** Azure's front refusing a key (upstream's words, from captured answers). */
const AZURE_DENIED = {
  error: {
    code: '401',
    message:
      'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.',
  },
};

describe('Azure deployment path: /openai/deployments/{deployment}/chat/completions', () => {
  it('answers the AzureOpenAI client (api-key header); the deployment names the model', async () => {
    const res = await client().chat.completions.create({
      model: '',
      messages: [{ role: 'user', content: 'hello azure' }],
    });
    expect(res.object).toBe('chat.completion');
    expect(res.model).toBe('my-gpt4o');
    expect(res.choices[0]?.message.role).toBe('assistant');
    const [entry] = await emu.journal({ path: '/openai/deployments/my-gpt4o/chat/completions' });
    expect(entry).toMatchObject({ group: 'chat', model: 'my-gpt4o', status: 200 });
    expect(entry?.headers['api-key']).toBe('[REDACTED]');
    expect(entry?.url).toBe('/openai/deployments/my-gpt4o/chat/completions?api-version=2024-10-21');
  });

  it('streams, as on /v1', async () => {
    const stream = await client().chat.completions.create({
      model: '',
      stream: true,
      messages: [{ role: 'user', content: 'stream please' }],
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text.length).toBeGreaterThan(0);
  });

  it("refuses a wrong or missing key, and a missing or unknown api-version, as Azure's front does", async () => {
    const wrong = await client('nope')
      .chat.completions.create({ model: '', messages: [{ role: 'user', content: 'x' }] })
      .catch((err: unknown) => err);
    expect(wrong).toMatchObject({ status: 401, code: '401', error: AZURE_DENIED.error });
    // and a missing key, as Azure's front answers both
    const none = await fetch(
      `${emu.url}/openai/deployments/d/chat/completions?api-version=2024-10-21`,
      {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: '{}',
      },
    );
    expect(none.status).toBe(401);
    expect(await none.json()).toEqual(AZURE_DENIED);
    const post = (
      query: string,
      body = JSON.stringify({ messages: [{ role: 'user', content: 'x' }] }),
    ) =>
      fetch(`${emu.url}/openai/deployments/d/chat/completions${query}`, {
        method: 'POST',
        headers: { 'api-key': 'azure-key', 'content-type': 'application/json' },
        body,
      });
    // whatever the body: the front answers before it is read
    for (const body of [undefined, '{"messages": ', '[{}]']) {
      const missing = await post('', body);
      expect(missing.status).toBe(404);
      expect(await missing.text()).toBe('{"error":{"code":"404","message":"Resource not found"}}');
    }
    for (const version of ['banana', '2024-13-45', '2025-02-29']) {
      for (const body of [undefined, '{"messages": ']) {
        const unknown0 = await post(`?api-version=${version}`, body);
        expect(unknown0.status).toBe(400);
        expect(await unknown0.text()).toBe(
          '{"error":{"code":"BadRequest","message":"API version not supported"}}',
        );
      }
    }
    expect((await post('?api-version=2024-02-29')).status).toBe(200);
    expect((await post('?api-version=2025-04-01-preview')).status).toBe(200);
    const sdk = await new AzureOpenAI({
      endpoint: emu.url,
      apiKey: 'azure-key',
      apiVersion: 'v2',
      deployment: 'd',
      maxRetries: 0,
    }).chat.completions
      .create({ model: '', messages: [{ role: 'user', content: 'x' }] })
      .catch((err: unknown) => err);
    expect(sdk).toMatchObject({ status: 400, error: { code: 'BadRequest' } });
    const unknown = await fetch(`${emu.url}/openai/deployments/d/embeddings?api-version=1`, {
      method: 'POST',
      headers: { 'api-key': 'azure-key', 'content-type': 'application/json' },
      body: '{}',
    });
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as { error: { type: string } }).error.type).toBe(
      'invalid_request_error',
    );
  });
});

describe("Azure's v1 API: /openai/v1/", () => {
  it('answers the plain OpenAI client at {endpoint}/openai/v1/ (no api-version), streamed too', async () => {
    const v1 = new OpenAI({ baseURL: `${emu.url}/openai/v1/`, apiKey: 'azure-key', maxRetries: 0 });
    const res = await v1.chat.completions.create({
      model: 'my-deployment',
      messages: [{ role: 'user', content: 'hello v1' }],
    });
    expect(res).toMatchObject({ object: 'chat.completion', model: 'my-deployment' });
    const stream = await v1.chat.completions.create({
      model: 'my-deployment',
      messages: [{ role: 'user', content: 'hello v1' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(res.choices[0]?.message.content);
    expect((await v1.models.list()).data.map((m) => m.id)).toContain('gpt-4o');
    const [entry] = await emu.journal({ path: '/openai/v1/chat/completions' });
    expect(entry).toMatchObject({ group: 'chat', model: 'my-deployment', status: 200 });
  });

  it("takes Azure's api-key header there too, and refuses a wrong key", async () => {
    const res = await fetch(`${emu.url}/openai/v1/chat/completions`, {
      method: 'POST',
      headers: { 'api-key': 'azure-key', 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'd', messages: [{ role: 'user', content: 'x' }] }),
    });
    expect(res.status).toBe(200);
    const wrong = await new OpenAI({
      baseURL: `${emu.url}/openai/v1/`,
      apiKey: 'nope',
      maxRetries: 0,
    }).chat.completions
      .create({ model: 'd', messages: [{ role: 'user', content: 'x' }] })
      .catch((err: unknown) => err);
    expect(wrong).toMatchObject({ status: 401, code: '401', error: AZURE_DENIED.error });
    const models = await fetch(`${emu.url}/openai/v1/models`, { headers: { 'api-key': 'nope' } });
    expect(models.status).toBe(401);
    expect(await models.json()).toEqual(AZURE_DENIED);
  });
});
