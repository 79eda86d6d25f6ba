import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { setupGatewayGroup } from '../platform/group.js';
import type { EmulatorState } from '../state.js';
import { messagesGroup } from './errors.js';
import messages from './routes.js';

/** Group B, the messages API, mounted at `/messages-api` (seed 4.2). */
const messagesApi: FastifyPluginAsyncTypebox<{ state: EmulatorState }> = async (app, { state }) => {
  setupGatewayGroup(app, state, messagesGroup);
  await app.register(messages, { prefix: '/v1', state });
};

export default messagesApi;
