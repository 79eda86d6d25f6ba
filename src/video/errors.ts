import { bracketPath, GatewayError } from '../platform/errors.js';
import { type GroupSpec, type RenderedError, readBearerKey } from '../platform/group.js';
import { redactUrl } from '../platform/secrets.js';
import type { VideoError } from './error-schemas.js';

/** Business code per HTTP status when the route gave none. @see https://kling.ai/document-api/apiReference/commonInfo */
const CODE_BY_STATUS: Record<number, number> = {
  400: 1200,
  401: 1000,
  403: 1103,
  404: 1203,
  413: 1200,
  415: 1200,
  429: 1302,
  500: 5000,
  503: 5001,
  504: 5002,
};

export const VIDEO_CODES = {
  authHeaderEmpty: 1001,
  authInvalid: 1002,
  invalidParameter: 1201,
  invalidMethod: 1202,
} as const;

export function renderVideoError(error: GatewayError, request: { id: string }): RenderedError {
  const issue = error.options.issue;
  let code = typeof error.options.code === 'number' ? error.options.code : undefined;
  let message = error.message;
  if (issue) {
    code ??= VIDEO_CODES.invalidParameter;
    const field = issue.path.length > 0 ? bracketPath(issue.path) : 'request body';
    message = `Invalid parameter: ${field} ${issue.problem}`;
  }
  code ??= CODE_BY_STATUS[error.status] ?? (error.status >= 500 ? 5000 : 1200);
  const body: VideoError = { code, message, request_id: request.id };
  return { status: error.status, body };
}

export const videoGroupSpec: GroupSpec = {
  readKey: readBearerKey,
  missingKey: () =>
    new GatewayError(401, 'Authorization header is empty', { code: VIDEO_CODES.authHeaderEmpty }),
  invalidKey: () =>
    new GatewayError(401, 'Authorization is invalid', { code: VIDEO_CODES.authInvalid }),
  unknownRoute: (request) =>
    new GatewayError(
      404,
      `Invalid request method or path: ${request.method} ${redactUrl(request.url)}`,
      {
        code: VIDEO_CODES.invalidMethod,
      },
    ),
  render: renderVideoError,
  streamErrorStatus: 500,
};
