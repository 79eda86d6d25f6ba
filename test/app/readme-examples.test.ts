import { readdirSync, readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { anthropicAgent } from '../../examples/anthropic-agent.js';
import { anthropicSdk } from '../../examples/anthropic-sdk.js';
import { langchain } from '../../examples/langchain.js';
import { openaiAgent } from '../../examples/openai-agent.js';
import { openaiSdk } from '../../examples/openai-sdk.js';
import { vercelAi } from '../../examples/vercel-ai.js';
import { type Emulator, startEmulator } from '../../src/emulator.js';
import { signThinking } from '../../src/text/agent.js';
import { codeBlocks, manualPages } from '../helpers/manual.js';

/**
 * The examples of the README and docs/*.md are the files in examples/, shown verbatim (between
 * `<!-- example: <file> -->` and `<!-- /example -->`, written by `npm run readme:examples`);
 * each runs here against a started emulator, through the real client library, unmodified. An
 * `<!-- excerpt: <file> -->` block shows some of a file's lines, in its order.
 */

const pages = manualPages();
const example = (name: string) =>
  readFileSync(new URL(`../../examples/${name}`, import.meta.url), 'utf8')
    .trim()
    .replaceAll("'../src/index.js'", "'gateway-emulator'");

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ logLevel: 'silent' });
});
afterAll(() => emulator.close());

const ANSWER = /^The get_weather tool returned: \{"city":"[^"]*","temperature":21\}\. /;
const ajv = new Ajv({ strict: false });
const FILM = {
  type: 'object',
  properties: { title: { type: 'string' }, year: { type: 'integer' } },
  required: ['title', 'year'],
};

/** The blocks marked `<!-- <kind>: <file> -->` ... `<!-- /<kind> -->` in every page. */
const marked = (kind: 'example' | 'excerpt') =>
  pages.flatMap((page) =>
    [
      ...page.text.matchAll(
        new RegExp(`<!-- ${kind}: ([\\w.-]+) -->\\n([\\s\\S]*?)\\n<!-- /${kind} -->`, 'g'),
      ),
    ].map(([, file = '', shown = '']) => ({ page: page.path, file, blocks: codeBlocks(shown) })),
  );
const lines = (code: string) =>
  code
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '');

