import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox';
import { GatewayError } from '../../errors.js';
import type { EmulatorState } from '../../state.js';
import { setupGatewayGroup } from '../gateway-group.js';
import { messagesGroup } from './errors.js';
import messages from './v1/messages.js';

/** The only version the gateway speaks (seed 4.2, 9). */
export const MSGAPI_VERSION = '2023-06-01';

/** Group B, the messages API, mounted at `/messages-api` (seed 4.2). */
const messagesApi: FastifyPluginAsyncTypebox<{ state: EmulatorState }> = async (app, { state }) => {
  setupGatewayGroup(app, state, messagesGroup);
  app.addHook('onRequest', (request, _reply, done) => {
    const version = request.headers['msgapi-version'];
    if (version === undefined) {
      return done(new GatewayError(400, 'msgapi-version: header is required'));
    }
    if (version !== MSGAPI_VERSION) {
      return done(
        new GatewayError(400, `msgapi-version: ${JSON.stringify(version)} is not a valid version`),
      );
    }
    done();
  });
  await app.register(messages, { prefix: '/v1', state });
};

export default messagesApi;
