import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { GatewayError, statusMessage } from '../platform/errors.js';
import { cutStream, streamPacing } from '../platform/group.js';
import { sendSse, sseData } from '../platform/sse.js';
import type { EmulatorState } from '../state.js';
import { CHAT_CACHE_MIN_TOKENS } from '../text/prompt-cache.js';
import { renderChatError } from './errors.js';
import { ChatCompletionRequestSchema, ChatCompletionSchema, ChatErrorSchema } from './schemas.js';
import {
  buildChatCompletion,
  chatUsage,
  checkChatPrompt,
  checkChatRequest,
  mayReach,
  planChat,
} from './service.js';
import { chatStreamFrames } from './stream.js';

const chatCompletions: FastifyPluginAsyncTypebox<{ state: EmulatorState }> = async (
  app,
  { state },
) => {
  const { clock, ids, sleep } = state.deps;
  const { config } = state;

  app.post(
    '/chat/completions',
    {
      schema: {
        summary: 'Create a chat completion (seed 4.3)',
        body: ChatCompletionRequestSchema,
        response: { 200: ChatCompletionSchema, '4xx': ChatErrorSchema, '5xx': ChatErrorSchema },
      },
    },
    async (request, reply) => {
      const body = request.body;
      checkChatRequest(body);
      checkChatPrompt(body.messages, state.contentFilter);
      const pacing = body.stream === true ? streamPacing(request, config) : undefined;
      const plan = planChat(body, state.replies, state.contentFilter);
      const who = {
        id: ids.next('chat'),
        created: Math.floor(clock.now() / 1000),
        model: body.model,
      };
      const cached = mayReach(plan.parts, CHAT_CACHE_MIN_TOKENS)
        ? state.promptCache.accountChat(`${request.owner}\n${body.model}`, plan.parts)
        : 0;
      const usage = chatUsage(plan, cached);
      if (!pacing) return buildChatCompletion(who, plan, usage);

      const fault = request.streamFault;
      let frames = chatStreamFrames(who, plan, usage, {
        includeUsage: body.stream_options?.include_usage === true,
        pacing,
        batch: fault === undefined,
      });
      if (fault) {
        const error = renderChatError(new GatewayError(fault.status, statusMessage(fault.status)));
        frames = cutStream(frames, fault, sseData(JSON.stringify(error.body)));
      }
      await sendSse(reply, frames, { sleep });
      return reply;
    },
  );
};

export default chatCompletions;
