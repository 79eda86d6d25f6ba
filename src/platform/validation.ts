import { createHash } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { Ajv, type Options as AjvOptions, type ValidateFunction } from 'ajv';
import type { FastifyServerOptions } from 'fastify';
import {
  type FieldIssue,
  GatewayError,
  isStoreFailure,
  type PathSegment,
  stateStoreUnavailable,
} from './errors.js';
import { REFUSAL, type RefusalNote } from './schema-helpers.js';
import { SPLIT_FROM_CHARS, splitLargeSubschemas } from './split-schema.js';

/**
 * From what Ajv and Fastify report to the catalogue's GatewayError: one field issue, phrased
 * once, that each group words in its own envelope.
 */

const AJV_BASE: AjvOptions = {
  strict: false,
  useDefaults: true,
  allErrors: false,
  verbose: true,
  discriminator: true,
  // Route schemas are this project's own (TypeBox): compiling the meta-schema to check them
  // would only slow start-up.
  validateSchema: false,
  // Each large subschema is a function of its own (see split-schema.ts).
  inlineRefs: false,
};

/**
 * An Ajv instance keeps something of every schema it compiled (the values its generated code
 * refers to), even after `removeSchema`; so each is replaced after compiling this many, and
 * lives on only in the validators it made.
 */
export const AJV_SCHEMAS_PER_INSTANCE = 256;
const ajvs = new Map<boolean, { ajv: Ajv; compiled: number }>();
function ajvFor(coerceTypes: boolean): Ajv {
  let current = ajvs.get(coerceTypes);
  if (!current || current.compiled >= AJV_SCHEMAS_PER_INSTANCE) {
    current = { ajv: new Ajv({ ...AJV_BASE, coerceTypes }), compiled: 0 };
    ajvs.set(coerceTypes, current);
  }
  current.compiled++;
  return current.ajv;
}

/**
 * Validators by schema object, for every app of the process (route schemas are module
 * constants, so each `startEmulator` in a test run, and each test, reuses them): compiling is
 * most of a route's first request. Held weakly: nothing outlives its schema but what the
 * current Ajv instance keeps (see AJV_SCHEMAS_PER_INSTANCE).
 */
let compiled = { true: new WeakMap<object, ValidateFunction>(), false: new WeakMap() };

/** What this process compiled, and what it found precompiled (for the tests). */
export const compileStats = {
  validators: { compiled: 0, precompiled: 0 },
  serializers: { compiled: 0, precompiled: 0 },
};

/**
 * Bodies are validated without type coercion (`"5"` is not `5`); query strings and params are
 * text on the wire, so there numbers are coerced.
 */
export function compileValidator(schema: object, coerceTypes: boolean): ValidateFunction {
  const cache = compiled[`${coerceTypes}`];
  let validate = cache.get(schema);
  if (!validate) {
    validate = findPrecompiled<ValidateFunction>('validators', () =>
      validatorKey(schema, coerceTypes),
    );
    if (validate) compileStats.validators.precompiled++;
    else {
      const ajv = ajvFor(coerceTypes);
      const split = splitLargeSubschemas(schema);
      validate = ajv.compile(split);
      ajv.removeSchema(split);
      compileStats.validators.compiled++;
    }
    cache.set(schema, validate);
  }
  return validate;
}

/**
 * Validators and serializers compiled ahead of time by `npm run build` (scripts/precompile.mjs):
 * Ajv's and fast-json-stringify's own standalone code, one CommonJS file per schema, named by a
 * hash of the schema and of what compiles it (library version, options, coercion). A route's
 * first request then loads a file instead of compiling (a few ms instead of 100-400 ms, which
 * also held up every other request); a schema that differs (another configuration) has no
 * file and is compiled as before.
 */
const require = createRequire(import.meta.url);
let precompiledDir: string | null | undefined;

/**
 * For the tests: where precompiled code is looked for (null: nowhere; undefined: beside the
 * build), and everything this process compiled or loaded is forgotten.
 */
export function usePrecompiled(dir: string | null | undefined): void {
  precompiledDir = dir;
  compiled = { true: new WeakMap(), false: new WeakMap() };
  serializers = new WeakMap();
  for (const stats of Object.values(compileStats))
    Object.assign(stats, { compiled: 0, precompiled: 0 });
}

