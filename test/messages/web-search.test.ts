import { createAnthropic } from '@ai-sdk/anthropic';
import { ChatAnthropic } from '@langchain/anthropic';
import { generateText, streamText } from 'ai';
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

const WEB_SEARCH = { type: 'web_search_20250305', name: 'web_search' };
const QUESTION = 'What is the weather in New York City today?';
const QUERY = 'what is the weather in new york city today';
const SLUG = 'what-is-the-weather-in-new-york-city-today';
const TITLE = 'What Is The Weather In New York City';

const ask = (extra: object = {}, content: unknown = QUESTION) =>
  t.messages({
    model: 'm',
    max_tokens: 1024,
    tools: [WEB_SEARCH],
    messages: [{ role: 'user', content }],
    ...extra,
  });

interface Page {
  type: string;
  url: string;
  title: string;
  encrypted_content: string;
  page_age: string | null;
}

/** The pages of a reply's (first) search result. */
const pagesOf = (content: Block[]) =>
  content.find((b) => b.type === 'web_search_tool_result')?.content as Page[];

/** The blocks a searched answer ends with: a quote of each of the first two pages. */
const quotesOf = (content: Block[]) => content.filter((b) => Array.isArray(b.citations));

describe('web search (web_search_20250305)', () => {
  it('runs within the request: the call, its result, the answer and quotes of the pages found', async () => {
    const res = await ask();
    expect(res.statusCode).toBe(200);
    const message = res.json();
    const content = message.content as Block[];
    expect(content.map((b) => b.type)).toEqual([
      'text',
      'server_tool_use',
      'web_search_tool_result',
      'text',
      'text',
      'text',
    ]);
    expect(content.slice(0, 2)).toEqual([
      { type: 'text', text: 'I will use the web_search tool for this.', citations: null },
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'web_search',
        input: { query: QUERY },
        caller: { type: 'direct' },
      },
    ]);
    const pages = pagesOf(content);
    expect(content[2]).toEqual({
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_1',
      content: pages,
      caller: { type: 'direct' },
    });
    // Three pages on the reserved example domains, named after the query.
    expect(pages).toHaveLength(3);
    expect(pages.map((p) => p.url)).toEqual([
      `https://news.example.org/${SLUG}`,
      `https://wiki.example.net/${SLUG}-2`,
      `https://blog.example.com/${SLUG}-3`,
    ]);
    for (const page of pages) {
      expect(page).toEqual({
        type: 'web_search_result',
        url: page.url,
        title: `${TITLE} - ${new URL(page.url).host}`,
        encrypted_content: expect.stringMatching(/^[A-Za-z0-9+/]+=*$/),
        page_age: expect.stringMatching(/^[A-Z][a-z]+ \d{1,2}, 202[45]$/),
      });
    }
    expect(content[3]).toEqual({
      type: 'text',
      text: expect.stringMatching(/^Based on the search results: \S/),
      citations: null,
    });
    const quotes = quotesOf(content);
    expect(quotes).toHaveLength(2);
    quotes.forEach((quote, k) => {
      const page = pages[k] as Page;
      const text = quote.text as string;
      expect(quote).toEqual({
        type: 'text',
        text,
        citations: [
          {
            type: 'web_search_result_location',
            url: page.url,
            title: page.title,
            encrypted_index: expect.stringMatching(/^[A-Za-z0-9+/]+=*$/),
            cited_text: text,
          },
        ],
      });
      expect(text.length).toBeLessThanOrEqual(150);
      expect(text).toMatch(/^[A-Z].*[.!?]$/);
    });
    expect(message.stop_reason).toBe('end_turn');
    // Output: the texts and the call; input: the prompt, and the pages the model read.
    const texts = content.filter((b) => b.type === 'text').map((b) => b.text as string);
    const call = countTokens('web_search') + countTokens(JSON.stringify({ query: QUERY }));
    expect(message.usage.output_tokens).toBe(
      texts.reduce((sum, text) => sum + countTokens(text), 0) + call,
    );
    const unsearched = (await ask({ tool_choice: { type: 'none' } })).json();
    expect(message.usage.input_tokens).toBeGreaterThan(unsearched.usage.input_tokens + 3 * 10);
    expect(message.usage.server_tool_use).toEqual({
      web_search_requests: 1,
      web_fetch_requests: 0,
    });
    // No search, no server_tool_use.
    expect(unsearched.usage.server_tool_use).toBeNull();
    expect(unsearched.content.map((b: Block) => b.type)).toEqual(['text']);
  });

  it('finds the same pages for the same query, and others for another', async () => {
    const first = pagesOf((await ask()).json().content);
    const again = pagesOf((await ask({ system: 'Be brief.' })).json().content);
    expect(again).toEqual(first);
    const other = pagesOf((await ask({}, 'Who won the chess final?')).json().content);
    expect(other.map((p) => p.url)).not.toEqual(first.map((p) => p.url));
    expect(other.every((p) => p.url.includes('/who-won-the-chess-final'))).toBe(true);
  });

  it('searches when forced by tool_choice, with no preface, and answers after the results', async () => {
    const content = (
      await ask({ tool_choice: { type: 'tool', name: 'web_search' } }, 'Hello')
    ).json().content as Block[];
    expect(content.map((b) => b.type)).toEqual([
      'server_tool_use',
      'web_search_tool_result',
      'text',
      'text',
      'text',
    ]);
    expect(content[0]).toEqual({
      type: 'server_tool_use',
      id: 'srvtoolu_1',
      name: 'web_search',
      input: { query: 'hello' },
      caller: { type: 'direct' },
    });
  });

  it('takes results only from allowed_domains (subdomains and paths as written)', async () => {
    const tool = { ...WEB_SEARCH, allowed_domains: ['docs.python.org', 'example.com/blog/*'] };
    const pages = pagesOf((await ask({ tools: [tool] })).json().content);
    expect(pages.map((p) => p.url)).toEqual([
      `https://example.com/blog/a/${SLUG}`,
      `https://docs.python.org/${SLUG}-2`,
      `https://example.com/blog/a/${SLUG}-3`,
    ]);
  });

  it('never takes results from blocked_domains; with every site blocked it finds nothing', async () => {
    const blocked = { ...WEB_SEARCH, blocked_domains: ['example.org', 'wiki.example.net'] };
    const pages = pagesOf((await ask({ tools: [blocked] })).json().content);
    expect(pages).toHaveLength(3);
    for (const page of pages) {
      expect(new URL(page.url).host).not.toMatch(/(^|\.)example\.org$|^wiki\.example\.net$/);
    }
    const all = { ...WEB_SEARCH, blocked_domains: ['example.com', 'example.org', 'example.net'] };
    const message = (await ask({ tools: [all] })).json();
    const content = message.content as Block[];
    // An empty result (not an error), an answer, and nothing to quote.
    expect(content[2]).toEqual({
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_2',
      content: [],
      caller: { type: 'direct' },
    });
    expect(content.map((b) => b.type)).toEqual([
      'text',
      'server_tool_use',
      'web_search_tool_result',
      'text',
    ]);
    expect(message.usage.server_tool_use).toEqual({
      web_search_requests: 1,
      web_fetch_requests: 0,
    });
  });

  it('blocks by path too: a blocked path (with * for any text) keeps its host for other paths', async () => {
    const tool = {
      ...WEB_SEARCH,
      blocked_domains: [
        'news.example.org/*weather',
        'wiki.example.net/nothing*',
        'forum.example.net',
      ],
    };
    const pages = pagesOf((await ask({ tools: [tool] })).json().content);
    expect(pages.map((p) => p.url)).toEqual([
      `https://wiki.example.net/${SLUG}`,
      `https://blog.example.com/${SLUG}-2`,
      `https://guide.example.org/${SLUG}-3`,
    ]);
  });

  it('compares blocked paths beyond ASCII as pages write them, and builds URLs on allowed entries in lower case', async () => {
    const sites = [
      'docs.example.com',
      'news.example.org',
      'wiki.example.net',
      'blog.example.com',
      'guide.example.org',
      'forum.example.net',
    ];
    const blocked = { ...WEB_SEARCH, blocked_domains: sites.map((site) => `${site}/你好`) };
    expect(pagesOf((await ask({ tools: [blocked] }, '你好 world')).json().content)).toEqual([]);
    const allowed = { ...WEB_SEARCH, allowed_domains: ['EXAMPLE.COM/Blog/你'] };
    const pages = pagesOf((await ask({ tools: [allowed] }, 'cats')).json().content);
    expect(pages.map((p) => p.url)).toEqual([
      'https://example.com/Blog/%E4%BD%A0/cats',
      'https://example.com/Blog/%E4%BD%A0/cats-2',
      'https://example.com/Blog/%E4%BD%A0/cats-3',
    ]);
    expect(pages[0]?.title).toBe('Cats - example.com');
    const query = await ask({ tools: [{ ...WEB_SEARCH, allowed_domains: ['example.com/q?x=1'] }] });
    expect(query.json().error.message).toBe(
      "tools.0.web_search_20250305.allowed_domains.0: Invalid domain 'example.com/q?x=1': a host name with an optional path, without a scheme, query or fragment (example.com, example.com/blog); '*' only in the path",
    );
  });

  it('bounds the domain lists: 100 entries of at most 1000 characters', async () => {
    const many = Array.from({ length: 101 }, (_, i) => `site${i}.example.com`);
    const res = await ask({ tools: [{ ...WEB_SEARCH, allowed_domains: many }] });
    expect(res.json().error.message).toBe(
      'tools.0.web_search_20250305.allowed_domains: List should have at most 100 items',
    );
    const hundred = await ask({ tools: [{ ...WEB_SEARCH, allowed_domains: many.slice(1) }] });
    expect(hundred.statusCode).toBe(200);
    const long = `example.com/${'*a'.repeat(493)}*`;
    expect(long.length).toBe(999);
    const over = await ask({ tools: [{ ...WEB_SEARCH, blocked_domains: [`${long}bc`] }] });
    expect(over.json().error.message).toBe(
      'tools.0.web_search_20250305.blocked_domains.0: String should have at most 1000 characters',
    );
    // At the bound, a path of 494 wildcards is matched in linear time.
    const at = await ask({ tools: [{ ...WEB_SEARCH, blocked_domains: [`${long}b`] }] });
    expect(at.statusCode).toBe(200);
    expect(pagesOf(at.json().content)).toHaveLength(3);
  });

  it.each([
    [{ name: 'search' }, "tools.0.web_search_20250305.name: Input should be 'web_search'"],
    [{ max_uses: 0 }, 'tools.0.web_search_20250305.max_uses: Input should be greater than 0'],
    [{ max_uses: 1.5 }, 'tools.0.web_search_20250305.max_uses: Input should be a valid integer'],
    [
      { allowed_domains: [] },
      'tools.0.web_search_20250305.allowed_domains: Empty list of domains is ambiguous. Provide at least one domain or null.',
    ],
    [
      { allowed_domains: ['a.com'], blocked_domains: ['b.com'] },
      'tools.0.web_search_20250305: Only one of allowed_domains or blocked_domains may be set.',
    ],
    [
      { blocked_domains: ['https://example.com'] },
      "tools.0.web_search_20250305.blocked_domains.0: Invalid domain 'https://example.com': a host name with an optional path, without a scheme, query or fragment (example.com, example.com/blog); '*' only in the path",
    ],
    [
      { allowed_domains: ['*.example.com'] },
      "tools.0.web_search_20250305.allowed_domains.0: Invalid domain '*.example.com': a host name with an optional path, without a scheme, query or fragment (example.com, example.com/blog); '*' only in the path",
    ],
    [
      { user_location: { type: 'exact', city: 'Oslo' } },
      "tools.0.web_search_20250305.user_location.type: Input should be 'approximate'",
    ],
    [
      { user_location: { type: 'approximate', city: 7 } },
      'tools.0.web_search_20250305.user_location.city: Input should be a valid string',
    ],
  ])('refuses the tool %j with a 400 that names the field', async (fields, message) => {
    const res = await ask({ tools: [{ ...WEB_SEARCH, ...fields }] });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      type: 'error',
      error: { type: 'invalid_request_error', message },
      request_id: expect.any(String),
    });
  });

  it('takes the documented settings: max_uses, a domain list, user_location, cache_control', async () => {
    const tool = {
      type: 'web_search_20260209',
      name: 'web_search',
      max_uses: 5,
      allowed_domains: null,
      blocked_domains: ['untrustedsource.com'],
      user_location: {
        type: 'approximate',
        city: 'San Francisco',
        region: 'California',
        country: 'US',
        timezone: 'America/Los_Angeles',
      },
      cache_control: { type: 'ephemeral' },
      allowed_callers: ['direct'],
    };
    const res = await ask({ tools: [tool] });
    expect(res.statusCode).toBe(200);
    expect(res.json().usage.server_tool_use).toEqual({
      web_search_requests: 1,
      web_fetch_requests: 0,
    });
  });

  it('beside a client tool: the client runs its tool first, and the next reply starts with the search result', async () => {
    const tools = [
      WEB_SEARCH,
      {
        name: 'get_weather',
        input_schema: {
          type: 'object',
          properties: { city: { type: 'string', enum: ['Oslo'] } },
          required: ['city'],
        },
      },
    ];
    const question = 'Use web_search and get_weather for Oslo.';
    const first = (await ask({ tools }, question)).json();
    expect(first.content).toEqual([
      {
        type: 'text',
        text: 'I will use the web_search and get_weather tools for this.',
        citations: null,
      },
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'web_search',
        input: { query: 'use web_search and get_weather for oslo' },
        caller: { type: 'direct' },
      },
      {
        type: 'tool_use',
        id: 'toolu_1',
        name: 'get_weather',
        input: { city: 'Oslo' },
        caller: { type: 'direct' },
      },
    ]);
    expect(first.stop_reason).toBe('tool_use');
    // Not run yet: not counted.
    expect(first.usage.server_tool_use).toBeNull();
    const messages = [
      { role: 'user', content: question },
      { role: 'assistant', content: first.content },
      {
        role: 'user',
        content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'Sunny, 18 °C' }],
      },
    ];
    const next = (await t.messages({ model: 'm', max_tokens: 1024, tools, messages })).json();
    const content = next.content as Block[];
    expect(content.map((b) => b.type)).toEqual(['web_search_tool_result', 'text', 'text', 'text']);
    expect(content[0]).toEqual({
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_1',
      content: pagesOf(content),
      caller: { type: 'direct' },
    });
    expect(pagesOf(content)[0]?.url).toBe(
      'https://wiki.example.net/use-web-search-and-get-weather-for-oslo',
    );
    expect(content[1]?.text).toMatch(/^The get_weather tool returned: Sunny, 18 °C\. /);
    expect(quotesOf(content)).toHaveLength(2);
    expect(next.stop_reason).toBe('end_turn');
    expect(next.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
    // The continuation must offer the tool again.
    const without = await t.messages({
      model: 'm',
      max_tokens: 1024,
      tools: tools.slice(1),
      messages,
    });
    expect(without.statusCode).toBe(400);
    expect(without.json().error.message).toBe(
      '`web_search` tool use with id `srvtoolu_1` is waiting for its result, but no web_search tool was provided',
    );
    // Sent back after the continuation (the result in the next assistant turn): resolved.
    const later = await t.messages({
      model: 'm',
      max_tokens: 1024,
      tools,
      tool_choice: { type: 'none' },
      messages: [...messages, { role: 'assistant', content }, { role: 'user', content: 'Thanks.' }],
    });
    expect(later.json().content.map((b: Block) => b.type)).toEqual(['text']);
    // An earlier turn's search left without a result is refused.
    const unresolved = await t.messages({
      model: 'm',
      max_tokens: 1024,
      tools,
      messages: [
        ...messages.slice(0, 2),
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'x' }] },
        { role: 'assistant', content: 'Done.' },
        { role: 'user', content: 'Thanks.' },
      ],
    });
    expect(unresolved.statusCode).toBe(400);
    expect(unresolved.json().error.message).toBe(
      'messages.1: `web_search` tool use with id `srvtoolu_1` was found without a corresponding `web_search_tool_result` block',
    );
  });

  it('past max_uses a scripted search answers max_uses_exceeded, and is not counted', async () => {
    const added = await stub(t, {
      match: { contains: 'twice' },
      reply: 'Searching twice.',
      tool_calls: [
        { name: 'web_search', input: { query: 'first' } },
        { name: 'web_search', input: { query: 'second' } },
      ],
    });
    expect(added.statusCode).toBe(200);
    const message = (await ask({ tools: [{ ...WEB_SEARCH, max_uses: 1 }] }, 'Search twice')).json();
    const content = message.content as Block[];
    expect(content.slice(0, 5)).toEqual([
      { type: 'text', text: 'Searching twice.', citations: null },
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'web_search',
        input: { query: 'first' },
        caller: { type: 'direct' },
      },
      {
        type: 'web_search_tool_result',
        tool_use_id: 'srvtoolu_1',
        content: pagesOf(content),
        caller: { type: 'direct' },
      },
      {
        type: 'server_tool_use',
        id: 'srvtoolu_2',
        name: 'web_search',
        input: { query: 'second' },
        caller: { type: 'direct' },
      },
      {
        type: 'web_search_tool_result',
        tool_use_id: 'srvtoolu_2',
        content: { type: 'web_search_tool_result_error', error_code: 'max_uses_exceeded' },
        caller: { type: 'direct' },
      },
    ]);
    expect(pagesOf(content)[0]?.url).toMatch(/\/first$/);
    expect(message.usage.server_tool_use).toEqual({
      web_search_requests: 1,
      web_fetch_requests: 0,
    });
    expect(message.stop_reason).toBe('end_turn');
  });

  it('a query over 500 characters is query_too_long, not run and not counted', async () => {
    await stub(t, {
      match: { contains: 'long query' },
      tool_calls: [{ name: 'web_search', input: { query: 'q'.repeat(501) } }],
    });
    const message = (await ask({}, 'A long query')).json();
    expect(message.content.slice(0, 2)).toEqual([
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'web_search',
        input: { query: 'q'.repeat(501) },
        caller: { type: 'direct' },
      },
      {
        type: 'web_search_tool_result',
        tool_use_id: 'srvtoolu_1',
        content: { type: 'web_search_tool_result_error', error_code: 'query_too_long' },
        caller: { type: 'direct' },
      },
    ]);
    expect(message.content.map((b: Block) => b.type)).toEqual([
      'server_tool_use',
      'web_search_tool_result',
      'text',
    ]);
    expect(message.usage.server_tool_use).toBeNull();
  });

  it('cuts at max_tokens like any reply: a search that does not fit is not run', async () => {
    const message = (await ask({ max_tokens: 12 })).json();
    expect(message.content).toEqual([
      { type: 'text', text: 'I will use the web_search tool for this.', citations: null },
    ]);
    expect(message.stop_reason).toBe('max_tokens');
    expect(message.usage.server_tool_use).toBeNull();
    // Room for the call and part of the answer: the search runs, the answer is cut, no quotes.
    const cut = (await ask({ max_tokens: 40 })).json();
    expect(cut.content.map((b: Block) => b.type)).toEqual([
      'text',
      'server_tool_use',
      'web_search_tool_result',
      'text',
    ]);
    expect(cut.stop_reason).toBe('max_tokens');
    expect(cut.usage.output_tokens).toBe(40);
    expect(cut.usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
  });

  it('refuses a search left without a result unless the client ran its tool beside it', async () => {
    const call = {
      type: 'server_tool_use',
      id: 'srvtoolu_x',
      name: 'web_search',
      input: { query: 'q' },
      caller: { type: 'direct' },
    };
    const refused = {
      type: 'error',
      error: {
        type: 'invalid_request_error',
        message:
          'messages.1: `web_search` tool use with id `srvtoolu_x` was found without a corresponding `web_search_tool_result` block',
      },
      request_id: expect.any(String),
    };
    // Followed by a plain user turn: nothing waits for it.
    const res = await t.messages({
      model: 'm',
      max_tokens: 1024,
      tools: [WEB_SEARCH],
      messages: [
        { role: 'user', content: QUESTION },
        { role: 'assistant', content: [call] },
        { role: 'user', content: 'Hi' },
      ],
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual(refused);
  });

  it('goes on with a paused turn sent back as it is: its searches run first', async () => {
    // A rule pauses the turn (pause_turn) with a search not yet run, as upstream may.
    await stub(t, {
      match: { contains: 'long research' },
      reply: 'Researching.',
      tool_calls: [{ name: 'web_search', input: { query: 'gateways' } }, { name: 'lookup' }],
      stop_reason: 'pause_turn',
    });
    const tools = [WEB_SEARCH, { name: 'lookup', input_schema: { type: 'object' } }];
    const paused = (await ask({ tools }, 'A long research task')).json();
    expect(paused.stop_reason).toBe('pause_turn');
    expect(paused.content.map((b: Block) => b.type)).toEqual([
      'text',
      'server_tool_use',
      'tool_use',
    ]);
    // The paused turn sent back as it is, last.
    const goOn = (model: string) =>
      t.messages({
        model,
        max_tokens: 1024,
        tools,
        tool_choice: { type: 'none' },
        messages: [
          { role: 'user', content: 'Go on' },
          { role: 'assistant', content: paused.content.slice(0, 2) },
        ],
      });
    const next = await goOn('m');
    expect(next.statusCode).toBe(200);
    expect(next.json().content[0]).toMatchObject({
      type: 'web_search_tool_result',
      tool_use_id: 'srvtoolu_1',
      caller: { type: 'direct' },
    });
    expect(next.json().usage.server_tool_use).toEqual({
      web_search_requests: 1,
      web_fetch_requests: 0,
    });
    // Not a prefill, so a model that refuses prefills goes on with it too.
    const opus = await goOn('claude-opus-4-6');
    expect(opus.statusCode).toBe(200);
    const prefill = await t.messages({
      model: 'claude-opus-4-6',
      max_tokens: 1024,
      messages: [
        { role: 'user', content: 'Go on' },
        { role: 'assistant', content: 'Sure,' },
      ],
    });
    expect(prefill.statusCode).toBe(400);
  });

  it("lets at most 20 searches wait for the client's results", async () => {
    const tools = [WEB_SEARCH, { name: 'lookup', input_schema: { type: 'object' } }];
    const turn = (searches: number) => [
      { role: 'user', content: QUESTION },
      {
        role: 'assistant',
        content: [
          ...Array.from({ length: searches }, (_, i) => ({
            type: 'server_tool_use',
            id: `srvtoolu_${i}`,
            name: 'web_search',
            input: { query: `q${i}` },
            caller: { type: 'direct' },
          })),
          {
            type: 'tool_use',
            id: 'toolu_1',
            name: 'lookup',
            input: {},
            caller: { type: 'direct' },
          },
        ],
      },
      { role: 'user', content: [{ type: 'tool_result', tool_use_id: 'toolu_1', content: 'ok' }] },
    ];
    const at = (
      await t.messages({ model: 'm', max_tokens: 4096, tools, messages: turn(20) })
    ).json();
    expect(at.content.filter((b: Block) => b.type === 'web_search_tool_result')).toHaveLength(20);
    expect(at.usage.server_tool_use).toEqual({ web_search_requests: 20, web_fetch_requests: 0 });
    const over = await t.messages({ model: 'm', max_tokens: 4096, tools, messages: turn(21) });
    expect(over.statusCode).toBe(400);
    expect(over.json().error.message).toBe(
      "messages.1: at most 20 web searches and fetches may wait for the client's tool results",
    );
  });

  it("with an output format, the answer after the search is the format's JSON, unquoted", async () => {
    const schema = {
      type: 'object',
      properties: { city: { type: 'string' }, sunny: { type: 'boolean' } },
      required: ['city', 'sunny'],
      additionalProperties: false,
    };
    const message = (
      await ask({ output_config: { format: { type: 'json_schema', schema } } })
    ).json();
    const content = message.content as Block[];
    expect(content.map((b) => b.type)).toEqual([
      'server_tool_use',
      'web_search_tool_result',
      'text',
    ]);
    const answer = JSON.parse(content[2]?.text as string);
    expect(Object.keys(answer).sort()).toEqual(['city', 'sunny']);
    expect(typeof answer.city).toBe('string');
    expect(typeof answer.sunny).toBe('boolean');
  });

  it('thinks first, then searches; a stop sequence in the answer stops it there, unquoted', async () => {
    const thinking = (
      await ask({
        model: 'claude-sonnet-4-5',
        thinking: { type: 'enabled', budget_tokens: 1024 },
        max_tokens: 4096,
      })
    ).json();
    expect(thinking.content.map((b: Block) => b.type)).toEqual([
      'thinking',
      'text',
      'server_tool_use',
      'web_search_tool_result',
      'text',
      'text',
      'text',
    ]);
    const stopped = (await ask({ stop_sequences: ['search results'] })).json();
    expect(stopped.content.map((b: Block) => b.type)).toEqual([
      'text',
      'server_tool_use',
      'web_search_tool_result',
      'text',
    ]);
    expect(stopped.content[3]).toEqual({ type: 'text', text: 'Based on the ', citations: null });
    expect(stopped.stop_reason).toBe('stop_sequence');
    expect(stopped.stop_sequence).toBe('search results');
    expect(stopped.usage.server_tool_use).toEqual({
      web_search_requests: 1,
      web_fetch_requests: 0,
    });
  });

  it('blocks each page by its own path: the second and third pages are paths of their own', async () => {
    const blocked = `wiki.example.net/${SLUG}-2`;
    const pages = pagesOf(
      (await ask({ tools: [{ ...WEB_SEARCH, blocked_domains: [blocked] }] })).json().content,
    );
    expect(pages.map((p) => p.url)).toHaveLength(3);
    expect(pages.map((p) => p.url)).not.toContain(`https://${blocked}`);
    expect(pages[1]?.url).toMatch(new RegExp(`/${SLUG}-2$`));
  });

  it('counts the pages in the message step of usage.iterations too', async () => {
    const res = await t.messages(
      {
        model: 'claude-opus-4-6',
        max_tokens: 1024,
        tools: [WEB_SEARCH],
        messages: [{ role: 'user', content: QUESTION }],
      },
      { headers: { 'anthropic-beta': 'compact-2026-01-12' } },
    );
    const usage = res.json().usage;
    expect(usage.iterations).toEqual([
      {
        type: 'message',
        input_tokens: usage.input_tokens,
        output_tokens: usage.output_tokens,
        cache_creation_input_tokens: 0,
        cache_read_input_tokens: 0,
        cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
        model: 'claude-opus-4-6',
      },
    ]);
    expect(usage.server_tool_use).toEqual({ web_search_requests: 1, web_fetch_requests: 0 });
  });

  it('searches in any script: the query keeps its marks, the pages their own percent-encoded paths', async () => {
    const content = (await ask({}, 'नमस्ते दुनिया मौसम')).json().content as Block[];
    expect(content[1]?.input).toEqual({ query: 'नमस्ते दुनिया मौसम' });
    const urls = pagesOf(content).map((p) => p.url);
    expect(decodeURIComponent(new URL(urls[0] as string).pathname)).toMatch(/^\/नमस्ते-दुनिया/);
    const other = pagesOf((await ask({}, 'İstanbul hava durumu')).json().content);
    expect(other[0]?.url).not.toBe(urls[0]);
  });

  it('a scripted search whose input is not {query} is invalid_tool_input, and its turn comes back', async () => {
    await stub(t, {
      match: { contains: 'odd' },
      tool_calls: [
        { name: 'web_search', input: 'notanobject' },
        { name: 'web_search', input: { q: 1 } },
      ],
    });
    const message = (await ask({}, 'An odd search')).json();
    const invalid = { type: 'web_search_tool_result_error', error_code: 'invalid_tool_input' };
    expect(message.content.slice(0, 4)).toEqual([
      {
        type: 'server_tool_use',
        id: 'srvtoolu_1',
        name: 'web_search',
        input: {},
        caller: { type: 'direct' },
      },
      {
        type: 'web_search_tool_result',
        tool_use_id: 'srvtoolu_1',
        content: invalid,
        caller: { type: 'direct' },
      },
      {
        type: 'server_tool_use',
        id: 'srvtoolu_2',
        name: 'web_search',
        input: { q: 1 },
        caller: { type: 'direct' },
      },
      {
        type: 'web_search_tool_result',
        tool_use_id: 'srvtoolu_2',
        content: invalid,
        caller: { type: 'direct' },
      },
    ]);
    expect(message.usage.server_tool_use).toBeNull();
    const back = await t.messages({
      model: 'm',
      max_tokens: 1024,
      tools: [WEB_SEARCH],
      tool_choice: { type: 'none' },
      messages: [
        { role: 'user', content: 'An odd search' },
        { role: 'assistant', content: message.content },
        { role: 'user', content: 'Go on.' },
      ],
    });
    expect(back.statusCode).toBe(200);
  });

  it('takes the searched turn back as history (result, quotes and all) and answers the next question', async () => {
    const first = (await ask()).json();
    const res = await t.messages({
      model: 'm',
      max_tokens: 1024,
      tools: [WEB_SEARCH],
      tool_choice: { type: 'none' },
      messages: [
        { role: 'user', content: QUESTION },
        { role: 'assistant', content: first.content },
        { role: 'user', content: 'Thanks. And tomorrow?' },
      ],
    });
    expect(res.statusCode).toBe(200);
    expect(res.json().content.map((b: Block) => b.type)).toEqual(['text']);
  });

  it('streams the call as input_json_delta, the result whole in its start, the usage in message_delta', async () => {
    const json = (await ask()).json();
    const res = await ask({ stream: true });
    const events = parseSse(res.body).map((e) => e.data as Block);
    const starts = events.filter((e) => e.type === 'content_block_start');
    expect(starts[1]).toEqual({
      type: 'content_block_start',
      index: 1,
      content_block: {
        type: 'server_tool_use',
        id: 'srvtoolu_2',
        name: 'web_search',
        input: {},
        caller: { type: 'direct' },
      },
    });
    const partial = events
      .filter((e) => e.type === 'content_block_delta' && e.index === 1)
      .map((e) => (e.delta as { type: string; partial_json: string }).partial_json)
      .join('');
    expect(JSON.parse(partial)).toEqual({ query: QUERY });
    expect(starts[2]).toEqual({
      type: 'content_block_start',
      index: 2,
      content_block: { ...json.content[2], tool_use_id: 'srvtoolu_2' },
    });
    expect(events.filter((e) => e.type === 'content_block_delta' && e.index === 2)).toEqual([]);
    const start = events.find((e) => e.type === 'message_start');
    expect(start?.message).toMatchObject({ usage: { output_tokens: 1 } });
    // (the searches run come with message_delta)
    expect((start?.message as { usage: object } | undefined)?.usage).toMatchObject({
      server_tool_use: null,
    });
    const delta = events.find((e) => e.type === 'message_delta');
    expect(delta?.usage).toEqual({
      input_tokens: json.usage.input_tokens,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: 0,
      output_tokens: json.usage.output_tokens,
      output_tokens_details: { thinking_tokens: 0 },
      server_tool_use: { web_search_requests: 1, web_fetch_requests: 0 },
    });
  });
});

describe('web search through the clients', () => {
  it('@anthropic-ai/sdk: the stream assembles the message create answers', async () => {
    await withAnthropic(async (client) => {
      const request = {
        model: 'claude-like',
        max_tokens: 1024,
        tools: [{ type: 'web_search_20250305' as const, name: 'web_search' as const, max_uses: 2 }],
        messages: [{ role: 'user' as const, content: QUESTION }],
      };
      const created = await client.messages.create(request);
      // (the stream helper adds `parsed_output`, for structured output)
      const { parsed_output: _, ...streamed } = await client.messages
        .stream(request)
        .finalMessage();
      expect(withoutIds(streamed)).toEqual(withoutIds(created));
      expect(created.usage.server_tool_use).toEqual({
        web_search_requests: 1,
        web_fetch_requests: 0,
      });
    });
  });

  it('Vercel AI SDK: the provider-executed call and result, and the pages as sources', async () => {
    await withEmulator(async (emulator) => {
      const anthropic = createAnthropic({
        baseURL: `${emulator.url}/messages-api/v1`,
        apiKey: 'sk-local',
        headers: { 'msgapi-version': '2023-06-01' },
      });
      const options = {
        model: anthropic('claude-like'),
        prompt: QUESTION,
        tools: { web_search: anthropic.tools.webSearch_20250305({ maxUses: 2 }) },
      };
      const result = await generateText(options);
      const call = result.content.find((part) => part.type === 'tool-call');
      expect(call).toMatchObject({
        toolName: 'web_search',
        providerExecuted: true,
        input: { query: QUERY },
      });
      const output = result.content.find((part) => part.type === 'tool-result');
      expect(output).toMatchObject({ toolName: 'web_search', providerExecuted: true });
      const pages = (output as { output: Array<{ url: string }> }).output;
      expect(pages).toHaveLength(3);
      // The pages found are the sources; the two the answer quotes are its text's citations
      // (AI SDK 7 no longer repeats a quoted page as a source when the results came back).
      expect(result.sources.map((s) => (s as { url: string }).url)).toEqual(
        pages.map((page) => page.url),
      );
      const quoted = result.content.flatMap((part) =>
        part.type === 'text' ? (part.citations ?? []) : [],
      );
      expect(quoted.map((c) => (c.source as { url: string }).url)).toEqual(
        pages.slice(0, 2).map((page) => page.url),
      );
      expect(result.text).toMatch(/Based on the search results: /);
      expect(result.finishReason).toBe('stop');
      const streamed = streamText(options);
      expect((await streamed.sources).map((s) => (s as { url: string }).url)).toEqual(
        result.sources.map((s) => (s as { url: string }).url),
      );
      expect(await streamed.text).toBe(result.text);
    });
  });

  it('LangChain ChatAnthropic: the server tool blocks in the message content', async () => {
    await withEmulator(async (emulator) => {
      const model = new ChatAnthropic({
        model: 'claude-like',
        apiKey: 'sk-local',
        anthropicApiUrl: `${emulator.url}/messages-api`,
        clientOptions: { defaultHeaders: { 'msgapi-version': '2023-06-01' } },
      }).bindTools([{ type: 'web_search_20250305', name: 'web_search', max_uses: 1 }]);
      const message = await model.invoke(QUESTION);
      const content = message.content as Block[];
      expect(content.map((b) => b.type)).toEqual([
        'text',
        'server_tool_use',
        'web_search_tool_result',
        'text',
        'text',
        'text',
      ]);
      // A server tool's call is not one the client must run.
      expect(message.tool_calls ?? []).toEqual([]);
    });
  });
});
