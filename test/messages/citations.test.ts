import type Anthropic from '@anthropic-ai/sdk';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countTokens } from '../../src/platform/tokens.js';
import { withAnthropic } from '../helpers/anthropic.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const TEXT_DOC: Anthropic.DocumentBlockParam & { source: Anthropic.PlainTextSource } = {
  type: 'document',
  source: {
    type: 'text',
    media_type: 'text/plain',
    data: '  The grass is green. The sky is blue.',
  },
  title: 'My Document',
  citations: { enabled: true },
};
const CONTENT_DOC: Anthropic.DocumentBlockParam = {
  type: 'document',
  source: {
    type: 'content',
    content: [
      { type: 'text', text: ' ' },
      { type: 'text', text: 'Rule one: be kind.' },
    ],
  },
  citations: { enabled: true },
};
const SEARCH_RESULT: Anthropic.SearchResultBlockParam = {
  type: 'search_result',
  source: 'https://docs.example/guide',
  title: 'Guide',
  content: [{ type: 'text', text: 'Install with npm.' }],
  citations: { enabled: true },
};
const QUESTION: Anthropic.TextBlockParam = { type: 'text', text: 'What do the sources say?' };

const ask = (content: unknown[], extra: object = {}) =>
  t.messages({ model: 'm', max_tokens: 1024, messages: [{ role: 'user', content }], ...extra });

const quote = (text: string, citation: object) => ({ type: 'text', text, citations: [citation] });
const GRASS = quote('The grass is green.', {
  type: 'char_location',
  cited_text: 'The grass is green.',
  document_index: 0,
  document_title: 'My Document',
  start_char_index: 2,
  end_char_index: 21,
  file_id: null,
});