describe('the examples of the README and docs/', () => {
  it('shows every file of examples/ once, verbatim, on its page', () => {
    const shown = marked('example').map(({ page, file, blocks }) => ({
      page,
      file,
      blocks: blocks.map(({ lang, code }) => ({ lang, verbatim: code === example(file) })),
    }));
    const ts = [{ lang: 'ts', verbatim: true }];
    expect(shown.sort((a, b) => a.file.localeCompare(b.file))).toEqual([
      { page: 'docs/agents.md', file: 'anthropic-agent.ts', blocks: ts },
      { page: 'README.md', file: 'anthropic-sdk.ts', blocks: ts },
      { page: 'docs/use-in-tests.md', file: 'in-tests.test.ts', blocks: ts },
      { page: 'docs/agents.md', file: 'langchain.ts', blocks: ts },
      { page: 'docs/agents.md', file: 'openai-agent.ts', blocks: ts },
      { page: 'README.md', file: 'openai-sdk.ts', blocks: ts },
      { page: 'docs/agents.md', file: 'vercel-ai.ts', blocks: ts },
    ]);
    expect(shown.map(({ file }) => file)).toEqual(
      readdirSync(new URL('../../examples/', import.meta.url)).sort(),
    );
  });

  it("shows excerpts made only of their file's lines, in the file's order", () => {
    const excerpts = marked('excerpt').map(({ page, file, blocks }) => {
      const source = lines(example(file));
      let at = 0;
      const missing = blocks.flatMap(({ code }) =>
        lines(code).filter((line) => {
          const found = source.indexOf(line, at);
          if (found === -1) return true;
          at = found + 1;
          return false;
        }),
      );
      return { page, file, blocks: blocks.length, missing };
    });
    expect(excerpts).toEqual([
      { page: 'README.md', file: 'vercel-ai.ts', blocks: 1, missing: [] },
      { page: 'README.md', file: 'langchain.ts', blocks: 1, missing: [] },
    ]);
  });

  it("the README's OpenAI SDK example: a completion, and a stream with its usage", async () => {
    const { text, streamed, usage } = await openaiSdk(emulator.url);
    expect(text).toEqual(expect.any(String));
    expect(text?.length).toBeGreaterThan(0);
    expect(streamed.length).toBeGreaterThan(0);
    expect(usage).toEqual({
      prompt_tokens: expect.any(Number),
      completion_tokens: expect.any(Number),
      total_tokens: (usage?.prompt_tokens ?? 0) + (usage?.completion_tokens ?? 0),
      prompt_tokens_details: expect.any(Object),
      completion_tokens_details: expect.any(Object),
    });
  });

  it("the README's Anthropic SDK example: the cache written then read, and a stream", async () => {
    const { first, second, streamed, final } = await anthropicSdk(emulator.url);
    const written = first.cache_creation_input_tokens ?? 0;
    expect(written).toBeGreaterThanOrEqual(1024);
    expect({ ...second }).toEqual({
      ...first,
      cache_creation_input_tokens: 0,
      cache_read_input_tokens: written,
      cache_creation: { ephemeral_1h_input_tokens: 0, ephemeral_5m_input_tokens: 0 },
    });
    expect(final.content).toEqual([{ type: 'text', text: streamed, citations: null }]);
    expect(final.stop_reason).toBe('end_turn');
  });

  it('OpenAI SDK: runTools ends with an answer from the tool, parse gives a typed film', async () => {
    const { answer, film } = await openaiAgent(emulator.url);
    expect(answer).toMatch(ANSWER);
    expect(
      ajv.validate(
        { ...FILM, properties: { ...FILM.properties, genres: { type: 'array' } } },
        film,
      ),
    ).toBe(true);
  });

  it('Anthropic SDK: a streamed turn with thinking and tool use, the answer, and the tool runner, compacting on demand', async () => {
    const { turn, answer, final, stops, history } = await anthropicAgent(emulator.url);
    expect(turn.content.map((b) => b.type)).toEqual(['thinking', 'text', 'tool_use']);
    const thinking = turn.content[0];
    expect(thinking?.type === 'thinking' && thinking.signature).toBe(
      thinking?.type === 'thinking' && signThinking(thinking.thinking),
    );
    expect(turn.stop_reason).toBe('tool_use');
    expect(answer.stop_reason).toBe('end_turn');
    // (manual thinking without the interleaved beta: the turn thought once, at its start)
    expect(answer.content.map((b) => b.type)).toEqual(['text']);
    expect(answer.content[0]?.type === 'text' && answer.content[0].text).toMatch(
      /^The get_weather tool returned: \{"temperature": 21\}\. /,
    );
    expect(final.stop_reason).toBe('end_turn');
    expect(final.content[0]?.type === 'text' && final.content[0].text).toMatch(ANSWER);
    // compacted after the first turn: the loop went on from the summary
    expect(stops).toEqual(['tool_use', 'compaction', 'tool_use', 'end_turn']);
    const first = history[0];
    expect(first?.role).toBe('assistant');
    expect(Array.isArray(first?.content) && first.content.map((b) => b.type)).toEqual([
      'compaction',
    ]);
  });

  it('Vercel AI SDK: generateText runs the tool loop and generateObject gives a film, with both providers', async () => {
    const results = await vercelAi(emulator.url);
    expect(results).toHaveLength(2);
    for (const result of results) {
      expect(result.text).toMatch(ANSWER);
      expect(result.steps).toBe(2);
      expect(ajv.validate(FILM, result.object)).toBe(true);
    }
  });

  it('LangChain: bindTools loop and withStructuredOutput, with ChatOpenAI and ChatAnthropic', async () => {
    const results = await langchain(emulator.url);
    expect(results).toHaveLength(2);
    for (const result of results) {
      expect(result.answer).toMatch(ANSWER);
      expect(result.turns).toBe(3);
      expect(ajv.validate(FILM, result.film)).toBe(true);
    }
  });
});
