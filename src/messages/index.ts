import type { GroupDescriptor } from '../platform/group.js';
import { bodyString } from '../platform/request.js';
import { messagesGroupSpec } from './errors.js';
import { betasOf, messagesPromptFacts } from './prompt/index.js';
import { type MessagesRoutesOptions, messagesRoutes } from './routes.js';
import type { MessagesRequest } from './schemas.js';

/**
 * Group B, the messages API, mounted at `/messages-api`.
 * @see https://platform.claude.com/docs/en/api/messages
 */
export function messagesGroup(options: MessagesRoutesOptions): GroupDescriptor {
  return {
    name: 'messages',
    prefix: '/messages-api',
    spec: messagesGroupSpec,
    routes: messagesRoutes(options),
    stores: [],
    facts: {
      model: (request) => bodyString(request.body, 'model'),
      prompt: (body) => messagesPromptFacts(body as MessagesRequest),
      betas: betasOf,
    },
  };
}
