import { createAnthropic } from '@ai-sdk/anthropic';
import { generateText } from 'ai';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { countTokens } from '../../src/platform/tokens.js';
import { withAnthropic, withEmulator } from '../helpers/anthropic.js';
import { buildTestApp, parseSse, type TestApp } from '../helpers/app.js';
import { type Block, stub, withoutIds } from '../helpers/server-tools.js';

let t: TestApp;
beforeEach(async () => {
  t = await buildTestApp();
});
afterEach(() => t.app.close());

const WEB_FETCH = { type: 'web_fetch_20250910', name: 'web_fetch' };
const WEB_SEARCH = { type: 'web_search_20250305', name: 'web_search' };
const URL_ = 'https://example.com/blog/my-first-post';
/** A fetched page as a history sends it back. */
const PAGE = {
  type: 'document',
  source: { type: 'text', media_type: 'text/plain', data: 'A post.' },
};
const QUESTION = `Summarize ${URL_}.`;
/** A client tool. */
const LOOKUP = { name: 'lookup', input_schema: { type: 'object', properties: {} } };
/** The emulator clock's start (test/helpers/app.ts T0). */
const RETRIEVED = '2026-01-01T00:00:00.000Z';

const ask = (extra: object = {}, content: unknown = QUESTION) =>
  t.messages({
    model: 'm',
    max_tokens: 1024,
    tools: [WEB_FETCH],
    messages: [{ role: 'user', content }],
    ...extra,
  });

/** Stubs a reply that calls web_fetch with each of `inputs` for a prompt containing `word`. */
const scripted = (word: string, ...inputs: unknown[]) =>
  stub(t, {
    match: { contains: word },
    tool_calls: inputs.map((input) => ({ name: 'web_fetch', input })),
  });

/** The text of the page a reply's first fetch read (its third block). */
const dataOf = (content: Block[]) =>
  (content[2] as unknown as { content: { content: { source: { data: string } } } }).content.content
    .source.data;

const error = (id: string, code: string) => ({
  type: 'web_fetch_tool_result',
  tool_use_id: id,
  content: { type: 'web_fetch_tool_result_error', error_code: code },
  caller: { type: 'direct' },
});

