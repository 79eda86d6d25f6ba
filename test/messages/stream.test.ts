import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { TOKENS_PER_DELTA } from '../../src/messages/service.js';
import { countTokens, splitTokens } from '../../src/platform/tokens.js';
import { generateReply } from '../../src/text/default-reply.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const post = (payload: object, app: TestApp = t) => app.messages(payload);

describe('streamed messages', () => {
  it('send the upstream event sequence, each data.type equal to its event name', async () => {
    const res = await post({
      model: 'm',
      max_tokens: 1024,
      stream: true,
      messages: [{ role: 'user', content: 'Hello there' }],
    });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/event-stream; charset=utf-8');
    expect(res.headers['request-id']).toBe('req_1');
    const reply = generateReply('Hello there', 0);
    const usage = {
      input_tokens: 7,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
    };
    expect(parseSse(res.body)).toEqual([
      {
        event: 'message_start',
        data: {
          type: 'message_start',
          message: {
            model: 'm',
            id: 'msg_1',
            type: 'message',
            role: 'assistant',
            content: [],
            container: null,
            stop_reason: null,
            stop_sequence: null,
            stop_details: null,
            usage: {
              ...usage,
              output_tokens: 1,
              output_tokens_details: null,
              server_tool_use: null,
              service_tier: 'standard',
              inference_geo: 'global',
              speed: 'standard',
            },
            diagnostics: null,
          },
        },
      },
      {
        event: 'content_block_start',
        data: {
          type: 'content_block_start',
          index: 0,
          content_block: { type: 'text', text: '', citations: null },
        },
      },
      { event: 'ping', data: { type: 'ping' } },
      ...splitTokens(reply.text, TOKENS_PER_DELTA).map((text) => ({
        event: 'content_block_delta',
        data: { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text } },
      })),
      { event: 'content_block_stop', data: { type: 'content_block_stop', index: 0 } },
      {
        event: 'message_delta',
        data: {
          type: 'message_delta',
          delta: {
            stop_reason: 'end_turn',
            stop_sequence: null,
            stop_details: null,
            container: null,
          },
          usage: {
            input_tokens: 7,
            cache_creation_input_tokens: 0,
            cache_read_input_tokens: 0,
            output_tokens: reply.tokens,
            output_tokens_details: { thinking_tokens: 0 },
            server_tool_use: null,
          },
        },
      },
      { event: 'message_stop', data: { type: 'message_stop' } },
    ]);
  });

  it('streams a reply sent again (its frames remembered) as it streamed it the first time', async () => {
    const request = {
      model: 'm',
      max_tokens: 1024,
      stream: true,
      messages: [{ role: 'user', content: 'Again and again' }],
    };
    const first = (await post(request)).body;
    const second = (await post(request)).body;
    expect(second).toBe(first.replace('"id":"msg_1"', '"id":"msg_2"'));
    expect(second).not.toBe(first);
  });

  it('sends deltas of up to 4 tokens', async () => {
    const res = await post({
      model: 'm',
      max_tokens: 1000,
      stream: true,
      messages: [{ role: 'user', content: 'x' }],
    });
    const deltas = parseSse(res.body)
      .filter((e) => e.event === 'content_block_delta')
      .map((e) => (e.data as { delta: { text: string } }).delta.text);
    expect(deltas.length).toBe(Math.ceil(generateReply('x', 0).tokens / 4));
    for (const delta of deltas.slice(0, -1)) expect(countTokens(delta)).toBe(4);
  });

  it('streams exactly the non-streamed text, stop reason and usage', async () => {
    for (const extra of [
      { max_tokens: 6 },
      { max_tokens: 500, stop_sequences: ['.'] },
      { max_tokens: 500 },
    ]) {
      const request = {
        model: 'm',
        messages: [{ role: 'user', content: 'same please' }],
        ...extra,
      };
      const plain = (await post(request)).json();
      const events = parseSse((await post({ ...request, stream: true })).body);
      for (const event of events) expect((event.data as { type: string }).type).toBe(event.event);
      const text = events
        .filter((e) => e.event === 'content_block_delta')
        .map((e) => (e.data as { delta: { text: string } }).delta.text)
        .join('');
      expect(text).toBe(plain.content[0].text);
      const delta = events.find((e) => e.event === 'message_delta')?.data as {
        delta: { stop_reason: string; stop_sequence: string | null };
        usage: { output_tokens: number };
      };
      expect(delta.delta).toEqual({
        stop_reason: plain.stop_reason,
        stop_sequence: plain.stop_sequence,
        stop_details: null,
        container: null,
      });
      expect(delta.usage.output_tokens).toBe(plain.usage.output_tokens);
      expect(events.at(-1)?.event).toBe('message_stop');
    }
  });

  it('paces deltas with the first-token and chunk delays', async () => {
    const paced = await buildTestApp({ streamTtftMs: 400, streamChunkDelayMs: 30 });
    const res = await post(
      { model: 'm', max_tokens: 1000, stream: true, messages: [{ role: 'user', content: 'pace' }] },
      paced,
    );
    expect(res.body.endsWith('event: message_stop\ndata: {"type":"message_stop"}\n\n')).toBe(true);
    const deltas = splitTokens(generateReply('pace', 0).text, TOKENS_PER_DELTA).length;
    // first delta waits 400; later deltas and content_block_stop wait 30 each
    expect(paced.deps.sleeps).toEqual([400, ...Array(deltas).fill(30)]);
    await paced.app.close();
  });
});
