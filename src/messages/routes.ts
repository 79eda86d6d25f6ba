import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { statusMessage } from '../platform/errors.js';
import { matchContext } from '../platform/group.js';
import type { Ids } from '../platform/ids.js';
import { type Streaming, sendTextStream, streamPacing } from '../text/paced-stream.js';
import { countPrompt, type PromptCache } from '../text/prompt-cache.js';
import type { Replies } from '../text/replies.js';
import { MessagesErrorSchema } from './error-schemas.js';
import { messagesErrorType } from './errors.js';
import { betasOf, readPrompt } from './prompt.js';
import {
  CountTokensRequestSchema,
  CountTokensResponseSchema,
  MessageSchema,
  MessageStreamEventSchema,
  MessagesRequestSchema,
} from './schemas.js';
import { buildMessage, messageStream, messageUsage, outputLimit, planMessage } from './service.js';

const errors = { '4xx': MessagesErrorSchema, '5xx': MessagesErrorSchema };

export interface MessagesRoutesOptions {
  replies: Replies;
  promptCache: PromptCache;
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
    const { replies, promptCache, ids, streaming } = options;

    app.post(
      '/v1/messages',
      {
        schema: {
          summary: 'Create a message, as JSON or as an event stream',
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
      },
      async (request, reply) => {
        const body = request.body;
        const prompt = readPrompt(body, betasOf(request.headers));
        const pacing = body.stream === true ? streamPacing(request, streaming.pacing) : undefined;
        const scan = promptCache.scan(
          `${request.owner}\n${body.model}`,
          prompt.blocks,
          request.session,
        );
        const limit = outputLimit(body, scan.total);
        const done = await planMessage(
          body,
          prompt.turn,
          replies,
          ids,
          limit,
          matchContext(request),
        );
        // Everything that can refuse the request has run: only now may the cache change.
        const cache = promptCache.commit(scan, request.receivedAt);
        const usage = messageUsage(cache, done.outputTokens);
        const who = {
          id: ids.next('message'),
          model: body.model,
          ...(prompt.applied ? { management: { applied_edits: prompt.applied } } : {}),
        };
        if (!pacing) return buildMessage(who, done, usage);
        return sendTextStream({
          request,
          reply,
          streaming,
          produce: messageStream(who, done, usage, pacing),
          errorFrame: errorEvent,
        });
      },
    );

    app.post(
      '/v1/messages/count_tokens',
      {
        schema: {
          summary: 'Count the input tokens of a messages request (the counter usage uses)',
          operationId: 'countMessageTokens',
          body: CountTokensRequestSchema,
          response: { 200: CountTokensResponseSchema, ...errors },
        },
      },
      async (request) => {
        const read = readPrompt(request.body, betasOf(request.headers));
        return {
          input_tokens: countPrompt(read.blocks),
          ...(read.originalTokens === undefined
            ? {}
            : { context_management: { original_input_tokens: read.originalTokens } }),
        };
      },
    );
  };