function precompiledDirectory(): string | null {
  if (precompiledDir === undefined) {
    // dist/server.bundle.cjs and dist/platform/validation.js both reach dist/precompiled.
    const found = ['./precompiled', '../precompiled']
      .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
      .find((dir) => existsSync(dir));
    precompiledDir = found ?? null;
  }
  return precompiledDir;
}

/**
 * The precompiled code of a schema, when the build left a file for it that loads; anything
 * else (no build, no file, a file or a library that fails) means compiling as before.
 */
function findPrecompiled<T>(kind: 'validators' | 'serializers', key: () => string): T | undefined {
  const dir = precompiledDirectory();
  if (dir === null) return undefined;
  try {
    const file = join(dir, kind, `${key()}.cjs`);
    return existsSync(file) ? loadStandalone<T>(file) : undefined;
  } catch {
    return undefined;
  }
}

const hash = (...parts: string[]) => {
  const h = createHash('sha256');
  for (const part of parts) h.update(part).update('\n');
  return h.digest('hex').slice(0, 32);
};

const versions = new Map<string, string>();
const versionOf = (name: string) => {
  let version = versions.get(name);
  if (version === undefined) {
    version = (require(`${name}/package.json`) as { version: string }).version;
    versions.set(name, version);
  }
  return version;
};

/** The file name of a schema's precompiled validator. */
export const validatorKey = (schema: object, coerceTypes: boolean): string =>
  hash(
    versionOf('ajv'),
    JSON.stringify(AJV_BASE),
    String(SPLIT_FROM_CHARS),
    String(coerceTypes),
    JSON.stringify(schema),
  );

/** The file name of a response schema's precompiled serializer. */
export const serializerKey = (schema: object): string =>
  hash(versionOf('fast-json-stringify'), JSON.stringify(schema));

/**
 * Runs a precompiled file with this module's `require`, so that what it requires (Ajv's and
 * fast-json-stringify's runtime parts) resolves as this module's own imports do, wherever the
 * file is.
 */
function loadStandalone<T>(file: string): T | undefined {
  const module = { exports: {} as unknown };
  const run = new Function('require', 'module', 'exports', readFileSync(file, 'utf8'));
  run(require, module, module.exports);
  return typeof module.exports === 'function' ? (module.exports as T) : undefined;
}

/** A schema's validator as standalone code, for the build's precompile step. */
export function precompileValidator(
  schema: object,
  coerceTypes: boolean,
): { key: string; code: string } {
  const standalone =
    require('ajv/dist/standalone') as typeof import('ajv/dist/standalone/index.js');
  const ajv = new Ajv({ ...AJV_BASE, coerceTypes, code: { source: true } });
  const validate = ajv.compile(splitLargeSubschemas(schema));
  return { key: validatorKey(schema, coerceTypes), code: standalone.default(ajv, validate) };
}

/** Every schema Fastify asks a validator for while recording: what the build precompiles. */
let recorded: Array<{ schema: object; coerceTypes: boolean }> | undefined;
export function recordValidatorRequests(
  on = true,
): Array<{ schema: object; coerceTypes: boolean }> {
  recorded = on ? [] : undefined;
  return recorded ?? [];
}

export function validatorCompiler() {
  return ({ schema, httpPart }: { schema: object; httpPart?: string }) => {
    const coerceTypes = httpPart !== 'body';
    recorded?.push({ schema, coerceTypes });
    return lazy(() => compileValidator(schema, coerceTypes));
  };
}

type CompilersFactory = NonNullable<
  NonNullable<FastifyServerOptions['schemaController']>['compilersFactory']
>;
/**
 * `validatorCompiler` as Fastify's `schemaController.compilersFactory.buildValidator`, so that
 * Fastify does not load its own Ajv compiler at start-up. Fastify types that factory after
 * Ajv's; it calls what it returns as it calls a `setValidatorCompiler` compiler.
 */
export const validatorFactory = validatorCompiler as unknown as NonNullable<
  CompilersFactory['buildValidator']
>;

/**
 * A validator compiled on its first use, so that start-up does not compile every route's
 * schemas (most runs use a few routes). Fastify reads `errors` off the function it was given.
 */
function lazy(compile: () => ValidateFunction) {
  let validator: ValidateFunction | undefined;
  const validate = (data: unknown) => {
    validator ??= compile();
    const valid = validator(data);
    validate.errors = validator.errors;
    return valid;
  };
  validate.errors = null as ValidateFunction['errors'];
  return validate;
}

