import { fieldError } from '../../platform/errors.js';
import type { Turn } from '../../text/agent.js';
import type { MessageParam } from '../schemas.js';
import { normalUrl, takesSource, type UrlSources, urlsIn, WEB_FETCH_NAME } from '../web-fetch.js';
import { WEB_SEARCH_NAME } from '../web-search.js';
import { blocksOf } from './request.js';

/**
 * A web search or fetch an assistant turn called beside a client's tool: upstream runs it once
 * the client's results come, and the reply starts with its result.
 */
export interface PendingCall {
  id: string;
  name: keyof typeof SERVER_CALL_RESULTS;
  /** The call's input, as the turn sent it back (a query, or what the search refuses). */
  input: unknown;
}

/** What the model sends the web fetch tool. */
export const WEB_FETCH_INPUT = {
  type: 'object',
  properties: { url: { type: 'string', minLength: 1 } },
  required: ['url'],
  additionalProperties: false,
};

/**
 * The URL the model fetches: the first in the last user text, else the conversation's latest
 * (a search result's, a tool result's); none when it holds none.
 */
export const fetchInput = (turn: Turn) => {
  const url = urlsIn(turn.prompt, 1)[0] ?? turn.urls?.at(-1);
  return url === undefined ? undefined : { url };
};

/** The most URLs of a conversation a fetch may take (its latest ones). */
export const MAX_CONTEXT_URLS = 1000;

/**
 * The http(s) URLs the conversation holds, in order, which a fetch may take: in the users'
 * texts and tool results, and the pages earlier searches and fetches found.
 * @see https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-fetch-tool
 */
export function conversationUrls(messages: readonly MessageParam[], sources: UrlSources): string[] {
  const urls: string[] = [];
  const add = (found: readonly string[]) => {
    for (const url of found) urls.push(url);
    if (urls.length > 2 * MAX_CONTEXT_URLS) urls.splice(0, urls.length - MAX_CONTEXT_URLS);
  };
  // (a page found is taken when it is an http(s) URL; texts hold only those)
  const found = (url: unknown) => {
    if (typeof url === 'string' && normalUrl(url) !== undefined) add([url]);
  };
  // (a client tool's results are its calls' by id: `url_sources` may name the tool)
  const calls = new Map<string, string>();
  for (const message of messages) {
    for (const block of blocksOf(message.content)) {
      if (block.type === 'tool_use') calls.set(block.id, block.name);
      else if (message.role === 'user' && block.type === 'text') {
        if (sources.user) add(urlsIn(block.text));
      } else if (block.type === 'tool_result') {
        if (!takesSource(sources.client, calls.get(block.tool_use_id))) continue;
        const content = block.content;
        if (typeof content === 'string') add(urlsIn(content));
        else for (const item of content ?? []) if (item.type === 'text') add(urlsIn(item.text));
      } else if (block.type === 'web_search_tool_result' && Array.isArray(block.content)) {
        if (!takesSource(sources.server, WEB_SEARCH_NAME)) continue;
        for (const page of block.content) found(page.url);
      } else if (block.type === 'web_fetch_tool_result') {
        if (!takesSource(sources.server, WEB_FETCH_NAME)) continue;
        if (block.content.type === 'web_fetch_result') found(block.content.url);
      }
    }
  }
  return urls.slice(-MAX_CONTEXT_URLS);
}

/** What the model sends the web search tool. */
export const WEB_SEARCH_INPUT = {
  type: 'object',
  properties: { query: { type: 'string', minLength: 1 } },
  required: ['query'],
  additionalProperties: false,
};

/** Searches and fetches one turn may leave waiting for the client's results (an emulator bound). */
export const MAX_PENDING_SEARCHES = 20;

/** The tools whose calls upstream runs (and the emulator too), and each one's result type. */
const SERVER_CALL_RESULTS = {
  web_search: 'web_search_tool_result',
  web_fetch: 'web_fetch_tool_result',
  tool_search_tool_regex: 'tool_search_tool_result',
  tool_search_tool_bm25: 'tool_search_tool_result',
} as const;
const RESULT_TYPES = new Set<string>(Object.values(SERVER_CALL_RESULTS));
const isServerCall = (name: string): name is PendingCall['name'] =>
  Object.hasOwn(SERVER_CALL_RESULTS, name);

/**
 * The web searches and fetches waiting to run: those the last assistant turn called beside a
 * client's tool (upstream stopped for the client's results, and runs them once the next user
 * turn brings them: the reply starts with their results), or that a paused turn (`pause_turn`)
 * sent back as the last message holds. One no turn has the result of anywhere else (an earlier
 * turn, a last turn with no client call or not answered by tool results) is refused, as
 * upstream refuses it.
 * @see https://platform.claude.com/docs/en/api/handling-stop-reasons#pause-turn
 */
export function pendingCalls(messages: readonly MessageParam[]): PendingCall[] {
  // Each call, in order, and whether a result of its tool's type came after it.
  const calls = new Map<string, { name: PendingCall['name']; at: number; resolved: boolean }>();
  let last = -1;
  messages.forEach((message, i) => {
    if (message.role !== 'assistant') return;
    last = i;
    // (a turn of text alone holds no call: the usual turn costs nothing here)
    if (typeof message.content === 'string') return;
    for (const block of message.content) {
      if (block.type === 'server_tool_use' && isServerCall(block.name)) {
        if (calls.has(block.id)) {
          throw fieldError(
            ['messages', i],
            `\`server_tool_use\` ids must be unique: \`${block.id}\``,
          );
        }
        calls.set(block.id, { name: block.name, at: i, resolved: false });
      } else if (RESULT_TYPES.has(block.type)) {
        const id = (block as { tool_use_id: string }).tool_use_id;
        const call = calls.get(id);
        if (!call || SERVER_CALL_RESULTS[call.name] !== block.type) {
          const tool =
            block.type === 'tool_search_tool_result'
              ? 'tool_search_tool_*'
              : block.type.replace(/_tool_result$/, '');
          throw fieldError(
            ['messages', i],
            `\`${block.type}\` block with tool_use_id \`${id}\` does not follow a \`${tool}\` tool use with that id`,
          );
        }
        call.resolved = true;
      }
    }
  });
  if (calls.size === 0) return [];
  const lastBlocks = blocksOf((messages[last] as MessageParam).content);
  const answered = blocksOf(messages[last + 1]?.content ?? '').some(
    (b) => b.type === 'tool_result',
  );
  // Waiting: beside a client's call its results answer, or in a paused turn sent back as it
  // is, last, for the model to go on (`pause_turn`).
  const waiting =
    last === messages.length - 1 ||
    (answered && lastBlocks.some((block) => block.type === 'tool_use'));
  const pending: PendingCall[] = [];
  for (const [id, call] of calls) {
    if (call.resolved) continue;
    if (call.at !== last || !waiting) {
      throw fieldError(
        ['messages', call.at],
        `\`${call.name}\` tool use with id \`${id}\` was found without a corresponding \`${SERVER_CALL_RESULTS[call.name]}\` block`,
      );
    }
    if (pending.length === MAX_PENDING_SEARCHES) {
      throw fieldError(
        ['messages', call.at],
        `at most ${MAX_PENDING_SEARCHES} web searches and fetches may wait for the client's tool results`,
      );
    }
    const block = lastBlocks.find((b) => b.type === 'server_tool_use' && b.id === id);
    pending.push({ id, name: call.name, input: (block as { input: unknown }).input });
  }
  return pending;
}
