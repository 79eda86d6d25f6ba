import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { matchContext } from '../harness/pipeline.js';
import { statusMessage } from '../platform/errors.js';
import type { Ids } from '../platform/ids.js';
import { isJsonObject } from '../platform/json-body.js';
import type { Pacing } from '../platform/sse.js';
import { type Streaming, sendTextStream, streamPacing } from '../text/paced-stream.js';
import {
  type CacheUsage,
  countPrompt,
  type PromptCacheStore,
  type PromptScan,
} from '../text/prompt-cache.js';
import type { Replies } from '../text/replies.js';
import {
  checkCompactionRequest,
  compactedPrompt,
  compactedUsage,
  compactionAnswer,
  iteration,
  summarize,
} from './compaction.js';
import { MessagesErrorSchema } from './error-schemas.js';
import { messagesErrorType } from './errors.js';
import { betasOf, type MessagesPrompt, readPrompt } from './prompt/index.js';
import {
  CountTokensRequestSchema,
  CountTokensResponseSchema,
  MessageSchema,
  MessageStreamEventSchema,
  type MessagesRequest,
  MessagesRequestSchema,
  type Usage,
} from './schemas.js';
import {
  buildMessage,
  checkPrewarm,
  type MessageDone,
  type MessageIdentity,
  messageStream,
  messageUsage,
  outputLimit,
  PREWARMED,
  planMessage,
  servedUsage,
  usageTokens,
  withWebUsage,
} from './service.js';
import { compactionError, ON_DEMAND } from './signed-compaction.js';

/** A compaction that pauses: its summary is the whole reply (docs/messages.md "Compaction"). */
const PAUSED: MessageDone = {
  content: [],
  stopReason: 'compaction',
  stopSequence: null,
  outputTokens: 0,
};

const errors = { '4xx': MessagesErrorSchema, '5xx': MessagesErrorSchema };

/**
 * An empty conversation in a compaction request (with its beta) is refused as upstream refuses
 * it, before the schema's `minItems` words it as any empty list would be.
 */
function emptyCompaction(
  request: FastifyRequest,
  _reply: FastifyReply,
  done: (err?: Error) => void,
) {
  const body = request.body;
  const empty =
    isJsonObject(body) &&
    Array.isArray(body.messages) &&
    body.messages.length === 0 &&
    body.compaction !== undefined &&
    body.compaction !== null &&
    body.thread === undefined &&
    betasOf(request.headers).has(ON_DEMAND);
  done(
    empty
      ? compactionError(
          'compaction_nothing_to_summarize',
          'messages: there is no `user` or `assistant` content to summarize',
        )
      : undefined,
  );
}

/**
 * The refusals of both routes that no schema keyword states (rules across fields, or of the
 * model), for the OpenAPI document; the schema states the rest.
 */
const PROMPT_RULES = [
  'Refused besides what the schema states (400, `invalid_request_error`, naming the field):',
  '- the conversation: roles in turn, the last turn a user turn on models without prefill, `tool_result` blocks answering the `tool_use` blocks just before them (by id, ids unique), thinking blocks where thinking is on, mid-conversation `system` messages where the model takes them, at most 100 images;',
  '- thinking: `max_tokens` must be greater than `thinking.budget_tokens` unless thinking interleaves with tools;',
  "- tools: names unique, `tool_choice` naming a tool of the request, a custom tool's `input_schema` a valid JSON Schema without a top-level `anyOf`/`oneOf`/`allOf` (and within the strict limits with `strict: true`), a web tool with one of `allowed_domains`/`blocked_domains` at most, each a host name with an optional path (no scheme), `url_sources` naming tools of the request, a versioned tool of no known type without a `name`;",
  "- a model that does not exist (404 `not_found_error`), a prompt over the model's context window, `thread` (not supported), `compaction` without its beta;",
  '- an empty `messages` in a compaction request: `compaction_nothing_to_summarize`.',
].join('\n');

/**
 * With `diagnostics.previous_message_id`: a prompt that read nothing from the cache gets the
 * reason `unavailable` (the emulator keeps no record of the request named to compare with);
 * one that read from it, none (`diagnostics: null`, as upstream when nothing diverged).
 * @see https://platform.claude.com/docs/en/build-with-claude/cache-diagnostics
 */
