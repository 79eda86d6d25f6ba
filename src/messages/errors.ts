import { dottedPath, GatewayError } from '../platform/errors.js';
import { type GroupSpec, type RenderedError, readBearerKey } from '../platform/group.js';
import type { MessagesError } from './error-schemas.js';

/** @see https://platform.claude.com/docs/en/api/errors */
const TYPE_BY_STATUS: Record<number, string> = {
  400: 'invalid_request_error',
  401: 'authentication_error',
  402: 'billing_error',
  403: 'permission_error',
  404: 'not_found_error',
  409: 'conflict_error',
  413: 'request_too_large',
  429: 'rate_limit_error',
  500: 'api_error',
  504: 'timeout_error',
  529: 'overloaded_error',
};

export const messagesErrorType = (status: number) =>
  TYPE_BY_STATUS[status] ?? (status >= 500 ? 'api_error' : 'invalid_request_error');

export function renderMessagesError(error: GatewayError, request: { id: string }): RenderedError {
  const issue = error.options.issue;
  let message = error.message;
  if (issue && issue.path.length > 0) {
    const field = dottedPath(issue.path);
    // Upstream's validator's words for a field missing or not allowed.
    message =
      issue.kind === 'missing'
        ? `${field}: Field required`
        : issue.kind === 'extra'
          ? `${field}: Extra inputs are not permitted`
          : `${field}: ${issue.problem}`;
  } else if (issue) {
    message = `Request body ${issue.problem}.`;
  }
  const body: MessagesError = {
    type: 'error',
    error: { type: messagesErrorType(error.status), message, ...error.options.extra },
    request_id: request.id,
  };
  return { status: error.status, body };
}

/** The only version the gateway speaks. @see https://platform.claude.com/docs/en/api/versioning */
export const MSGAPI_VERSION = '2023-06-01';

export const messagesGroupSpec: GroupSpec = {
  /** `x-api-key`; like upstream, `Authorization: Bearer` is accepted too. */
  readKey(request) {
    const key = request.headers['x-api-key'];
    if (typeof key === 'string' && key.trim() !== '') return key.trim();
    return readBearerKey(request);
  },
  checkHeaders(request) {
    const version = request.headers['msgapi-version'];
    if (version === undefined) return new GatewayError(400, 'msgapi-version: header is required');
    if (version === MSGAPI_VERSION) return undefined;
    return new GatewayError(
      400,
      `msgapi-version: ${JSON.stringify(version)} is not a valid version`,
    );
  },

  missingKey: () => new GatewayError(401, 'x-api-key header is required'),
  invalidKey: () => new GatewayError(401, 'invalid x-api-key'),
  unknownRoute: () => new GatewayError(404, 'Not Found'),
  render: renderMessagesError,
  requestIdHeader: 'request-id',
  streamErrorStatus: 529,
};
