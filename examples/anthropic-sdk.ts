import Anthropic from '@anthropic-ai/sdk';

export async function anthropicSdk(base = 'http://127.0.0.1:4010') {
  const client = new Anthropic({
    apiKey: 'sk-local',
    baseURL: `${base}/messages-api`,
    defaultHeaders: { 'msgapi-version': '2023-06-01' },
  });
  // A long system prompt (over the 1024 tokens a cache breakpoint needs), cached
  const policy = 'Refunds are accepted within 30 days of delivery. '.repeat(150);
  const ask = () =>
    client.messages.create({
      model: 'claude-like',
      max_tokens: 1024,
      system: [{ type: 'text', text: policy, cache_control: { type: 'ephemeral' } }],
      messages: [{ role: 'user', content: 'Summarise the policy' }],
    });
  const first = await ask(); // writes the cache: usage.cache_creation_input_tokens
  const second = await ask(); // reads it: usage.cache_read_input_tokens

  const stream = client.messages.stream({
    model: 'claude-like',
    max_tokens: 512,
    messages: [{ role: 'user', content: 'Stream me' }],
  });
  let streamed = '';
  stream.on('text', (delta) => {
    streamed += delta;
  });
  const final = await stream.finalMessage();
  return { first: first.usage, second: second.usage, streamed, final };
}
