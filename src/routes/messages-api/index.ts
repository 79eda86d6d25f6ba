import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { EmulatorState } from '../../state.js';
import { setupGatewayGroup } from '../gateway-group.js';
import { messagesGroup } from './errors.js';
import messages from './v1/messages.js';

/** Group B, the messages API, mounted at `/messages-api` (seed 4.2). */
const messagesApi: FastifyPluginAsyncTypebox<{ state: EmulatorState }> = async (app, { state }) => {
  setupGatewayGroup(app, state, messagesGroup);
  await app.register(messages, { prefix: '/v1', state });
};

export default messagesApi;
