import OpenAI from 'openai';
import { zodFunction, zodResponseFormat } from 'openai/helpers/zod';
import { z } from 'zod';

export async function openaiAgent(base = 'http://127.0.0.1:4010') {
  const client = new OpenAI({ apiKey: 'sk-local', baseURL: `${base}/v1` });

  // The SDK runs the loop: the emulator calls get_weather, then answers using its result.
  const runner = client.chat.completions.runTools({
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'What is the weather in Paris?' }],
    tools: [
      zodFunction({
        name: 'get_weather',
        parameters: z.object({ city: z.string() }),
        function: ({ city }) => ({ city, temperature: 21 }),
      }),
    ],
  });
  const answer = await runner.finalContent();

  // Structured output: JSON valid against the schema, parsed by the SDK.
  const Film = z.object({ title: z.string(), year: z.number().int(), genres: z.array(z.string()) });
  const completion = await client.chat.completions.parse({
    model: 'gpt-4o',
    messages: [{ role: 'user', content: 'Suggest a film.' }],
    response_format: zodResponseFormat(Film, 'film'),
  });
  const film = completion.choices[0]?.message.parsed;

  return { answer, film };
}
