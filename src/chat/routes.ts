import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { matchContext } from '../harness/pipeline.js';
import { GatewayError, statusMessage } from '../platform/errors.js';
import type { Ids } from '../platform/ids.js';
import type { ContentFilter } from '../text/content-filter.js';
import { type Streaming, sendTextStream, streamPacing } from '../text/paced-stream.js';
import { CHAT_CACHE_MIN_TOKENS, type PromptCacheStore } from '../text/prompt-cache.js';
import type { Replies } from '../text/replies.js';
import { azureFrontError, renderChatError } from './errors.js';
import { errorResponses, modelsRoutes, operationId, type RoutesCopy } from './models-routes.js';
import { readChatPrompt } from './prompt.js';
import {
  type ChatCompletionRequest,
  ChatCompletionRequestSchema,
  ChatCompletionSchema,
  ChatStreamFrameSchema,
} from './schemas.js';
import {
  buildChatCompletion,
  chatUsage,
  checkAnswerSize,
  checkChatPrompt,
  planChat,
} from './service.js';
import { chatStream } from './stream.js';

export interface ChatRoutesOptions {
  replies: Replies;
  contentFilter: ContentFilter;
  promptCache: PromptCacheStore;
  ids: Ids;
  streaming: Streaming;
}

/** The `data: {"error": ...}` frame a `stream_error` fault ends a chat stream with. */
const errorData = (status: number) =>
  `data: ${JSON.stringify(renderChatError(new GatewayError(status, statusMessage(status))).body)}\n\n`;

/**
 * Azure's deployment route: the deployment names the model, so the body's `model` may be left
 * out or empty, and is not used.
 */
const AzureChatRequestSchema = Type.Object(
  {
    ...ChatCompletionRequestSchema.properties,
    model: Type.Optional(Type.String({ maxLength: 256 })),
  },
  { additionalProperties: ChatCompletionRequestSchema.additionalProperties },
);

/**
 * The refusals no schema keyword states, for the document: rules across fields or of the model,
 * and those upstream words with the value sent (its length, its name), which the schema leaves
 * to the route so that the words stay upstream's.
 */
const CHAT_RULES = [
  'Refused besides what the schema states (400, `invalid_request_error` with `param` and `code`):',
  "- tools: a function's `parameters` a valid JSON Schema (within the strict limits with `strict: true`), a custom tool's grammar, `tool_choice` and `parallel_tool_calls` only with tools, `tool_choice` naming a tool of the request;",
  '- messages: a `tool` message answers the `tool_calls` just before it, every `tool_call_id` answered, content where the role needs it, images and files where the model takes them (Base64 audio and PDFs readable), the word json with `response_format` `json_object`, a valid `response_format` schema;',
  '- parameters: `stream_options` only with `stream`, not both `max_tokens` and `max_completion_tokens`, what the model takes (`max_tokens`, `temperature`, sampling parameters, `reasoning_effort` and its values, `logprobs`), `top_logprobs` only with `logprobs`, `logit_bias` keys token ids, `metadata` keys of at most 64 characters;',
  "- the prompt over the context window, or the completion over the model's output tokens; a prompt the content filter blocks.",
].join('\n');

/** Azure's versions' names: `2024-10-21` or `2025-04-01-preview` (the schema's pattern). */
const API_VERSION = '^(\\d{4})-(\\d{2})-(\\d{2})(-preview)?$';
const API_VERSION_PATTERN = new RegExp(API_VERSION);

/** `2024-10-21` or `2025-04-01-preview`: a date that exists, as Azure's versions are named. */
function isVersionDate(version: string): boolean {
  const match = API_VERSION_PATTERN.exec(version);
  if (!match) return false;
  const [year, month, day] = [Number(match[1]), Number(match[2]), Number(match[3])];
  const date = new Date(Date.UTC(year, month - 1, day));
  return date.getUTCMonth() === month - 1 && date.getUTCDate() === day;
}

/**
 * What Azure's front answers before the API sees a deployment request: 404 `Resource not found`
 * without an `api-version`, 400 `API version not supported` for one that is no version (a date,
 * `-preview` or not), in its own `{"error":{"code","message"}}`.
 * @see https://github.com/MicrosoftDocs/azure-docs/issues/114602
 * @see https://github.com/hotovo/aider-desk/issues/460
 */
function apiVersionProblem(query: unknown): GatewayError | undefined {
  const version = (query as Record<string, unknown> | undefined)?.['api-version'];
  if (version === undefined || version === '') {
    return azureFrontError(404, '404', 'Resource not found');
  }
  if (typeof version !== 'string' || !isVersionDate(version)) {
    return azureFrontError(400, 'BadRequest', 'API version not supported');
  }
  return undefined;
}

