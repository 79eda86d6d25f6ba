import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { GatewayError, statusMessage } from '../platform/errors.js';
import type { Ids } from '../platform/ids.js';
import type { ContentFilter } from '../text/content-filter.js';
import { type Streaming, sendTextStream, streamPacing } from '../text/paced-stream.js';
import { CHAT_CACHE_MIN_TOKENS, type PromptCache } from '../text/prompt-cache.js';
import type { Replies } from '../text/replies.js';
import { renderChatError } from './errors.js';
import { mayReach, readChatPrompt } from './prompt.js';
import { ChatCompletionRequestSchema, ChatCompletionSchema, ChatErrorSchema } from './schemas.js';
import { buildChatCompletion, chatUsage, checkChatPrompt, planChat } from './service.js';
import { chatStream } from './stream.js';

export interface ChatRoutesOptions {
  replies: Replies;
  contentFilter: ContentFilter;
  promptCache: PromptCache;
  ids: Ids;
  streaming: Streaming;
}

/** The `data: {"error": ...}` frame a `stream_error` fault ends a chat stream with. */
const errorData = (status: number) =>
  `data: ${JSON.stringify(renderChatError(new GatewayError(status, statusMessage(status))).body)}\n\n`;

/**
 * `POST /v1/chat/completions`.
 * @see https://platform.openai.com/docs/api-reference/chat/create
 */
export const chatRoutes =
  (options: ChatRoutesOptions): FastifyPluginAsyncTypebox =>
  async (app) => {
    const { replies, contentFilter, promptCache, ids, streaming } = options;

    app.post(
      '/chat/completions',
      {
        schema: {
          summary: 'Create a chat completion, as JSON or as an event stream',
          body: ChatCompletionRequestSchema,
          response: { 200: ChatCompletionSchema, '4xx': ChatErrorSchema, '5xx': ChatErrorSchema },
        },
      },
      async (request, reply) => {
        const body = request.body;
        const prompt = readChatPrompt(body);
        checkChatPrompt(body.messages, contentFilter);
        const pacing = body.stream === true ? streamPacing(request, streaming.pacing) : undefined;
        const plan = await planChat(body, prompt, replies, contentFilter, ids);
        const who = {
          id: ids.next('chat'),
          created: Math.floor(request.receivedAt / 1000),
          model: body.model,
        };
        const cached = mayReach(prompt.parts, CHAT_CACHE_MIN_TOKENS)
          ? promptCache.accountChat(
              `${request.owner}\n${body.model}`,
              prompt.parts,
              request.receivedAt,
            )
          : 0;
        const usage = chatUsage(plan, cached);
        if (!pacing) return buildChatCompletion(who, body, plan, usage);
        return sendTextStream({
          request,
          reply,
          streaming,
          produce: chatStream(who, body, plan, usage, pacing),
          errorFrame: errorData,
        });
      },
    );
  };
