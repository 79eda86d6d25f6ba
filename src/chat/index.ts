import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { setupGatewayGroup } from '../platform/group.js';
import type { EmulatorState } from '../state.js';
import { chatGroup } from './errors.js';
import chatCompletions from './routes.js';

/** Group C, chat completions, mounted at `/v1` (seed 4.3). */
const chatApi: FastifyPluginAsyncTypebox<{ state: EmulatorState }> = async (app, { state }) => {
  setupGatewayGroup(app, state, chatGroup);
  await app.register(chatCompletions, { state });
};

export default chatApi;
