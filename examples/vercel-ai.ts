import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, stepCountIs, tool } from 'ai';
import { z } from 'zod';

export async function vercelAi(base = 'http://127.0.0.1:4010') {
  const openai = createOpenAI({ baseURL: `${base}/v1`, apiKey: 'sk-local' });
  const anthropic = createAnthropic({
    baseURL: `${base}/messages-api/v1`,
    apiKey: 'sk-local',
    headers: { 'msgapi-version': '2023-06-01' },
  });
  const getWeather = tool({
    description: 'Current weather for a city',
    inputSchema: z.object({ city: z.string() }),
    execute: async ({ city }) => ({ city, temperature: 21 }),
  });
  const Film = z.object({ title: z.string(), year: z.number().int() });

  const results = [];
  // openai.chat(...) speaks chat completions; the gateway has no Responses API.
  for (const model of [openai.chat('gpt-4o'), anthropic('claude-like')]) {
    const { text, steps } = await generateText({
      model,
      maxOutputTokens: 1024,
      tools: { get_weather: getWeather },
      stopWhen: stepCountIs(5),
      prompt: 'What is the weather in Paris?',
    });
    const { object } = await generateObject({
      model,
      maxOutputTokens: 1024,
      schema: Film,
      prompt: 'Suggest a film.',
    });
    results.push({ text, steps: steps.length, object });
  }
  return results;
}
