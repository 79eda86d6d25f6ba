import type { GroupDescriptor } from '../platform/group.js';
import { chatGroupSpec } from './errors.js';
import { modelsRoutes } from './models-routes.js';
import { type ChatRoutesOptions, chatRoutes } from './routes.js';

/**
 * Group C, chat completions, mounted at `/v1`.
 * @see https://platform.openai.com/docs/api-reference/chat
 */
export function chatGroup(options: ChatRoutesOptions): GroupDescriptor {
  return {
    name: 'chat',
    prefix: '/v1',
    spec: chatGroupSpec,
    routes: async (app) => {
      await app.register(chatRoutes(options));
      await app.register(modelsRoutes);
    },
    stores: [],
  };
}