type SerializerBuilder = ReturnType<typeof SerializerSelector>;

/**
 * fast-json-stringify and its Ajv cost ~20 ms to load: they load with the first answer that
 * needs a serializer, not at start-up (a synchronous require, as Fastify's own loader does).
 */
let selector: typeof SerializerSelector | undefined;
const serializerSelector = () => {
  selector ??= (
    require('@fastify/fast-json-stringify-compiler') as {
      SerializerSelector: typeof SerializerSelector;
    }
  ).SerializerSelector;
  return selector;
};

type Serialize = (data: unknown) => string;
/** Serializers by response schema object, shared by every app of the process (as validators). */
let serializers = new WeakMap<object, Serialize>();
let sharedCompiler: ReturnType<SerializerBuilder> | undefined;

/** Every response schema Fastify asks a serializer for while recording (the build's list). */
let recordedResponses: object[] | undefined;
export function recordSerializerRequests(on = true): object[] {
  recordedResponses = on ? [] : undefined;
  return recordedResponses ?? [];
}

/** A response schema's serializer as standalone code, for the build's precompile step. */
export function precompileSerializer(schema: object): { key: string; code: string } {
  const build = require('fast-json-stringify') as (
    schema: object,
    options: { mode: 'standalone'; inlineValidators: boolean },
  ) => string;
  return {
    key: serializerKey(schema),
    code: build(schema, { mode: 'standalone', inlineValidators: true }),
  };
}

/**
 * Fastify's response serializers (fast-json-stringify), each built on its first use (or loaded
 * precompiled) and shared across apps. (No app adds shared schemas or serializer options; one
 * that did would get its own.)
 */
export const lazySerializers =
  (): SerializerBuilder =>
  (...args: Parameters<SerializerBuilder>) => {
    const [external, options] = args;
    const shareable =
      Object.keys(external ?? {}).length === 0 && Object.keys(options ?? {}).length === 0;
    let own: ReturnType<SerializerBuilder> | undefined;
    const compile = (route: Parameters<ReturnType<SerializerBuilder>>[0]): Serialize => {
      const schema = route.schema;
      if (!shareable || typeof schema !== 'object' || schema === null) {
        own ??= serializerSelector()()(...args);
        return own(route) as Serialize;
      }
      let serialize = serializers.get(schema);
      if (!serialize) {
        serialize = findPrecompiled<Serialize>('serializers', () => serializerKey(schema));
        if (serialize) compileStats.serializers.precompiled++;
        else {
          sharedCompiler ??= serializerSelector()()(...args);
          serialize = sharedCompiler(route) as Serialize;
          compileStats.serializers.compiled++;
        }
        serializers.set(schema, serialize);
      }
      return serialize;
    };
    return (route) => {
      if (shareable && typeof route.schema === 'object' && route.schema !== null) {
        recordedResponses?.push(route.schema);
      }
      let serialize: Serialize | undefined;
      return (data: unknown) => {
        serialize ??= compile(route);
        return serialize(data);
      };
    };
  };

interface AjvError {
  keyword: string;
  instancePath: string;
  params: Record<string, unknown>;
  message?: string;
  parentSchema?: Record<string, unknown>;
}

/** What the body holds at `path` (undefined where it holds nothing). */
function valueAt(body: unknown, path: readonly PathSegment[]): unknown {
  let value = body;
  for (const segment of path)
    value = (value as Record<string | number, unknown> | undefined)?.[segment];
  return value;
}

