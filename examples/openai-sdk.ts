import OpenAI from 'openai';

export async function openaiSdk(base = 'http://127.0.0.1:4010') {
  const client = new OpenAI({ apiKey: 'sk-local', baseURL: `${base}/v1` });
  const completion = await client.chat.completions.create({
    model: 'chat-model',
    messages: [{ role: 'user', content: 'Say hello' }],
  });

  const stream = await client.chat.completions.create({
    model: 'chat-model',
    messages: [{ role: 'user', content: 'Stream me' }],
    stream: true,
    stream_options: { include_usage: true },
  });
  let streamed = '';
  let usage: OpenAI.CompletionUsage | null | undefined;
  for await (const chunk of stream) {
    streamed += chunk.choices[0]?.delta.content ?? '';
    usage = chunk.usage ?? usage;
  }
  return { text: completion.choices[0]?.message.content, streamed, usage };
}
