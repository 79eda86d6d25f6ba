import { createAnthropic } from '@ai-sdk/anthropic';
import Anthropic from '@anthropic-ai/sdk';
import { zodOutputFormat } from '@anthropic-ai/sdk/helpers/zod';
import { ChatAnthropic } from '@langchain/anthropic';
import { generateObject } from 'ai';
import OpenAI from 'openai';
import { zodResponseFormat } from 'openai/helpers/zod';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { type Emulator, startEmulator } from '../../src/emulator.js';

/**
 * Structured output through the clients that move the keywords messages does not take into
 * descriptions, and check the answer against their full schema themselves (docs/agents.md).
 */
let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ logLevel: 'silent' });
});
afterAll(() => emulator.close());

const anthropicSdk = () =>
  new Anthropic({
    apiKey: 'sk-local',
    baseURL: `${emulator.url}/messages-api`,
    defaultHeaders: { 'msgapi-version': '2023-06-01' },
    maxRetries: 0,
  });

const Review = z.object({
  rating: z.number().min(0).max(10),
  year: z.number().int().min(1900).max(2030),
  tags: z.array(z.string().min(2).max(8)).min(2).max(4),
  code: z.string().regex(/^[A-Z]{3}$/),
  kind: z.enum(['book', 'film']),
  price: z.number().gt(0),
  // A format and the pattern zod writes beside it; a format with a length.
  id: z.uuidv7(),
  at: z.iso.datetime({ precision: 3 }),
  contact: z.email().max(24),
});

describe('structured output whose limits the client moved into descriptions', () => {
  it('@anthropic-ai/sdk messages.parse with zodOutputFormat', async () => {
    // The SDK sends `rating` as {"type":"number","description":"{minimum: 0, maximum: 10}"}.
    const client = anthropicSdk();
    for (const content of ['Review a film', 'Review a book', 'Another one']) {
      const message = await client.messages.parse({
        model: 'claude-like',
        max_tokens: 1024,
        messages: [{ role: 'user', content }],
        output_config: { format: zodOutputFormat(Review) },
      });
      expect(Review.parse(message.parsed_output)).toEqual(message.parsed_output);
    }
  });

  it('@anthropic-ai/sdk messages.parse with tools: the call comes alone (no text that is not the JSON)', async () => {
    const client = anthropicSdk();
    const request = {
      model: 'claude-like',
      max_tokens: 1024,
      tools: [
        {
          name: 'lookup',
          input_schema: { type: 'object' as const, properties: { q: { type: 'string' } } },
        },
      ],
      output_config: { format: zodOutputFormat(Review) },
    };
    const ask = { role: 'user' as const, content: 'Use lookup, then review' };
    const turn = await client.messages.parse({ ...request, messages: [ask] });
    expect(turn.stop_reason).toBe('tool_use');
    expect(turn.content.map((block) => block.type)).toEqual(['tool_use']);
    const call = turn.content[0] as { id: string };
    const streamed = await client.messages.stream({ ...request, messages: [ask] }).finalMessage();
    expect(streamed.content.map((block) => block.type)).toEqual(['tool_use']);
    // The results sent back: the answer is the format's JSON.
    const answer = await client.messages.parse({
      ...request,
      messages: [
        ask,
        { role: 'assistant', content: turn.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: call.id, content: 'found it' }],
        },
      ],
    });
    expect(Review.parse(answer.parsed_output)).toEqual(answer.parsed_output);
  });

  it('Vercel AI SDK generateObject with the anthropic provider (no maxOutputTokens: 128K asked)', async () => {
    const anthropic = createAnthropic({
      baseURL: `${emulator.url}/messages-api/v1`,
      apiKey: 'sk-local',
      headers: { 'msgapi-version': '2023-06-01' },
    });
    for (const prompt of ['Review a film.', 'Review a book.', 'Another review.']) {
      const { object } = await generateObject({
        model: anthropic('claude-like'),
        schema: Review,
        prompt,
      });
      expect(Review.parse(object)).toEqual(object);
    }
  });

  it('LangChain ChatAnthropic.withStructuredOutput (jsonSchema method)', async () => {
    const model = new ChatAnthropic({
      model: 'claude-like',
      apiKey: 'sk-local',
      anthropicApiUrl: `${emulator.url}/messages-api`,
      clientOptions: { defaultHeaders: { 'msgapi-version': '2023-06-01' } },
    });
    const structured = model.withStructuredOutput(Review, { method: 'jsonSchema' });
    for (const prompt of ['Review a film.', 'Review a book.']) {
      const value = await structured.invoke(prompt);
      expect(Review.parse(value)).toEqual(value);
    }
  });
});

describe('structured output with zod formats through chat completions', () => {
  it('openai chat.completions.parse with zodResponseFormat (pattern and format both sent)', async () => {
    const client = new OpenAI({
      apiKey: 'sk-local',
      baseURL: `${emulator.url}/v1`,
      maxRetries: 0,
    });
    for (const content of ['Review a film', 'Review a book', 'Another one']) {
      const completion = await client.chat.completions.parse({
        model: 'gpt-4o',
        messages: [{ role: 'user', content }],
        response_format: zodResponseFormat(Review, 'review'),
      });
      const parsed = completion.choices[0]?.message.parsed;
      expect(Review.parse(parsed)).toEqual(parsed);
    }
  });
});