const diagnosed = (
  who: MessageIdentity,
  body: Pick<MessagesRequest, 'diagnostics'>,
  read: CacheUsage,
): MessageIdentity =>
  body.diagnostics?.previous_message_id == null || read.read > 0
    ? who
    : { ...who, diagnostics: { cache_miss_reason: { type: 'unavailable' } } };

export interface MessagesRoutesOptions {
  replies: Replies;
  promptCache: PromptCacheStore;
  ids: Ids;
  streaming: Streaming;
}

/** The `event: error` a `stream_error` fault ends a messages stream with. */
const errorEvent = (status: number) =>
  `event: error\ndata: ${JSON.stringify({
    type: 'error',
    error: { type: messagesErrorType(status), message: statusMessage(status) },
  })}\n\n`;

/**
 * `POST /v1/messages` and its `count_tokens` sibling.
 * @see https://platform.claude.com/docs/en/api/messages
 */
export const messagesRoutes =
  (options: MessagesRoutesOptions): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.post(
      '/v1/messages',
      {
        schema: {
          summary: 'Create a message, as JSON or as an event stream',
          description: PROMPT_RULES,
          operationId: 'createMessage',
          body: MessagesRequestSchema,
          response: {
            200: {
              description: 'The message; with `stream: true`, its events (text/event-stream)',
              content: {
                'application/json': { schema: MessageSchema },
                'text/event-stream': { schema: MessageStreamEventSchema },
              },
            },
            ...errors,
          },
        },
        preValidation: emptyCompaction,
      },
      (request, reply) => createMessage(options, { request, reply, body: request.body }),
    );

    app.post(
      '/v1/messages/count_tokens',
      {
        schema: {
          summary: 'Count the input tokens of a messages request (the counter usage uses)',
          description: PROMPT_RULES,
          operationId: 'countMessageTokens',
          body: CountTokensRequestSchema,
          response: { 200: CountTokensResponseSchema, ...errors },
        },
        preValidation: emptyCompaction,
      },
      async (request) => {
        const read = readPrompt(request.body, betasOf(request.headers), true);
        return {
          input_tokens: countPrompt(read.blocks),
          ...(read.originalTokens === undefined
            ? {}
            : { context_management: { original_input_tokens: read.originalTokens } }),
        };
      },
    );
  };

/** What the steps of one create-message request share. */
interface Creating {
  request: FastifyRequest;
  reply: FastifyReply;
  body: MessagesRequest;
}

/** The request as read: its prompt, its cache scan, the tokens the reply may have. */
interface Read extends Creating {
  prompt: MessagesPrompt;
  scope: string;
  scan: PromptScan;
  /** The tokens the reply may have (the whole prompt must fit the window, compaction or not). */
  limit: number;
  pacing: Pacing | undefined;
}

/** `POST /v1/messages`: a compaction's summary, a pre-warming, or the reply. */
async function createMessage(options: MessagesRoutesOptions, creating: Creating) {
  const { request, body } = creating;
  if (body.max_tokens === 0) checkPrewarm(body);
  const prompt = readPrompt(body, betasOf(request.headers));
  const pacing = body.stream === true ? streamPacing(request, options.streaming.pacing) : undefined;
  const scope = `${request.owner}\n${body.model}`;
  if (prompt.summarize) checkCompactionRequest(body);
  const scan = options.promptCache.scan(scope, prompt.blocks, request.session);
  const read: Read = {
    ...creating,
    prompt,
    scope,
    scan,
    limit: outputLimit(body, scan.total),
    pacing,
  };
  if (prompt.summarize) return summaryAnswer(options, read);
  const who = {
    id: options.ids.next('message'),
    model: body.model,
    ...(prompt.applied ? { management: { applied_edits: prompt.applied } } : {}),
  };
  if (body.max_tokens === 0) return prewarmAnswer(options, read, who);
  return replyAnswer(options, read, who);
}

