import type { GroupDescriptor } from '../platform/group.js';
import { messagesGroupSpec } from './errors.js';
import { type MessagesRoutesOptions, messagesRoutes } from './routes.js';

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
  };
}
