import { createAnthropic } from '@ai-sdk/anthropic';
import { createOpenAI } from '@ai-sdk/openai';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { ChatAnthropic } from '@langchain/anthropic';
import { ChatOpenAI } from '@langchain/openai';
import { generateObject, generateText, stepCountIs, tool } from 'ai';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Emulator, startEmulator } from '../../src/emulator.js';
import { anthropicClient } from '../helpers/anthropic.js';

/**
 * Values an agent's own code can run on (docs/agents.md "How replies are chosen", believable values),
 * through the clients agents use: the structured output of "Alice is 30." is Alice, 30, and a
 * weather tool asked about Paris is called for Paris.
 */
let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ logLevel: 'silent' });
});
afterAll(() => emulator.close());

const Person = z.object({ name: z.string(), age: z.number() });
const ALICE = { name: 'Alice', age: 30 };
const PARIS = 'What is the weather in Paris?';

const anthropicSdk = () => anthropicClient(emulator);
const openaiSdk = () =>
  new OpenAI({ apiKey: 'sk-local', baseURL: `${emulator.url}/v1`, maxRetries: 0 });
const aiAnthropic = () =>
  createAnthropic({
    baseURL: `${emulator.url}/messages-api/v1`,
    apiKey: 'sk-local',
    headers: { 'msgapi-version': '2023-06-01' },
  });
const aiOpenai = () => createOpenAI({ baseURL: `${emulator.url}/v1`, apiKey: 'sk-local' });

describe('structured output: "Alice is 30." is {"name": "Alice", "age": 30}', () => {
  it('@anthropic-ai/sdk messages.parse with zodOutputFormat', async () => {
    const message = await anthropicSdk().messages.parse({
      model: 'claude-like',
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'Alice is 30.' }],
      output_config: { format: zodOutputFormat(Person) },
    });
    expect(message.parsed_output).toEqual(ALICE);
  });

  it('openai chat.completions.parse with zodResponseFormat', async () => {
    const completion = await openaiSdk().chat.completions.parse({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: 'Alice is 30.' }],
      response_format: zodResponseFormat(Person, 'person'),
    });
    expect(completion.choices[0]?.message.parsed).toEqual(ALICE);
  });

  it('Vercel AI SDK generateObject, anthropic and openai (chat) providers', async () => {
    for (const model of [aiAnthropic()('claude-like'), aiOpenai().chat('gpt-4o')]) {
      const { object } = await generateObject({ model, schema: Person, prompt: 'Alice is 30.' });
      expect(object).toEqual(ALICE);
    }
  });

  it('LangChain withStructuredOutput, ChatAnthropic and ChatOpenAI', async () => {
    const anthropic = new ChatAnthropic({
      model: 'claude-like',
      apiKey: 'sk-local',
      anthropicApiUrl: `${emulator.url}/messages-api`,
      clientOptions: { defaultHeaders: { 'msgapi-version': '2023-06-01' } },
    });
    const openai = new ChatOpenAI({
      model: 'gpt-4o',
      apiKey: 'sk-local',
      configuration: { baseURL: `${emulator.url}/v1` },
    });
    expect(await anthropic.withStructuredOutput(Person).invoke('Alice is 30.')).toEqual(ALICE);
    expect(await openai.withStructuredOutput(Person).invoke('Alice is 30.')).toEqual(ALICE);
  });
});

describe('a tool loop: "What is the weather in Paris?" calls get_weather with {"city": "Paris"}', () => {
  const weatherSchema = {
    type: 'object' as const,
    properties: { city: { type: 'string' } },
    required: ['city'],
  };

  it('@anthropic-ai/sdk: tool_use, then the answer to its result', async () => {
    const client = anthropicSdk();
    const tools = [
      { name: 'get_weather', description: 'Weather now', input_schema: weatherSchema },
    ];
    const ask = { role: 'user' as const, content: PARIS };
    const turn = await client.messages.create({
      model: 'claude-like',
      max_tokens: 1024,
      tools,
      messages: [ask],
    });
    const call = turn.content.find((block) => block.type === 'tool_use');
    expect(call?.input).toEqual({ city: 'Paris' });
    const answer = await client.messages.create({
      model: 'claude-like',
      max_tokens: 1024,
      tools,
      messages: [
        ask,
        { role: 'assistant', content: turn.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: call?.id ?? '', content: '18°C, sunny' }],
        },
      ],
    });
    expect(answer.stop_reason).toBe('end_turn');
    expect(answer.content[0]).toMatchObject({
      type: 'text',
      text: expect.stringMatching(/^The get_weather tool returned: 18°C, sunny\./),
    });
  });

  it('openai chat completions: a function call with {"city":"Paris"}', async () => {
    const completion = await openaiSdk().chat.completions.create({
      model: 'gpt-4o',
      messages: [{ role: 'user', content: PARIS }],
      tools: [{ type: 'function', function: { name: 'get_weather', parameters: weatherSchema } }],
    });
    const call = completion.choices[0]?.message.tool_calls?.[0];
    expect(call?.type === 'function' ? JSON.parse(call.function.arguments) : undefined).toEqual({
      city: 'Paris',
    });
  });

  it('Vercel AI SDK generateText runs the tool with {city: "Paris"} and answers', async () => {
    const asked: unknown[] = [];
    const { text } = await generateText({
      model: aiAnthropic()('claude-like'),
      prompt: PARIS,
      tools: {
        get_weather: tool({
          description: 'Weather now',
          inputSchema: z.object({ city: z.string() }),
          execute: async (input) => {
            asked.push(input);
            return '18°C, sunny';
          },
        }),
      },
      stopWhen: stepCountIs(2),
    });
    expect(asked).toEqual([{ city: 'Paris' }]);
    expect(text).toMatch(/^The get_weather tool returned: "?18°C, sunny/);
  });
});
