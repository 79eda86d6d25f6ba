import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import type { EmulatorState } from '../../state.js';
import { setupGatewayGroup } from '../gateway-group.js';
import { videoGroup } from './errors.js';
import videos from './v1/videos.js';

/** Group A, video tasks, mounted at `/videogen` (seed 4.1). */
const videoApi: FastifyPluginAsyncTypebox<{ state: EmulatorState }> = async (app, { state }) => {
  setupGatewayGroup(app, state, videoGroup);
  await app.register(videos, { prefix: '/v1', state });
};

export default videoApi;
