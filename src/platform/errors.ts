/**
 * The wire-error catalogue shared by the three API groups. A route throws a GatewayError (or
 * Fastify throws one of its own); each group's error handler renders it in its own envelope.
 */

export type PathSegment = string | number;

/** A problem with one request field; each group phrases it in its own words. */
export interface FieldIssue {
  path: PathSegment[];
  kind: 'missing' | 'type' | 'value';
  /** Lower-case phrase completing "<field> ...", e.g. "must be one of 'std', 'pro'". */
  problem: string;
}

export interface GatewayErrorOptions {
  issue?: FieldIssue;
  /** Upstream error code when it is not the group's default for the status. */
  code?: string | number;
  retryAfterS?: number;
  /** Extra fields a group adds to its error object (e.g. Azure's `innererror`). */
  extra?: Record<string, unknown>;
}

/** What a failure of each status says when it was injected or rate limited. */
export function statusMessage(status: number): string {
  switch (status) {
    case 429:
      return 'Rate limit reached for requests. Please retry after a short wait.';
    case 500:
      return 'The server had an error while processing your request.';
    case 502:
      return 'Bad gateway.';
    case 503:
      return 'The service is temporarily unavailable. Please try again later.';
    case 504:
      return 'The request timed out.';
    case 529:
      return 'Overloaded';
    default:
      return `The request failed with status ${status}.`;
  }
}

/** Statuses whose responses tell the client when to retry. */
export const RETRY_AFTER_STATUSES = new Set([429, 503, 529]);

export class GatewayError extends Error {
  override name = 'GatewayError';
  constructor(
    readonly status: number,
    message: string,
    readonly options: GatewayErrorOptions = {},
  ) {
    super(message);
  }
}

export function fieldError(
  path: PathSegment[],
  problem: string,
  kind: FieldIssue['kind'] = 'value',
): GatewayError {
  return new GatewayError(400, problem, { issue: { path, kind, problem } });
}

export const notFound = (message: string) => new GatewayError(404, message);

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: Record<string, unknown>;
}

interface FastifyLikeError {
  statusCode?: number;
  code?: string;
  message?: string;
  validation?: AjvError[];
}

function pathOf(instancePath: string): PathSegment[] {
  if (!instancePath) return [];
  return instancePath
    .slice(1)
    .split('/')
    .map((p) => p.replace(/~1/g, '/').replace(/~0/g, '~'))
    .map((p) => (/^\d+$/.test(p) ? Number(p) : p));
}

const article = (type: string) => (/^[aeiou]/.test(type) ? `an ${type}` : `a ${type}`);
const quoteAll = (values: unknown[]) => values.map((v) => JSON.stringify(v)).join(', ');

const branchesOf = (schema: Record<string, unknown> | undefined) =>
  (schema?.anyOf ?? schema?.oneOf ?? []) as Array<Record<string, unknown>>;

const allConst = (schema: Record<string, unknown> | undefined) => {
  const branches = branchesOf(schema);
  return branches.length > 0 && branches.every((b) => 'const' in b);
};

function unionIssue(path: PathSegment[], schema: Record<string, unknown> | undefined): FieldIssue {
  const branches = branchesOf(schema);
  if (allConst(schema)) {
    return {
      path,
      kind: 'value',
      problem: `must be one of ${quoteAll(branches.map((b) => b.const))}`,
    };
  }
  const what = typeof schema?.description === 'string' ? schema.description : 'of another type';
  return { path, kind: 'type', problem: `must be ${what}` };
}

/**
 * The one issue to report. Ajv stops at the first failure, except inside unions (anyOf), where
 * it reports every branch and then the union. The deepest path is where the value went wrong;
 * there a union of constants is an enum, and a branch error that is not about the type means
 * the value had that branch's shape and failed inside it.
 */