describe('web fetch (web_fetch_20250910)', () => {
  it('fetches the URL of the user text within the request, and answers from the page', async () => {
    const message = (await ask()).json();
    const content = message.content as Block[];
    expect(content.map((b) => b.type)).toEqual([
      'text',
      'server_tool_use',
      'web_fetch_tool_result',
      'text',
    ]);
    expect(content.slice(0, 2)).toEqual([
      { type: 'text', text: 'I will use the web_fetch tool for this.', citations: null },
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'web_fetch',
        input: { url: URL_ },
        caller: { type: 'direct' },
      },
    ]);
    const data = dataOf(content);
    expect(content[2]).toEqual({
      type: 'web_fetch_tool_result',
      tool_use_id: 'srvtoolu_1',
      content: {
        type: 'web_fetch_result',
        url: URL_,
        content: {
          type: 'document',
          source: { type: 'text', media_type: 'text/plain', data },
          title: 'Blog My First Post - example.com',
        },
        retrieved_at: RETRIEVED,
      },
      caller: { type: 'direct' },
    });
    expect(data).toMatch(/^[A-Z].*[.!?]$/);
    // The same URL, the same page.
    const again = (await ask({ system: 'Be brief.' })).json().content[2];
    expect(again).toEqual({ ...content[2], tool_use_id: 'srvtoolu_2' });
    expect(content[3]?.text).toMatch(/^Based on the page: \S/);
    expect(message.stop_reason).toBe('end_turn');
    const plain = (await ask({ tool_choice: { type: 'none' } })).json();
    expect(message.usage.input_tokens).toBe(
      plain.usage.input_tokens +
        countTokens('Blog My First Post - example.com') +
        countTokens(data),
    );
    expect(message.usage.server_tool_use).toEqual({
      web_search_requests: 0,
      web_fetch_requests: 1,
    });
    const texts = content.filter((b) => b.type === 'text').map((b) => b.text as string);
    expect(message.usage.output_tokens).toBe(
      texts.reduce((sum, text) => sum + countTokens(text), 0) +
        countTokens('web_fetch') +
        countTokens(JSON.stringify({ url: URL_ })),
    );
  });

  it('with citations on, the document says so and the answer quotes it by characters', async () => {
    const doc = {
      type: 'document',
      source: { type: 'text', media_type: 'text/plain', data: 'One. Two.' },
    };
    const tool = { ...WEB_FETCH, citations: { enabled: true } };
    const message = (await ask({ tools: [tool] }, [doc, { type: 'text', text: QUESTION }])).json();
    const content = message.content as Block[];
    const result = content[2]?.content as {
      content: { citations: unknown; source: { data: string } };
    };
    expect(result.content.citations).toEqual({ enabled: true });
    const first = /^[^.!?]*[.!?]/.exec(result.content.source.data)?.[0] as string;
    expect(content.at(-1)).toEqual({
      type: 'text',
      text: first,
      citations: [
        {
          type: 'char_location',
          cited_text: first,
          // after the request's own document
          document_index: 1,
          document_title: 'Blog My First Post - example.com',
          start_char_index: 0,
          end_char_index: first.length,
          file_id: null,
        },
      ],
    });
  });

  it('cuts the page to max_content_tokens', async () => {
    const tool = { ...WEB_FETCH, max_content_tokens: 5 };
    const content = (await ask({ tools: [tool] })).json().content as Block[];
    const data = dataOf(content);
    expect(countTokens(data)).toBe(5);
  });

  it('refuses, as a result, a URL that is not http(s), too long, not in the conversation, or off its domains', async () => {
    const long = `https://example.com/${'a'.repeat(231)}`;
    expect(long.length).toBe(251);
    await scripted(
      'odd',
      { url: 'ftp://example.com/file' },
      { url: long },
      { url: 'https://example.org/elsewhere' },
      { nothing: 1 },
    );
    const content = (await ask({}, `An odd fetch of ${URL_} and ${long}`)).json()
      .content as Block[];
    expect(content.filter((b) => b.type === 'web_fetch_tool_result')).toEqual([
      error('srvtoolu_1', 'invalid_tool_input'),
      error('srvtoolu_2', 'url_too_long'),
      error('srvtoolu_3', 'url_not_in_prior_context'),
      error('srvtoolu_4', 'invalid_tool_input'),
    ]);
    const tools = (fields: object) => [{ ...WEB_FETCH, ...fields }];
    const fetched = async (fields: object) =>
      ((await ask({ tools: tools(fields) })).json().content as Block[])[2]?.content;
    // Domain filters match the host (and its subdomains) only: an entry with a path matches no URL.
    expect(await fetched({ allowed_domains: ['example.com'] })).toMatchObject({ url: URL_ });
    expect(await fetched({ allowed_domains: ['example.com/blog'] })).toEqual(
      error('', 'url_not_allowed').content,
    );
    expect(await fetched({ blocked_domains: ['example.com'] })).toEqual(
      error('', 'url_not_allowed').content,
    );
    expect(await fetched({ blocked_domains: ['example.com/blog'] })).toMatchObject({ url: URL_ });
  });

  it('counts failed fetches against max_uses; only fetched pages in usage', async () => {
    await scripted('twice', { url: 'https://example.org/x' }, { url: URL_ });
    const message = (
      await ask({ tools: [{ ...WEB_FETCH, max_uses: 1 }] }, `Fetch twice: ${URL_}`)
    ).json();
    expect(message.content.filter((b: Block) => b.type === 'web_fetch_tool_result')).toEqual([
      error('srvtoolu_1', 'url_not_in_prior_context'),
      error('srvtoolu_2', 'max_uses_exceeded'),
    ]);
    expect(message.usage.server_tool_use).toBeNull();
  });

  it('with no URL in the conversation it is not called on auto; forced, its call has no URL', async () => {
    const plain = (await ask({}, 'Hello there')).json();
    expect(plain.content.map((b: Block) => b.type)).toEqual(['text']);
    const forced = (
      await ask({ tool_choice: { type: 'tool', name: 'web_fetch' } }, 'Hello there')
    ).json();
    expect(forced.content.slice(0, 2)).toEqual([
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'web_fetch',
        input: {},
        caller: { type: 'direct' },
      },
      error('srvtoolu_1', 'invalid_tool_input'),
    ]);
  });

  it('takes the latest URL of the conversation when the user text has none (a search result)', async () => {
    const searched = (
      await t.messages({
        model: 'm',
        max_tokens: 1024,
        tools: [WEB_SEARCH],
        messages: [{ role: 'user', content: 'Find gateway docs' }],
      })
    ).json();
    const pages = (searched.content as Block[]).find((b) => b.type === 'web_search_tool_result')
      ?.content as Array<{ url: string }>;
    const message = (
      await t.messages({
        model: 'm',
        max_tokens: 1024,
        tools: [WEB_SEARCH, WEB_FETCH],
        messages: [
          { role: 'user', content: 'Find gateway docs' },
          { role: 'assistant', content: searched.content },
          { role: 'user', content: 'Now read it with web_fetch.' },
        ],
      })
    ).json();
    const content = message.content as Block[];
    expect(content[1]).toEqual({
      type: 'server_tool_use',
      id: 'srvtoolu_2',
      name: 'web_fetch',
      input: { url: pages.at(-1)?.url },
      caller: { type: 'direct' },
    });
    expect(content[2]?.content).toMatchObject({ type: 'web_fetch_result', url: pages.at(-1)?.url });
  });

  it('searches and fetches in one reply: the fetch reads the first page found', async () => {
    const message = (
      await ask(
        { tools: [WEB_SEARCH, { ...WEB_FETCH, citations: { enabled: true } }] },
        'Use web_search and web_fetch for gateways',
      )
    ).json();
    const content = message.content as Block[];
    expect(content.map((b) => b.type)).toEqual([
      'text',
      'server_tool_use',
      'web_search_tool_result',
      'server_tool_use',
      'web_fetch_tool_result',
      'text',
      'text',
      'text',
      'text',
    ]);
    const first = (content[2] as unknown as { content: Array<{ url: string }> }).content[0]?.url;
    expect(content[3]).toEqual({
      type: 'server_tool_use',
      id: 'srvtoolu_2',
      name: 'web_fetch',
      input: { url: first },
      caller: { type: 'direct' },
    });
    expect(content[5]?.text).toMatch(/^Based on the search results: /);
    // Two search quotes, then the fetched page's (document 0: the request has none).
    const citations = content.slice(6).map((b) => (b.citations as Array<{ type: string }>)[0]);
    expect(citations.map((c) => c?.type)).toEqual([
      'web_search_result_location',
      'web_search_result_location',
      'char_location',
    ]);
    expect(citations[2]).toMatchObject({ document_index: 0 });
    expect(message.usage.server_tool_use).toEqual({
      web_search_requests: 1,
      web_fetch_requests: 1,
    });
    const texts = content.filter((b) => b.type === 'text').map((b) => b.text as string);
    expect(message.usage.output_tokens).toBe(
      texts.reduce((sum, text) => sum + countTokens(text), 0) +
        countTokens('web_search') +
        countTokens(JSON.stringify(content[1]?.input)) +
        countTokens('web_fetch') +
        countTokens(JSON.stringify({ url: first })),
    );
  });

  it('beside a client tool, waits for its results; the next reply starts with the page', async () => {
    const tools = [WEB_FETCH, { name: 'notify', input_schema: { type: 'object' } }];
    const question = `Use web_fetch on ${URL_} and notify me.`;
    const first = (await ask({ tools }, question)).json();
    expect(first.stop_reason).toBe('tool_use');
    expect(first.content.map((b: Block) => b.type)).toEqual([
      'text',
      'server_tool_use',
      'tool_use',
    ]);
    const next = (
      await t.messages({
        model: 'm',
        max_tokens: 1024,
        tools,
        messages: [
          { role: 'user', content: question },
          { role: 'assistant', content: first.content },
          {
            role: 'user',
            content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sent' }],
          },
        ],
      })
    ).json();
    expect(next.content[0]).toMatchObject({
      type: 'web_fetch_tool_result',
      tool_use_id: 'srvtoolu_1',
      content: { type: 'web_fetch_result', url: URL_ },
      caller: { type: 'direct' },
    });
    expect(next.usage.server_tool_use).toEqual({ web_search_requests: 0, web_fetch_requests: 1 });
    const without = await t.messages({
      model: 'm',
      max_tokens: 1024,
      tools: tools.slice(1),
      messages: [
        { role: 'user', content: question },
        { role: 'assistant', content: first.content },
        {
          role: 'user',
          content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'sent' }],
        },
      ],
    });
    expect(without.json().error.message).toBe(
      '`web_fetch` tool use with id `srvtoolu_1` is waiting for its result, but no web_fetch tool was provided',
    );
  });

  it('reads URLs from hostile texts in linear time, and any number of them', async () => {
    // A URL followed by a long run of sentence punctuation (trimmed from its end).
    // (counted, not answered: so many dots are more tokens than the model's window)
    const dots = `Read ${URL_}/${'.'.repeat(200_000)}x`;
    const counted = await t.messages(
      { model: 'm', tools: [WEB_FETCH], messages: [{ role: 'user', content: dots }] },
      { path: '/count_tokens' },
    );
    expect(counted.statusCode).toBe(200);
    const some = (await ask({}, `Read ${URL_}/${'.'.repeat(200)}x.`)).json();
    expect(some.content[1].input).toEqual({ url: `${URL_}/${'.'.repeat(200)}x` });
    // 130 000 URLs in one text: counted (the conversation keeps its latest 1000 for fetches).
    const many = await t.messages(
      {
        model: 'm',
        tools: [WEB_FETCH],
        messages: [{ role: 'user', content: 'http://a.b '.repeat(130_000) }],
      },
      { path: '/count_tokens' },
    );
    expect(many.statusCode).toBe(200);
    // The user's own first URL stays fetchable however many follow it.
    const first = (
      await ask(
        {},
        `Summarize ${URL_} ${Array.from({ length: 1001 }, (_, i) => `https://example.com/p${i}`).join(' ')}`,
      )
    ).json();
    expect(first.content[2].content).toMatchObject({ type: 'web_fetch_result', url: URL_ });
  });

  it('takes URLs in any case, titles a path escape by escape, and only http(s) pages from the history', async () => {
    const upper = (await ask({}, 'Read HTTPS://EXAMPLE.COM/News now')).json();
    expect(upper.content[1].input).toEqual({ url: 'HTTPS://EXAMPLE.COM/News' });
    expect(upper.content[2].content.content.title).toBe('News - example.com');
    const escaped = (await ask({}, 'Read https://example.com/%E4%BD%A0%E5%A5%BD/%F0%9F')).json();
    expect(escaped.content[2].content.content.title).toBe('你好 F0 9F - example.com');
    const history = await t.messages({
      model: 'm',
      max_tokens: 1024,
      tools: [WEB_FETCH],
      messages: [
        { role: 'user', content: `Read ${URL_}` },
        {
          role: 'assistant',
          content: [
            {
              type: 'server_tool_use',
              id: 'srvtoolu_a',
              name: 'web_fetch',
              input: { url: URL_ },
              caller: { type: 'direct' },
            },
            {
              type: 'web_fetch_tool_result',
              tool_use_id: 'srvtoolu_a',
              content: { type: 'web_fetch_result', url: 'javascript:alert(1)', content: PAGE },
              caller: { type: 'direct' },
            },
          ],
        },
        { role: 'user', content: 'Again.' },
      ],
    });
    expect(history.json().content[1].input).toEqual({ url: URL_ });
  });

  it('on any, with no URL to take, still calls it (with no URL); the answer speaks of the page', async () => {
    const message = (await ask({ tool_choice: { type: 'any' } }, 'Hello there')).json();
    expect(message.content.slice(0, 2)).toEqual([
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'web_fetch',
        input: {},
        caller: { type: 'direct' },
      },
      error('srvtoolu_1', 'invalid_tool_input'),
    ]);
    expect(message.content[2].text).toMatch(/^Based on the page: /);
  });

  it('takes URLs only from the sources url_sources names: the users, the tools it names', async () => {
    const only = (sources: object) => ({ tools: [{ ...WEB_FETCH, url_sources: sources }, LOOKUP] });
    const fetched = async (
      sources: object,
      content: unknown = QUESTION,
      history: object[] = [],
    ) => {
      const res = await t.messages({
        model: 'm',
        max_tokens: 1024,
        ...only(sources),
        tool_choice: { type: 'tool', name: 'web_fetch' },
        messages: [...history, { role: 'user', content }],
      });
      const blocks = res.json().content as Block[];
      return blocks.find((b) => b.type === 'web_fetch_tool_result')?.content;
    };
    expect(await fetched({ user_input: { type: 'all' } })).toMatchObject({ url: URL_ });
    expect(await fetched({ user_input: { type: 'none' } })).toEqual({
      type: 'web_fetch_tool_result_error',
      error_code: 'url_not_in_prior_context',
    });
    // A URL a client tool returned (the model tries it whatever the sources): fetched from the
    // tools named (only) or not left out (except), else refused as not in the context.
    const history = [
      { role: 'user', content: 'Look it up.' },
      {
        role: 'assistant',
        content: [{ type: 'tool_use', id: 'toolu_l', name: 'lookup', input: {} }],
      },
    ];
    const result = [{ type: 'tool_result', tool_use_id: 'toolu_l', content: `See ${URL_}` }];
    const named = [{ type: 'tool_reference', name: 'lookup' }];
    for (const [sources, taken] of [
      [{}, true],
      [{ client_tool_results: { type: 'only', tools: named } }, true],
      [{ client_tool_results: { type: 'except', tools: named } }, false],
      [{ client_tool_results: { type: 'none' } }, false],
    ] as const) {
      const content = await fetched(sources, result, history);
      expect(content, JSON.stringify(sources)).toMatchObject(
        taken ? { url: URL_ } : { error_code: 'url_not_in_prior_context' },
      );
    }
    const unknown = await t.messages({
      model: 'm',
      max_tokens: 10,
      ...only({
        server_tool_results: { type: 'only', tools: [{ type: 'tool_reference', name: 'nope' }] },
      }),
      messages: [{ role: 'user', content: QUESTION }],
    });
    expect(unknown.json().error.message).toBe(
      "tools.0.web_fetch_20250910.url_sources.server_tool_results.only.tools.0.name: Tool 'nope' is not in tools",
    );
  });

  it('refuses a history whose web tool blocks do not pair up', async () => {
    const call = {
      type: 'server_tool_use',
      id: 'srvtoolu_a',
      name: 'web_fetch',
      input: { url: URL_ },
      caller: { type: 'direct' },
    };
    const result = (type: string) => ({
      type,
      tool_use_id: 'srvtoolu_a',
      content:
        type === 'web_search_tool_result'
          ? []
          : { type: 'web_fetch_result', url: URL_, content: PAGE },
    });
    const history = (content: unknown[]) =>
      t.messages({
        model: 'm',
        max_tokens: 1024,
        tools: [WEB_FETCH, WEB_SEARCH],
        messages: [
          { role: 'user', content: `Read ${URL_}` },
          { role: 'assistant', content },
          { role: 'user', content: 'Again.' },
        ],
      });
    const messageOf = async (content: unknown[]) => (await history(content)).json().error.message;
    expect(await messageOf([call, result('web_search_tool_result')])).toBe(
      'messages.1: `web_search_tool_result` block with tool_use_id `srvtoolu_a` does not follow a `web_search` tool use with that id',
    );
    expect(await messageOf([result('web_fetch_tool_result'), call])).toBe(
      'messages.1: `web_fetch_tool_result` block with tool_use_id `srvtoolu_a` does not follow a `web_fetch` tool use with that id',
    );
    expect(await messageOf([call, result('web_fetch_tool_result'), call])).toBe(
      'messages.1: `server_tool_use` ids must be unique: `srvtoolu_a`',
    );
    expect((await history([call, result('web_fetch_tool_result')])).statusCode).toBe(200);
  });

  it.each([
    [{ name: 'fetch' }, "tools.0.web_fetch_20250910.name: Input should be 'web_fetch'"],
    [
      { citations: { enabled: 'yes' } },
      'tools.0.web_fetch_20250910.citations.enabled: Input should be a valid boolean',
    ],
    [
      { max_content_tokens: 0 },
      'tools.0.web_fetch_20250910.max_content_tokens: Input should be greater than 0',
    ],
    [{ use_cache: 1 }, 'tools.0.web_fetch_20250910.use_cache: Input should be a valid boolean'],
    [
      { response_inclusion: 'some', use_cache: null },
      "tools.0.web_fetch_20250910.response_inclusion: Input should be 'full' or 'excluded'",
    ],
    [
      { response_inclusion: 'some' },
      "tools.0.web_fetch_20250910.response_inclusion: Input should be 'full' or 'excluded'",
    ],
    [
      { allowed_domains: ['a.com'], blocked_domains: ['b.com'] },
      'tools.0.web_fetch_20250910: Only one of allowed_domains or blocked_domains may be set.',
    ],
  ])('refuses the tool %j with a 400 that names the field', async (fields, message) => {
    const res = await ask({ tools: [{ ...WEB_FETCH, ...fields }] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message },
      request_id: expect.any(String),
    });
  });

  it('takes the documented settings of every version, and null for the optional ones', async () => {
    for (const tool of [
      {
        ...WEB_FETCH,
        max_uses: 3,
        allowed_domains: ['example.com'],
        blocked_domains: null,
        citations: null,
        max_content_tokens: null,
        cache_control: { type: 'ephemeral' },
        allowed_callers: ['direct'],
        strict: true,
      },
      {
        type: 'web_fetch_20260318',
        name: 'web_fetch',
        use_cache: false,
        response_inclusion: 'excluded',
        url_sources: { user_input: { type: 'all' } },
      },
      { type: 'web_fetch_20260309', name: 'web_fetch', use_cache: null, response_inclusion: null },
    ]) {
      const message = (await ask({ tools: [tool] })).json();
      expect(message.content[2].content).toMatchObject({ type: 'web_fetch_result', url: URL_ });
    }
  });

  it('streams the call as input_json_delta and the page whole in its start', async () => {
    const json = (await ask()).json();
    const events = parseSse((await ask({ stream: true })).body).map((e) => e.data as Block);
    const starts = events.filter((e) => e.type === 'content_block_start');
    expect(starts[2]).toEqual({
      type: 'content_block_start',
      index: 2,
      content_block: { ...json.content[2], tool_use_id: 'srvtoolu_2' },
    });
    expect(events.filter((e) => e.type === 'content_block_delta' && e.index === 2)).toEqual([]);
    expect(events.find((e) => e.type === 'message_delta')?.usage).toMatchObject({
      server_tool_use: { web_search_requests: 0, web_fetch_requests: 1 },
    });
  });
});

