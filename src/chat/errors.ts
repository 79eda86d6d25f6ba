import { bracketPath, GatewayError } from '../platform/errors.js';
import { type GroupSpec, type RenderedError, readBearerKey } from '../platform/group.js';
import type { ChatError } from './schemas.js';

/** `{error:{message,type,param,code}}`. @see https://platform.openai.com/docs/guides/error-codes */
const TYPE_BY_STATUS: Record<number, string> = {
  401: 'invalid_request_error',
  403: 'permission_error',
  404: 'invalid_request_error',
  429: 'requests',
  500: 'server_error',
  503: 'service_unavailable_error',
};

const CODE_BY_STATUS: Record<number, string> = {
  413: 'request_too_large',
  415: 'unsupported_media_type',
  429: 'rate_limit_exceeded',
  503: 'server_is_overloaded',
};

const ISSUE_CODES = {
  missing: 'missing_required_parameter',
  type: 'invalid_type',
  value: 'invalid_value',
  extra: 'invalid_value',
  empty: 'empty_array',
} as const;

export function renderChatError(error: GatewayError): RenderedError {
  const { status } = error;
  if (error.options.body) return { status, body: error.options.body };
  const issue = error.options.issue;
  const type = TYPE_BY_STATUS[status] ?? (status >= 500 ? 'server_error' : 'invalid_request_error');
  let message = error.message;
  let param: string | null = null;
  let code = error.options.code === undefined ? null : String(error.options.code);
  if (issue && issue.path.length > 0) {
    param = bracketPath(issue.path);
    code ??= issue.code ?? ISSUE_CODES[issue.kind];
    message =
      issue.message !== undefined
        ? issue.message.replaceAll('{param}', param)
        : issue.kind === 'missing'
          ? `Missing required parameter: '${param}'.`
          : issue.kind === 'empty'
            ? `Invalid '${param}': empty array. Expected an array with minimum length 1, but got an empty array instead.`
            : `Invalid ${issue.kind === 'type' ? 'type' : 'value'} for '${param}': ${issue.problem}.`;
  } else if (issue) {
    message = `The request body ${issue.problem}.`;
  }
  code ??= CODE_BY_STATUS[status] ?? null;
  const body: ChatError = { error: { message, type, param, code, ...error.options.extra } };
  return { status, body };
}

/** A request to the Azure routes (`/openai/...`), whose front answers in its own words. */
const isAzure = (request: { url: string }) => request.url.startsWith('/openai/');

const AZURE_ACCESS_DENIED =
  'Access denied due to invalid subscription key or wrong API endpoint. Make sure to provide a valid key for an active subscription and use a correct regional API endpoint for your resource.';

/**
 * What Azure's front answers before the API sees a request, in its own
 * `{"error":{"code","message"}}` (not the chat envelope).
 */
export const azureFrontError = (status: number, code: string, message: string) =>
  new GatewayError(status, message, { body: { error: { code, message } } });

/**
 * Azure's front refusing a key, missing or wrong:
 * `{"error":{"code":"401","message":"Access denied due to invalid subscription key..."}}`.
 * @see https://github.com/microsoft/semantic-kernel/issues/10337
 * @see https://github.com/SciSharp/BotSharp/issues/386
 */
const azureAccessDenied = () => azureFrontError(401, '401', AZURE_ACCESS_DENIED);

export const chatGroupSpec: GroupSpec = {
  /** `Authorization: Bearer`, or Azure's `api-key` header (the AzureOpenAI clients send it). */
  readKey(request) {
    const key = request.headers['api-key'];
    if (typeof key === 'string' && key.trim() !== '') return key.trim();
    return readBearerKey(request);
  },
  missingKey: (request) =>
    isAzure(request)
      ? azureAccessDenied()
      : new GatewayError(
          401,
          "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).",
        ),
  invalidKey: (request) =>
    isAzure(request)
      ? azureAccessDenied()
      : new GatewayError(401, 'Incorrect API key provided.', { code: 'invalid_api_key' }),
  unknownRoute: (request) =>
    new GatewayError(404, `Invalid URL (${request.method} ${request.url.split('?')[0]})`),
  render: renderChatError,
  requestIdHeader: 'x-request-id',
  streamErrorStatus: 500,
  rateLimitHeaders: true,
  retryAfterMs: true,
};