function issueFromAjv(errors: AjvError[]): FieldIssue {
  const depth = (e: AjvError) => e.instancePath.length + (e.keyword === 'required' ? 1 : 0);
  const deepest = errors.reduce((a, b) => (depth(b) > depth(a) ? b : a));
  const here = errors.filter((e) => e.instancePath === deepest.instancePath);
  const union = here.find((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  if (union) {
    const telling = here.find((e) => e !== union && e.keyword !== 'type' && e.keyword !== 'const');
    if (allConst(union.parentSchema) || !telling) {
      return unionIssue(pathOf(union.instancePath), union.parentSchema);
    }
    return issueOf(telling);
  }
  return issueOf(deepest);
}

function issueOf(err: AjvError): FieldIssue {
  const path = pathOf(err.instancePath);
  const p = err.params;
  switch (err.keyword) {
    case 'required':
      return {
        path: [...path, String(p.missingProperty)],
        kind: 'missing',
        problem: 'is required',
      };
    case 'type':
      return {
        path,
        kind: 'type',
        problem:
          path.length === 0
            ? 'must be a JSON object'
            : `must be ${article(String(p.type).replace(',', ' or '))}`,
      };
    case 'const':
      return { path, kind: 'value', problem: `must be ${JSON.stringify(p.allowedValue)}` };
    case 'enum':
      return {
        path,
        kind: 'value',
        problem: `must be one of ${quoteAll(p.allowedValues as unknown[])}`,
      };
    case 'minimum':
      return { path, kind: 'value', problem: `must be greater than or equal to ${p.limit}` };
    case 'maximum':
      return { path, kind: 'value', problem: `must be less than or equal to ${p.limit}` };
    case 'exclusiveMinimum':
      return { path, kind: 'value', problem: `must be greater than ${p.limit}` };
    case 'exclusiveMaximum':
      return { path, kind: 'value', problem: `must be less than ${p.limit}` };
    case 'minLength':
      return Number(p.limit) === 1
        ? { path, kind: 'value', problem: 'must not be empty' }
        : { path, kind: 'value', problem: `must have at least ${p.limit} characters` };
    case 'maxLength':
      return { path, kind: 'value', problem: `must have at most ${p.limit} characters` };
    case 'minItems':
      return { path, kind: 'value', problem: `must have at least ${p.limit} item(s)` };
    case 'maxItems':
      return { path, kind: 'value', problem: `must have at most ${p.limit} item(s)` };
    case 'minProperties':
      return { path, kind: 'value', problem: `must have at least ${p.limit} entries` };
    case 'maxProperties':
      return { path, kind: 'value', problem: `must have at most ${p.limit} entries` };
    case 'additionalProperties':
      return {
        path: [...path, String(p.additionalProperty)],
        kind: 'value',
        problem: 'is not a permitted field',
      };
    case 'pattern':
      return { path, kind: 'value', problem: 'has an invalid format' };
    default:
      return { path, kind: 'value', problem: err.message ?? 'is invalid' };
  }
}

/** Turns anything a route or Fastify threw into a GatewayError with a 4xx where the input is at fault. */
export function normalizeError(err: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  const e = (err ?? {}) as FastifyLikeError;
  if (Array.isArray(e.validation) && e.validation.length > 0) {
    const issue = issueFromAjv(e.validation);
    return new GatewayError(400, issue.problem, { issue });
  }
  switch (e.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return new GatewayError(413, 'Request body is too large.');
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return new GatewayError(415, 'Content-Type must be application/json.');
    case 'FST_ERR_CTP_INVALID_CONTENT_LENGTH':
      return new GatewayError(400, 'Content-Length does not match the request body.');
  }
  const status = e.statusCode;
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new GatewayError(status, e.message ?? 'Bad request.');
  }
  return new GatewayError(500, 'The server had an error while processing your request.');
}

/** `messages[0].content`-style path, as the chat API names parameters. */
export const bracketPath = (path: PathSegment[]) =>
  path.reduce<string>(
    (acc, seg) => (typeof seg === 'number' ? `${acc}[${seg}]` : acc ? `${acc}.${seg}` : seg),
    '',
  );

/** `messages.0.content`-style path, as the messages API names fields. */
export const dottedPath = (path: PathSegment[]) => path.join('.');
