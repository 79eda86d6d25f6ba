import Anthropic from '@anthropic-ai/sdk';
import { betaZodTool } from '@anthropic-ai/sdk/helpers/beta/zod';
import { z } from 'zod';

export async function anthropicAgent(base = 'http://127.0.0.1:4010') {
  const client = new Anthropic({
    apiKey: 'sk-local',
    baseURL: `${base}/messages-api`,
    defaultHeaders: { 'msgapi-version': '2023-06-01' },
  });
  const question = { role: 'user' as const, content: 'What is the weather in Paris?' };
  const getWeather = {
    name: 'get_weather',
    description: 'Current weather for a city',
    input_schema: {
      type: 'object' as const,
      properties: { city: { type: 'string' } },
      required: ['city'],
    },
  };

  // One streamed turn with thinking: a signed thinking block, a line, then a tool_use.
  const stream = client.messages.stream({
    model: 'claude-like',
    max_tokens: 4096,
    thinking: { type: 'enabled', budget_tokens: 2048 },
    tools: [getWeather],
    messages: [question],
  });
  const turn = await stream.finalMessage();

  // Send the result back (with the thinking block, unchanged): the answer uses it.
  const call = turn.content.find((block) => block.type === 'tool_use');
  const answer = await client.messages.create({
    model: 'claude-like',
    max_tokens: 4096,
    thinking: { type: 'enabled', budget_tokens: 2048 },
    tools: [getWeather],
    messages: [
      question,
      { role: 'assistant', content: turn.content },
      {
        role: 'user',
        content: [
          { type: 'tool_result', tool_use_id: call?.id ?? '', content: '{"temperature": 21}' },
        ],
      },
    ],
  });

  // Or let the SDK's tool runner run the loop.
  const weather = betaZodTool({
    name: 'get_weather',
    description: 'Current weather for a city',
    inputSchema: z.object({ city: z.string() }),
    run: async ({ city }) => JSON.stringify({ city, temperature: 21 }),
  });
  const final = await client.beta.messages.toolRunner({
    model: 'claude-like',
    max_tokens: 1024,
    messages: [question],
    tools: [weather],
  });

  // A long loop can swap its history for a summary (compaction on demand, a beta): asked for
  // during a turn, the summary replaces the messages once the turn is done, and the loop goes on.
  const runner = client.beta.messages.toolRunner({
    model: 'claude-like',
    max_tokens: 1024,
    betas: ['compact-2026-09-04'],
    messages: [question],
    tools: [weather],
  });
  const stops: string[] = [];
  for await (const message of runner) {
    if (stops.length === 0) runner.compactBeforeNextTurn();
    stops.push(message.stop_reason ?? '');
  }

  return { turn, answer, final, stops, history: runner.params.messages };
}
