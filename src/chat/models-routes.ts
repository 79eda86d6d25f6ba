import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { Type } from '@sinclair/typebox';
import { GatewayError } from '../platform/errors.js';
import { MODEL_TABLE } from '../text/models.js';
import { AzureGatewayErrorSchema, ChatErrorSchema } from './schemas.js';

/**
 * `GET /v1/models` and `GET /v1/models/{model}`: the chat models of the emulator's model table
 * (docs/limits.md), in OpenAI's list shape. Any other model name is still accepted by chat
 * completions (it gets the default limits); these are the ones with limits of their own.
 * `created` is a fixed date (2026-01-01), the same on every run.
 * @see https://platform.openai.com/docs/api-reference/models/list
 */

const CREATED = 1_767_225_600;

const ModelSchema = Type.Object({
  id: Type.String(),
  object: Type.Literal('model'),
  created: Type.Integer(),
  owned_by: Type.String(),
});

const ModelListSchema = Type.Object({
  object: Type.Literal('list'),
  data: Type.Array(ModelSchema),
});

const MODELS = MODEL_TABLE.chat.map(([id]) => ({
  id,
  object: 'model' as const,
  created: CREATED,
  owned_by: 'system',
}));

/** Where a copy of the routes is mounted again (Azure's v1 API): its operation ids' prefix. */
export interface RoutesCopy {
  idPrefix?: string;
  /** Behind Azure's front, which refuses a key in its own `{"error":{"code","message"}}`. */
  azure?: boolean;
}

/** The error envelopes of a copy's routes. */
export const errorResponses = (copy: RoutesCopy) => ({
  '4xx': copy.azure
    ? Type.Union([ChatErrorSchema, AzureGatewayErrorSchema], { title: 'AzureChatError' })
    : ChatErrorSchema,
  '5xx': ChatErrorSchema,
});

/** `listModels`, or `azureV1ListModels` for a copy. */
export const operationId = (name: string, copy: RoutesCopy) =>
  copy.idPrefix ? `${copy.idPrefix}${name.charAt(0).toUpperCase()}${name.slice(1)}` : name;

export const modelsRoutes: FastifyPluginAsyncTypebox<RoutesCopy> = async (app, copy) => {
  app.get(
    '/models',
    {
      schema: {
        summary: 'List the chat models',
        operationId: operationId('listModels', copy),
        response: { 200: ModelListSchema, ...errorResponses(copy) },
      },
    },
    async () => ({ object: 'list' as const, data: MODELS }),
  );

  app.get(
    '/models/:model',
    {
      schema: {
        summary: 'Retrieve a chat model',
        operationId: operationId('retrieveModel', copy),
        params: Type.Object({ model: Type.String({ maxLength: 256 }) }),
        response: { 200: ModelSchema, ...errorResponses(copy) },
      },
    },
    async (request) => {
      const found = MODELS.find((m) => m.id === request.params.model);
      if (!found) {
        throw new GatewayError(404, `The model '${request.params.model}' does not exist`, {
          code: 'model_not_found',
        });
      }
      return found;
    },
  );
};
