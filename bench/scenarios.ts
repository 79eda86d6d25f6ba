/** What `npm run bench` measures; each scenario compares the emulator with bare Fastify. */
export interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Minimum emulator/bare throughput ratio (from the issue that asked for it). */
  goal: number;
  /** Runs once against the emulator before capture; may fill in the URL (e.g. a task id). */
  prepare?(base: string): Promise<Partial<Scenario>>;
}

const bearer = { authorization: 'Bearer bench-key' };

async function createTask(base: string): Promise<string> {
  const res = await fetch(`${base}/videogen/v1/videos/text2video`, {
    method: 'POST',
    headers: { ...bearer, 'content-type': 'application/json' },
    body: JSON.stringify({ model_name: 'vid-v1-6', prompt: 'a cat', duration: '5' }),
  });
  return ((await res.json()) as { data: { task_id: string } }).data.task_id;
}

export const SCENARIOS: Scenario[] = [
  {
    name: 'chat completion (non-streaming)',
    method: 'POST',
    url: '/v1/chat/completions',
    headers: bearer,
    body: JSON.stringify({
      model: 'chat-model',
      messages: [
        { role: 'system', content: 'You are a helpful assistant.' },
        { role: 'user', content: 'Write a haiku about gateways.' },
      ],
      max_tokens: 200,
    }),
    goal: 0.6,
  },
  {
    name: 'video task creation',
    method: 'POST',
    url: '/videogen/v1/videos/text2video',
    headers: bearer,
    body: JSON.stringify({
      model_name: 'vid-v3',
      prompt: 'A red fox runs through fresh snow at dawn, low tracking shot',
      negative_prompt: '',
      duration: '5',
      mode: 'std',
      aspect_ratio: '16:9',
      sound: 'off',
      callback_url: '',
      external_task_id: '',
    }),
    goal: 0.6,
  },
  {
    name: 'video task query',
    method: 'GET',
    url: '/videogen/v1/videos/text2video/:id',
    headers: bearer,
    goal: 0.6,
    prepare: async (base) => ({ url: `/videogen/v1/videos/text2video/${await createTask(base)}` }),
  },
];