describe('citations', () => {
  it('quote a plain-text document by characters, after the answer, counted in output_tokens', async () => {
    const plain = (await ask([{ ...TEXT_DOC, citations: undefined }, QUESTION])).json();
    const res = (await ask([TEXT_DOC, QUESTION])).json();
    expect(res.content).toEqual([...plain.content, GRASS]);
    expect(res.stop_reason).toBe('end_turn');
    expect(res.usage.output_tokens).toBe(
      plain.usage.output_tokens + countTokens('The grass is green.'),
    );
  });

  it('count every document and search result of the request, cited or not, in their indexes', async () => {
    const uncited = { ...TEXT_DOC, citations: { enabled: false } };
    const res = (
      await t.messages({
        model: 'm',
        max_tokens: 1024,
        tools: [{ name: 'search', input_schema: { type: 'object' } }],
        messages: [
          { role: 'user', content: [uncited, TEXT_DOC, { type: 'text', text: 'Search.' }] },
          {
            role: 'assistant',
            content: [{ type: 'tool_use', id: 'toolu_1', name: 'search', input: {} }],
          },
          {
            role: 'user',
            content: [
              {
                type: 'tool_result',
                tool_use_id: 'toolu_1',
                content: [{ ...SEARCH_RESULT, citations: undefined }, SEARCH_RESULT, CONTENT_DOC],
              },
            ],
          },
        ],
      })
    ).json();
    const quotes = res.content.filter((b: { citations?: unknown }) => b.citations);
    expect(quotes).toEqual([
      quote('The grass is green.', { ...GRASS.citations[0], document_index: 1 }),
      quote('Install with npm.', {
        type: 'search_result_location',
        cited_text: 'Install with npm.',
        search_result_index: 1,
        source: 'https://docs.example/guide',
        title: 'Guide',
        start_block_index: 0,
        end_block_index: 1,
      }),
      quote('Rule one: be kind.', {
        type: 'content_block_location',
        cited_text: 'Rule one: be kind.',
        document_index: 2,
        document_title: null,
        start_block_index: 1,
        end_block_index: 2,
        file_id: null,
      }),
    ]);
  });

  it('quote at most 4 sources, a long sentence cut at a word, and none of a PDF or a blank text', async () => {
    const long = `${'word '.repeat(400)}end.`;
    const docs = [
      { ...TEXT_DOC, source: { ...TEXT_DOC.source, data: '   ' } },
      { ...TEXT_DOC, source: { ...TEXT_DOC.source, data: long } },
      TEXT_DOC,
      TEXT_DOC,
      TEXT_DOC,
      TEXT_DOC,
    ];
    const res = (await ask([...docs, QUESTION])).json();
    const quotes = res.content.filter((b: { citations?: unknown }) => b.citations);
    expect(quotes).toHaveLength(4);
    const first = quotes[0].citations[0];
    expect(first.document_index).toBe(1);
    expect(first.cited_text).toBe('word '.repeat(200).trimEnd());
    expect(first.end_char_index).toBe(first.start_char_index + first.cited_text.length);
    expect(
      quotes.map(
        (q: { citations: Array<{ document_index: number }> }) => q.citations[0]?.document_index,
      ),
    ).toEqual([1, 2, 3, 4]);
  });

  it('add no quote to an answer that calls a tool or stops for max_tokens, and refuse a structured output', async () => {
    const tools = [{ name: 'lookup', input_schema: { type: 'object' } }];
    const called = (
      await ask([TEXT_DOC, QUESTION], { tools, tool_choice: { type: 'any' } })
    ).json();
    expect(called.stop_reason).toBe('tool_use');
    expect(called.content.some((b: { citations?: unknown }) => b.citations)).toBe(false);
    // (structured output with citations on is refused, as upstream refuses it)
    const format = {
      type: 'json_schema',
      schema: { type: 'object', properties: {}, additionalProperties: false },
    };
    const structured = await ask([TEXT_DOC, QUESTION], { output_config: { format } });
    expect(structured.statusCode).toBe(400);
    expect(structured.json().error).toEqual({
      type: 'invalid_request_error',
      message:
        'Citations cannot be enabled when output format is set. Please disable citations on uploaded document blocks.',
    });
    const plain = await ask([{ ...TEXT_DOC, citations: { enabled: false } }, QUESTION], {
      output_config: { format },
    });
    expect(plain.statusCode).toBe(200);
    const cut = (await ask([TEXT_DOC, QUESTION], { max_tokens: 3 })).json();
    expect(cut.stop_reason).toBe('max_tokens');
    expect(cut.content.some((b: { citations?: unknown }) => b.citations)).toBe(false);
  });

  it('leave out a quote a stop sequence would cut, and quote nothing for a scripted stop', async () => {
    const doc = {
      ...TEXT_DOC,
      source: { ...TEXT_DOC.source, data: 'The secret STOP word. More.' },
    };
    const res = (await ask([doc, QUESTION], { stop_sequences: ['STOP'] })).json();
    expect(res.stop_reason).toBe('end_turn');
    expect(res.content.some((b: { citations?: unknown }) => b.citations)).toBe(false);
    await t.inject({
      method: 'POST',
      url: '/_emulator/replies',
      payload: { match: { contains: 'sources' }, reply: 'No.', stop_reason: 'refusal' },
    });
    const refused = (await ask([TEXT_DOC, QUESTION])).json();
    expect(refused.stop_reason).toBe('refusal');
    // (a scripted refusal names no category and explains nothing)
    expect(refused.stop_details).toEqual({ type: 'refusal', category: null, explanation: null });
    expect(refused.content).toEqual([{ type: 'text', text: 'No.', citations: null }]);
  });

  it('quote nothing of a text that is only half a character', async () => {
    for (const data of ['\ud83d', ' \udbff']) {
      const doc = { ...TEXT_DOC, source: { ...TEXT_DOC.source, data } };
      const res = (await ask([doc, QUESTION])).json();
      expect(res.content.some((b: { citations?: unknown }) => b.citations)).toBe(false);
    }
  });

  it('never cut a quote between the halves of a character beyond the BMP', async () => {
    const data = `a${'😀'.repeat(700)}`;
    const doc = { ...TEXT_DOC, source: { ...TEXT_DOC.source, data } };
    const res = (await ask([doc, QUESTION])).json();
    const [quoted] = res.content.filter((b: { citations?: unknown }) => b.citations);
    const { cited_text, start_char_index, end_char_index } = quoted.citations[0];
    expect(cited_text).toBe(data.slice(0, 999));
    expect([start_char_index, end_char_index]).toEqual([0, 999]);
    expect(quoted.text.isWellFormed()).toBe(true);
  });

  it('stream a quote as content_block_start with empty citations, a citations_delta, then its text', async () => {
    const res = await ask([TEXT_DOC, QUESTION], { stream: true });
    const events = parseSse(res.body).map((e) => e.data as Record<string, unknown>);
    const at = events.findIndex(
      (e) =>
        e.type === 'content_block_start' &&
        Array.isArray((e.content_block as { citations?: unknown }).citations),
    );
    expect(events.slice(at, at + 3)).toEqual([
      {
        type: 'content_block_start',
        index: 1,
        content_block: { type: 'text', text: '', citations: [] },
      },
      {
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'citations_delta', citation: GRASS.citations[0] },
      },
      {
        type: 'content_block_delta',
        index: 1,
        delta: { type: 'text_delta', text: expect.any(String) },
      },
    ]);
  });

  it("come out the same through the SDK's stream helper as in a whole answer", async () => {
    await withAnthropic(async (client) => {
      const request = {
        model: 'claude-sonnet-4-6',
        max_tokens: 1024,
        messages: [{ role: 'user' as const, content: [TEXT_DOC, SEARCH_RESULT, QUESTION] }],
      };
      const whole = await client.messages.create(request);
      const streamed = await client.messages.stream(request).finalMessage();
      expect(streamed.content).toEqual(whole.content);
      expect(whole.content.filter((b) => b.type === 'text' && b.citations)).toHaveLength(2);
    });
  });
});
