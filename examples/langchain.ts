import { ChatAnthropic } from '@langchain/anthropic';
import { type BaseMessage, HumanMessage, ToolMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { ChatOpenAI } from '@langchain/openai';
import { z } from 'zod';

export async function langchain(base = 'http://127.0.0.1:4010') {
  const getWeather = tool(async ({ city }) => JSON.stringify({ city, temperature: 21 }), {
    name: 'get_weather',
    description: 'Current weather for a city',
    schema: z.object({ city: z.string() }),
  });
  const Film = z.object({ title: z.string(), year: z.number().int() });
  const models = [
    new ChatOpenAI({
      model: 'gpt-4o',
      apiKey: 'sk-local',
      configuration: { baseURL: `${base}/v1` },
    }),
    new ChatAnthropic({
      model: 'claude-like',
      apiKey: 'sk-local',
      anthropicApiUrl: `${base}/messages-api`,
      clientOptions: { defaultHeaders: { 'msgapi-version': '2023-06-01' } },
    }),
  ];

  const results = [];
  for (const model of models) {
    // The agent loop: call the model, run the tools it asks for, send the results back.
    const agent = model.bindTools([getWeather]);
    const messages: BaseMessage[] = [new HumanMessage('What is the weather in Paris?')];
    let reply = await agent.invoke(messages);
    while (reply.tool_calls?.length) {
      messages.push(reply);
      for (const call of reply.tool_calls) {
        const output = await getWeather.invoke(call.args as { city: string });
        messages.push(new ToolMessage({ content: output, tool_call_id: call.id ?? '' }));
      }
      reply = await agent.invoke(messages);
    }
    const film = await model.withStructuredOutput(Film).invoke('Suggest a film.');
    results.push({ answer: reply.text, turns: messages.length, film });
  }
  return results;
}
