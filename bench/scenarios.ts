/** What `npm run bench` measures; each scenario compares the emulator with bare Fastify. */
export interface Scenario {
  name: string;
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Minimum emulator/bare throughput ratio (from the issue that asked for it). */
  goal: number;
  /** Runs once before capture, e.g. to create the task a query reads. */
  prepare?(base: string): Promise<void>;
}

const bearer = { authorization: 'Bearer bench-key' };

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
];
