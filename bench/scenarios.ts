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
const msgapi = { 'x-api-key': 'bench-key', 'msgapi-version': '2023-06-01' };

/** 256 tokens of prose for the streaming scenario (each word below is one token). */
export const LONG_REPLY = Array.from(
  { length: 256 },
  (_, i) => ['the', 'fox', 'runs', 'past', 'snow', 'and', 'into', 'dawn'][i % 8],
).join(' ');

/** Scripted replies the bench emulator loads (FIXTURES_DIR): the 256-token stream. */
export const BENCH_RULES = [{ match: { contains: '[bench] long' }, reply: LONG_REPLY }];

/** ~100k tokens of system prompt ("rule" is one token; "nnnnn." three). */
const BIG_SYSTEM = Array.from({ length: 25_000 }, (_, i) => `rule ${i % 1000}. `).join('');

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
    name: 'messages (non-streaming)',
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers: msgapi,
    body: JSON.stringify({
      model: 'claude-like',
      max_tokens: 512,
      system: 'You are a helpful assistant.',
      messages: [{ role: 'user', content: 'Write a haiku about gateways.' }],
    }),
    goal: 0.6,
  },
  {
    name: 'messages stream, 256 tokens',
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers: msgapi,
    body: JSON.stringify({
      model: 'claude-like',
      max_tokens: 1024,
      stream: true,
      messages: [{ role: 'user', content: '[bench] long' }],
    }),
    goal: 0.3,
  },
  {
    name: 'messages, 100k-token cached system',
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers: msgapi,
    body: JSON.stringify({
      model: 'claude-like',
      max_tokens: 64,
      system: [{ type: 'text', text: BIG_SYSTEM, cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'What does rule 42 say?' }],
    }),
    goal: 0.5,
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
