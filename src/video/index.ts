import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { setupGatewayGroup } from '../platform/group.js';
import type { EmulatorState } from '../state.js';
import { videoGroup } from './errors.js';
import videos from './routes.js';

/** Group A, video tasks, mounted at `/videogen` (seed 4.1). */
const videoApi: FastifyPluginAsyncTypebox<{ state: EmulatorState }> = async (app, { state }) => {
  setupGatewayGroup(app, state, videoGroup);
  await app.register(videos, { prefix: '/v1', state });
};

export default videoApi;