/**
 * `POST /v1/chat/completions`, and Azure's
 * `POST /openai/deployments/{deployment}/chat/completions?api-version=…` (README "Using it").
 * @see https://platform.openai.com/docs/api-reference/chat/create
 * @see https://learn.microsoft.com/en-us/azure/ai-foundry/openai/reference#chat-completions
 */
export function chatRoutes(options: ChatRoutesOptions): {
  openai: FastifyPluginAsyncTypebox<RoutesCopy>;
  azure: FastifyPluginAsyncTypebox;
} {
  const { replies, contentFilter, promptCache, ids, streaming } = options;
  const response = (copy: RoutesCopy) => ({
    200: {
      description: 'The completion; with `stream: true`, its chunks (text/event-stream)',
      content: {
        'application/json': { schema: ChatCompletionSchema },
        'text/event-stream': { schema: ChatStreamFrameSchema },
      },
    },
    ...errorResponses(copy),
  });

  async function complete(
    request: FastifyRequest,
    reply: FastifyReply,
    body: ChatCompletionRequest,
  ) {
    const prompt = readChatPrompt(body);
    checkChatPrompt(body.messages, contentFilter);
    const pacing = body.stream === true ? streamPacing(request, streaming.pacing) : undefined;
    const plan = await planChat(body, prompt, replies, contentFilter, ids, matchContext(request));
    if (!pacing) checkAnswerSize(body, plan); // before anything is counted or cached
    const who = {
      id: ids.next('chat'),
      created: Math.floor(request.receivedAt / 1000),
      model: body.model,
    };
    // A prompt under the minimum has no prefix to cache (its tokens bound every prefix's).
    const cached =
      prompt.promptTokens >= CHAT_CACHE_MIN_TOKENS
        ? await promptCache.accountChat(
            `${request.owner}\n${body.model}`,
            prompt.parts,
            request.receivedAt,
            request.session,
          )
        : 0;
    const usage = chatUsage(plan, cached);
    request.usageTokens = {
      input: usage.prompt_tokens,
      cacheRead: cached,
      cacheCreation: 0,
      output: usage.completion_tokens,
    };
    if (!pacing) return buildChatCompletion(who, body, plan, usage);
    return sendTextStream({
      request,
      reply,
      streaming,
      produce: chatStream(who, body, plan, usage, pacing),
      errorFrame: errorData,
    });
  }

  const openai: FastifyPluginAsyncTypebox<RoutesCopy> = async (app, copy) => {
    app.post(
      '/chat/completions',
      {
        schema: {
          summary: 'Create a chat completion, as JSON or as an event stream',
          description: CHAT_RULES,
          operationId: operationId('createChatCompletion', copy),
          body: ChatCompletionRequestSchema,
          response: response(copy),
        },
      },
      (request, reply) => complete(request, reply, request.body),
    );
  };

  return {
    openai,
    azure: async (app) => {
      // Azure's v1 API: the OpenAI client at `{endpoint}/openai/v1/`, no api-version, the
      // deployment in `model`; the answers are /v1's.
      // @see https://learn.microsoft.com/en-us/azure/ai-foundry/openai/api-version-lifecycle
      await app.register(openai, { prefix: '/v1', idPrefix: 'azureV1', azure: true });
      await app.register(modelsRoutes, { prefix: '/v1', idPrefix: 'azureV1', azure: true });
      app.post(
        '/deployments/:deployment/chat/completions',
        {
          schema: {
            summary: 'Create a chat completion on an Azure deployment (the AzureOpenAI clients)',
            description:
              `${CHAT_RULES}\n\n` +
              '`api-version` is checked before the body, by Azure\'s front: missing, a 404 `Resource not found`; not a version (the pattern) or no real date (2024-02-30), a 400 `API version not supported`, both in Azure\'s `{"error":{"code","message"}}`.',
            operationId: 'createAzureChatCompletion',
            params: Type.Object({ deployment: Type.String({ minLength: 1, maxLength: 256 }) }),
            querystring: Type.Object({
              'api-version': Type.String({
                pattern: API_VERSION,
                description:
                  "the Azure OpenAI API version, e.g. 2024-10-21 or 2025-04-01-preview (missing: Azure's 404; not a version, or a date that is none such as 2024-02-30: its 400)",
              }),
            }),
            body: AzureChatRequestSchema,
            response: response({ azure: true }),
          },
          // Before the body is read: Azure's front answers without looking at it.
          preParsing: (request, _reply, payload, done) =>
            done(apiVersionProblem(request.query) ?? null, payload),
        },
        (request, reply) =>
          complete(request, reply, { ...request.body, model: request.params.deployment }),
      );
    },
  };
}