describe('web fetch through the clients', () => {
  it('@anthropic-ai/sdk: the stream assembles the message create answers', async () => {
    await withAnthropic(async (client) => {
      const request = {
        model: 'claude-like',
        max_tokens: 1024,
        tools: [{ type: 'web_fetch_20250910' as const, name: 'web_fetch' as const }],
        messages: [{ role: 'user' as const, content: QUESTION }],
      };
      const created = await client.messages.create(request);
      const { parsed_output: _, ...streamed } = await client.messages
        .stream(request)
        .finalMessage();
      expect(withoutIds(streamed)).toEqual(withoutIds(created));
      expect(JSON.stringify(created)).toContain('"retrieved_at":"20');
      expect(created.usage.server_tool_use).toEqual({
        web_search_requests: 0,
        web_fetch_requests: 1,
      });
    });
  });

  it('Vercel AI SDK: a provider-executed call and its page', async () => {
    await withEmulator(async (emulator) => {
      const anthropic = createAnthropic({
        baseURL: `${emulator.url}/messages-api/v1`,
        apiKey: 'sk-local',
        headers: { 'msgapi-version': '2023-06-01' },
      });
      const result = await generateText({
        model: anthropic('claude-like'),
        maxOutputTokens: 1024,
        prompt: QUESTION,
        tools: { web_fetch: anthropic.tools.webFetch_20250910({ maxUses: 2 }) },
      });
      expect(result.content.find((part) => part.type === 'tool-call')).toMatchObject({
        toolName: 'web_fetch',
        providerExecuted: true,
        input: { url: URL_ },
      });
      expect(result.content.find((part) => part.type === 'tool-result')).toMatchObject({
        toolName: 'web_fetch',
        providerExecuted: true,
        output: { type: 'web_fetch_result', url: URL_, retrievedAt: expect.any(String) },
      });
      expect(result.text).toMatch(/Based on the page: /);
    });
  });
});