/** The refusal a schema words its own way, for this error (undefined: Ajv's is phrased). */
function ownRefusal(err: AjvError, body: unknown): FieldIssue | undefined {
  const note = err.parentSchema?.[REFUSAL] as RefusalNote | undefined;
  // A missing field by its name (`required/name`): the object's other fields are not its.
  const problem =
    err.keyword === 'required'
      ? note?.problems[`required/${String(err.params.missingProperty)}`]
      : (note?.problems[err.keyword] ??
        (err.keyword === 'type' ? undefined : note?.problems.default));
  if (note === undefined || problem === undefined) return undefined;
  const path = pathOf(err.instancePath);
  if (note.codes) {
    const value = valueAt(body, path);
    const length = typeof value === 'string' || Array.isArray(value) ? value.length : 0;
    const message = problem.replaceAll('{length}', String(length));
    return { path, kind: 'value', problem: message, message, code: note.codes[err.keyword] };
  }
  if (note.tag) {
    const at = path.length - note.tag.depth;
    const holder = valueAt(body, path.slice(0, at));
    const tag = note.tag.value ?? (holder as { type?: unknown } | undefined)?.type;
    // The refusal of one variant, for a value of another: not this refusal's to word.
    if (note.tag.of !== undefined && !new RegExp(note.tag.of).test(String(tag))) return undefined;
    path.splice(at, 0, String(tag));
  }
  // The field itself, for a refusal of the object that holds it.
  if (err.keyword === 'additionalProperties') path.push(String(err.params.additionalProperty));
  if (err.keyword === 'required') path.push(String(err.params.missingProperty));
  return { path, kind: 'value', problem };
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
 * it reports every branch and then the union. A refusal its schema words (`Refusal`) wins.
 * Else the deepest path is where the value went wrong; there a union of constants is an enum,
 * and a branch error that is not about the type means the value had that branch's shape and
 * failed inside it.
 */
function issueFromAjv(errors: AjvError[], body: unknown): FieldIssue {
  const depth = (e: AjvError) => e.instancePath.length + (e.keyword === 'required' ? 1 : 0);
  // A refusal worded by its schema names what failed in the branch the value was meant for.
  const worded = errors.filter((e) => ownRefusal(e, body) !== undefined);
  if (worded.length > 0) {
    return ownRefusal(
      worded.reduce((a, b) => (depth(b) > depth(a) ? b : a)),
      body,
    ) as FieldIssue;
  }
  const deepest = errors.reduce((a, b) => (depth(b) > depth(a) ? b : a));
  const here = errors.filter((e) => e.instancePath === deepest.instancePath);
  const union = here.find((e) => e.keyword === 'anyOf' || e.keyword === 'oneOf');
  if (union) {
    const telling = here.find((e) => e !== union && e.keyword !== 'type' && e.keyword !== 'const');
    if (allConst(union.parentSchema) || !telling) {
      return unionIssue(pathOf(union.instancePath), union.parentSchema);
    }
    return issueOf(telling, body);
  }
  return issueOf(deepest, body);
}

function issueOf(err: AjvError, body: unknown): FieldIssue {
  const own = ownRefusal(err, body);
  if (own) return own;
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
        // (a nullable enum lists null: null is not what the client was told to send)
        problem: `must be one of ${quoteAll((p.allowedValues as unknown[]).filter((v) => v !== null))}`,
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
      return {
        path,
        kind: p.limit === 1 ? 'empty' : 'value',
        problem: `must have at least ${p.limit} item(s)`,
      };
    case 'maxItems':
      return { path, kind: 'value', problem: `must have at most ${p.limit} item(s)` };
    case 'minProperties':
      return { path, kind: 'value', problem: `must have at least ${p.limit} entries` };
    case 'maxProperties':
      return { path, kind: 'value', problem: `must have at most ${p.limit} entries` };
    case 'additionalProperties':
      return {
        path: [...path, String(p.additionalProperty)],
        kind: 'extra',
        problem: 'is not a permitted field',
      };
    case 'discriminator': {
      const tag = String(p.tag);
      if (p.error === 'tag')
        return { path: [...path, tag], kind: 'missing', problem: 'is required' };
      const variants = (err.parentSchema?.oneOf ?? []) as Array<{
        properties?: Record<string, { const?: unknown }>;
      }>;
      const values = variants.map((v) => v.properties?.[tag]?.const).filter((v) => v !== undefined);
      return { path: [...path, tag], kind: 'value', problem: `must be one of ${quoteAll(values)}` };
    }
    case 'pattern':
      return { path, kind: 'value', problem: 'has an invalid format' };
    default:
      return { path, kind: 'value', problem: err.message ?? 'is invalid' };
  }
}

/**
 * Turns anything a route or Fastify threw into a GatewayError with a 4xx where the input is at
 * fault. `body`: the request's, for a refusal that names its field by a variant (RefusalNote).
 */
export function normalizeError(err: unknown, body?: unknown): GatewayError {
  if (err instanceof GatewayError) return err;
  if (isStoreFailure(err)) return stateStoreUnavailable(err.message);
  const e = (err ?? {}) as FastifyLikeError;
  if (Array.isArray(e.validation) && e.validation.length > 0) {
    const issue = issueFromAjv(e.validation, body);
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
