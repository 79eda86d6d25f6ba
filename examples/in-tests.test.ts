import OpenAI from 'openai';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../src/index.js';

let emu: Emulator;
let openai: OpenAI;

beforeAll(async () => {
  emu = await startEmulator({ port: 0 });
  openai = new OpenAI({ baseURL: `${emu.url}/v1`, apiKey: 'test-key', maxRetries: 0 });
});
afterAll(() => emu.close());
beforeEach(() => emu.reset());

it('answers from a stub, and the journal proves what was sent', async () => {
  await emu.stub({ match: { prompt_regex: 'order (\\d+)' }, reply: 'Order $1 has shipped.' });
  const res = await openai.chat.completions.create({
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'Where is order 42?' }],
  });
  expect(res.choices[0]?.message.content).toBe('Order 42 has shipped.');
  await emu.verify({ path: '/v1/chat/completions', model: 'gpt-4o' }, { exactly: 1 });
});

it('retries through an injected 429', async () => {
  await emu.fault({ path: '/v1/chat/completions', status: 429, times: 1 });
  const client = new OpenAI({ baseURL: `${emu.url}/v1`, apiKey: 'test-key', maxRetries: 1 });
  const res = await client.chat.completions.create({
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'hi' }],
  });
  expect(res.choices[0]?.finish_reason).toBe('stop');
  expect((await emu.journal({ status: 429 })).length).toBe(1);
});

it('moves a video task along on the emulator clock', async () => {
  const auth = { authorization: 'Bearer test-key', 'content-type': 'application/json' };
  const created = await fetch(`${emu.url}/videogen/v1/videos/text2video`, {
    method: 'POST',
    headers: auth,
    body: JSON.stringify({ model_name: 'vid-v1-6', prompt: 'a cat', duration: '5' }),
  }).then((r) => r.json() as Promise<{ data: { task_id: string } }>);
  emu.clock.advance(60_000);
  const task = await fetch(`${emu.url}/videogen/v1/videos/text2video/${created.data.task_id}`, {
    headers: auth,
  }).then((r) => r.json() as Promise<{ data: { task_status: string } }>);
  expect(task.data.task_status).toBe('succeed');
});
