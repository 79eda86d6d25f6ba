/** What `npm run bench` measures; each scenario compares the emulator with its baselines. */
export interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
  /**
   * Minimum share of the limit's throughput (bare node:http answering the same bytes), for the
   * emulator as users run it (LOG_LEVEL=info, the shipped fixtures); 0: none, only measured.
   */
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

/**
 * The 256-token reply of the stream scenarios: a scripted reply the bench's own fixtures hold
 * (FIXTURES_DIR), and a stub (`POST /_emulator/replies`) for an emulator on the shipped ones.
 */
export const BENCH_RULES = [{ match: { contains: '[bench] long' }, reply: LONG_REPLY }];

/** Adds the bench's rules as stubs (an emulator on the shipped fixtures). */
export async function addBenchStubs(base: string): Promise<void> {
  for (const rule of BENCH_RULES) {
    const res = await fetch(`${base}/_emulator/replies`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(rule),
    });
    if (!res.ok) throw new Error(`the bench stub was refused: ${res.status} ${await res.text()}`);
  }
}

/** ~100k tokens of system prompt ("rule" is one token; "nnnnn." three). */
const BIG_SYSTEM = Array.from({ length: 25_000 }, (_, i) => `rule ${i % 1000}. `).join('');

/** Five tools an agent offers: objects with strings, enums, numbers, arrays and nesting. */
const TOOL_SCHEMAS: Array<[string, string, object]> = [
  [
    'get_weather',
    'Current weather for a city',
    {
      type: 'object',
      properties: {
        city: { type: 'string', minLength: 1 },
        unit: { type: 'string', enum: ['celsius', 'fahrenheit'] },
      },
      required: ['city', 'unit'],
      additionalProperties: false,
    },
  ],
  [
    'search_flights',
    'Flights between two airports',
    {
      type: 'object',
      properties: {
        from: { type: 'string', pattern: '^[A-Z]{3}$' },
        to: { type: 'string', pattern: '^[A-Z]{3}$' },
        date: { type: 'string', format: 'date' },
        passengers: { type: 'integer', minimum: 1, maximum: 9 },
      },
      required: ['from', 'to', 'date', 'passengers'],
      additionalProperties: false,
    },
  ],
  [
    'book_hotel',
    'Book a hotel room',
    {
      type: 'object',
      properties: {
        hotel_id: { type: 'string' },
        nights: { type: 'integer', minimum: 1, maximum: 30 },
        guests: {
          type: 'array',
          items: {
            type: 'object',
            properties: { name: { type: 'string' }, age: { type: 'integer', minimum: 0 } },
            required: ['name', 'age'],
            additionalProperties: false,
          },
          minItems: 1,
          maxItems: 4,
        },
      },
      required: ['hotel_id', 'nights', 'guests'],
      additionalProperties: false,
    },
  ],
  [
    'convert_currency',
    'Convert an amount',
    {
      type: 'object',
      properties: {
        amount: { type: 'number', minimum: 0 },
        from: { type: 'string', enum: ['EUR', 'USD', 'GBP', 'JPY'] },
        to: { type: 'string', enum: ['EUR', 'USD', 'GBP', 'JPY'] },
      },
      required: ['amount', 'from', 'to'],
      additionalProperties: false,
    },
  ],
  [
    'send_email',
    'Send an email',
    {
      type: 'object',
      properties: {
        to: { type: 'string', format: 'email' },
        subject: { type: 'string', maxLength: 80 },
        body: { type: 'string' },
      },
      required: ['to', 'subject', 'body'],
      additionalProperties: false,
    },
  ],
];
const TOOL_PROMPT = 'Plan my trip: check get_weather in Lisbon and search_flights from LHR.';
const CHAT_TOOLS = JSON.stringify({
  model: 'chat-model',
  tools: TOOL_SCHEMAS.map(([name, description, parameters]) => ({
    type: 'function',
    function: { name, description, parameters, strict: true },
  })),
  messages: [
    { role: 'system', content: 'You are a travel agent.' },
    { role: 'user', content: TOOL_PROMPT },
  ],
});
const MESSAGES_TOOLS = JSON.stringify({
  model: 'claude-like',
  max_tokens: 1024,
  system: 'You are a travel agent.',
  tools: TOOL_SCHEMAS.map(([name, description, input_schema]) => ({
    name,
    description,
    input_schema,
  })),
  messages: [{ role: 'user', content: TOOL_PROMPT }],
});
const streaming = (body: string) => JSON.stringify({ ...JSON.parse(body), stream: true });

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
    goal: 0.55,
  },
  {
    name: 'chat stream, 256 tokens',
    method: 'POST',
    url: '/v1/chat/completions',
    headers: bearer,
    body: JSON.stringify({
      model: 'chat-model',
      stream: true,
      messages: [{ role: 'user', content: '[bench] long' }],
    }),
    goal: 0.5,
  },
  {
    name: 'chat, 5 tools, 2 calls',
    method: 'POST',
    url: '/v1/chat/completions',
    headers: bearer,
    body: CHAT_TOOLS,
    goal: 0.4,
  },
  {
    name: 'chat stream, 5 tools, 2 calls',
    method: 'POST',
    url: '/v1/chat/completions',
    headers: bearer,
    body: streaming(CHAT_TOOLS),
    goal: 0,
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
    goal: 0.55,
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
    goal: 0.4,
  },
  {
    name: 'messages, 5 tools, 2 calls',
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers: msgapi,
    body: MESSAGES_TOOLS,
    goal: 0.4,
  },
  {
    name: 'messages stream, 5 tools, 2 calls',
    method: 'POST',
    url: '/messages-api/v1/messages',
    headers: msgapi,
    body: streaming(MESSAGES_TOOLS),
    goal: 0,
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
    goal: 0.8,
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
    goal: 0,
    prepare: async (base) => ({ url: `/videogen/v1/videos/text2video/${await createTask(base)}` }),
  },
];
