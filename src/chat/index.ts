import type { GroupDescriptor } from '../platform/group.js';
import { bodyString } from '../platform/request.js';
import { chatGroupSpec } from './errors.js';
import { modelsRoutes } from './models-routes.js';
import { chatPromptFacts } from './prompt.js';
import { type ChatRoutesOptions, chatRoutes } from './routes.js';
import type { ChatCompletionRequest } from './schemas.js';

/**
 * Group C, chat completions, mounted at `/v1`, and at `/openai/deployments/{deployment}` as the
 * AzureOpenAI clients call it.
 * @see https://platform.openai.com/docs/api-reference/chat
 */
export function chatGroup(options: ChatRoutesOptions): GroupDescriptor {
  const routes = chatRoutes(options);
  return {
    name: 'chat',
    prefix: '/v1',
    spec: chatGroupSpec,
    routes: async (app) => {
      await app.register(routes.openai);
      await app.register(modelsRoutes);
    },
    alsoAt: { prefix: '/openai', routes: routes.azure },
    stores: [],
    facts: {
      model: (request) =>
        (request.params as { deployment?: string }).deployment ?? bodyString(request.body, 'model'),
      prompt: (body) => chatPromptFacts(body as ChatCompletionRequest),
    },
  };
}
