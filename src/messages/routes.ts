import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { statusMessage } from '../platform/errors.js';
import { cutStream, streamPacing } from '../platform/group.js';
import { sendSse, sseEvent } from '../platform/sse.js';
import type { EmulatorState } from '../state.js';
import { countPrompt } from '../text/prompt-cache.js';
import { MessagesErrorSchema } from './error-schemas.js';
import { messagesErrorType } from './errors.js';
import {
  CountTokensRequestSchema,
  CountTokensResponseSchema,
  MessageSchema,
  MessagesRequestSchema,
} from './schemas.js';
import {
  buildMessage,
  checkMessagesRequest,
  messageStreamFrames,
  messageUsage,
  planMessage,
  promptBlocks,
} from './service.js';

const errors = { '4xx': MessagesErrorSchema, '5xx': MessagesErrorSchema };

/** `POST /messages-api/v1/messages` and its `count_tokens` sibling (seed 4.2, upstream B4). */
const messages: FastifyPluginAsyncTypebox<{ state: EmulatorState }> = async (app, { state }) => {
  const { ids, sleep } = state.deps;
  const { config } = state;

  app.post(
    '/messages',
    {
      schema: {
        summary: 'Create a message, as JSON or as an event stream (seed 2.8, 2.9, 6.1)',
        body: MessagesRequestSchema,
        response: { 200: MessageSchema, ...errors },
      },
    },
    async (request, reply) => {
      const body = request.body;
      checkMessagesRequest(body);
      const pacing = body.stream === true ? streamPacing(request, config) : undefined;
      // Everything that can refuse the request has run: only now may the cache change.
      const cache = state.promptCache.account(
        `${request.owner}\n${body.model}`,
        promptBlocks(body),
      );
      const done = planMessage(body, state.replies);
      const usage = messageUsage(cache, done.tokens);
      const who = { id: ids.next('message'), model: body.model };
      if (!pacing) return buildMessage(who, done, usage);

      const fault = request.streamFault;
      let frames = messageStreamFrames(who, done, usage, pacing, fault === undefined);
      if (fault) {
        const error = {
          type: messagesErrorType(fault.status),
          message: statusMessage(fault.status),
        };
        frames = cutStream(
          frames,
          fault,
          sseEvent('error', JSON.stringify({ type: 'error', error })),
        );
      }
      await sendSse(reply, frames, { sleep });
      return reply;
    },
  );

  app.post(
    '/messages/count_tokens',
    {
      schema: {
        summary: 'Count the input tokens of a messages request (the counter usage uses)',
        body: CountTokensRequestSchema,
        response: { 200: CountTokensResponseSchema, ...errors },
      },
    },
    async (request) => {
      checkMessagesRequest(request.body);
      return { input_tokens: countPrompt(promptBlocks(request.body)) };
    },
  );
};

export default messages;