/** On demand: the summary is the whole answer, written from the whole conversation. */
async function summaryAnswer(options: MessagesRoutesOptions, read: Read) {
  const { request, body, prompt } = read;
  const cached = await options.promptCache.commit(read.scan, request.receivedAt);
  const { done, usage } = compactionAnswer(
    body.messages,
    prompt,
    cached,
    read.limit,
    body.max_tokens,
  );
  servedUsage(usage, body);
  request.usageTokens = usageTokens(usage);
  const who = diagnosed({ id: options.ids.next('message'), model: body.model }, body, cached);
  return answer(options.streaming, read, who, done, usage);
}

/** Pre-warming: the prompt is read and cached, nothing is generated (no summary either). */
async function prewarmAnswer(options: MessagesRoutesOptions, read: Read, who: MessageIdentity) {
  const { request, body, prompt } = read;
  const cached = await options.promptCache.commit(read.scan, request.receivedAt);
  const usage = messageUsage(cached, 0);
  if (prompt.iterations) usage.iterations = [iteration(cached, 0, body.model)];
  servedUsage(usage, body);
  request.usageTokens = usageTokens(usage);
  return buildMessage(diagnosed(who, body, cached), PREWARMED, usage);
}

/** The reply; past a compaction's trigger, written from tools, system and a summary. */
async function replyAnswer(options: MessagesRoutesOptions, read: Read, who: MessageIdentity) {
  const { promptCache } = options;
  const { request, body, prompt, scan } = read;
  const compaction =
    prompt.compaction && scan.total > prompt.compaction.trigger ? prompt.compaction : undefined;
  const summary = compaction && summarize(body.messages, prompt.summarized);
  const compacted =
    summary === undefined
      ? undefined
      : {
          summary,
          scan: promptCache.scan(read.scope, compactedPrompt(prompt, summary), request.session),
        };
  const limit = compacted ? outputLimit(body, compacted.scan.total) : read.limit;
  const done = compaction?.pause ? PAUSED : await planReply(options, read, limit);
  // Everything that can refuse the request has run: only now may the cache change.
  const cached = await promptCache.commit(scan, request.receivedAt);
  let usage: Usage;
  let content = done.content;
  if (compaction && compacted) {
    const { summary } = compacted;
    content = [{ type: 'compaction', content: summary }, ...content];
    // The reply's step is a cache lookup of its own, after the summarizing step's.
    const step = compaction.pause
      ? undefined
      : await promptCache.commit(compacted.scan, request.receivedAt);
    usage = compactedUsage(cached, step, compaction, summary, done.outputTokens, body.model);
  } else {
    usage = messageUsage(cached, done.outputTokens, done.thinkingTokens);
    if (prompt.iterations) usage.iterations = [iteration(cached, done.outputTokens, body.model)];
  }
  if (done.web) withWebUsage(usage, done.web);
  servedUsage(usage, body);
  request.usageTokens = usageTokens(usage);
  return answer(options.streaming, read, diagnosed(who, body, cached), { ...done, content }, usage);
}

/** The reply engine's answer to the prompt's turn, within `limit` tokens. */
function planReply(options: MessagesRoutesOptions, read: Read, limit: number) {
  const { request, body, prompt } = read;
  return planMessage(
    body,
    prompt.turn,
    options.replies,
    options.ids,
    limit,
    matchContext(request),
    prompt.cited,
    prompt.search || prompt.fetch || prompt.toolSearch
      ? {
          ...(prompt.search ? { search: prompt.search } : {}),
          ...(prompt.fetch ? { fetch: prompt.fetch } : {}),
          ...(prompt.toolSearch ? { toolSearch: prompt.toolSearch } : {}),
          pending: prompt.pending ?? [],
          urls: prompt.fetchable ?? prompt.turn.urls ?? [],
          documents: prompt.documents,
          now: new Date(request.receivedAt).toISOString(),
        }
      : undefined,
  );
}

/** The message as JSON, or streamed with the request's pacing. */
function answer(
  streaming: Streaming,
  read: Read,
  who: MessageIdentity,
  message: MessageDone,
  usage: Usage,
) {
  const { request, reply, pacing } = read;
  if (!pacing) return buildMessage(who, message, usage);
  return sendTextStream({
    request,
    reply,
    streaming,
    produce: messageStream(who, message, usage, pacing),
    errorFrame: errorEvent,
  });
}
