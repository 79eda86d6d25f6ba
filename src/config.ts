import { availableParallelism } from 'node:os';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { type Static, Type } from '@sinclair/typebox';
import { Value } from '@sinclair/typebox/value';
import { redactUrl } from './platform/secrets.js';

export const DEFAULT_FIXTURES_DIR = fileURLToPath(new URL('../fixtures', import.meta.url));
/** The dashboard's built files (`npm run build` makes them from ui/). */
export const UI_DIR = fileURLToPath(new URL('../dist/ui', import.meta.url));

const LogLevel = Type.Union(
  ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map((l) => Type.Literal(l)),
);
const Millis = Type.Integer({ minimum: 0, maximum: 86_400_000 });
const UpstreamUrl = Type.String({ pattern: '^https?://[^\\s/@]+(/[^\\s]*)?$' });

export const ConfigSchema = Type.Object({
  port: Type.Integer({ minimum: 0, maximum: 65535 }),
  host: Type.String({ minLength: 1 }),
  logLevel: LogLevel,
  logFormat: Type.Union([Type.Literal('auto'), Type.Literal('json'), Type.Literal('pretty')]),
  apiKeys: Type.Optional(Type.Array(Type.String({ minLength: 1 }), { minItems: 1 })),
  adminToken: Type.Optional(Type.String({ minLength: 1 })),
  publicBaseUrl: Type.Optional(Type.String({ pattern: '^https?://[^\\s/]+(/[^\\s]*)?$' })),
  fixturesDir: Type.String({ minLength: 1 }),
  videoQueueMs: Millis,
  videoRenderMs: Millis,
  promptCacheTtlS: Type.Integer({ minimum: 1, maximum: 86_400 }),
  promptCacheMinTokens: Type.Integer({ minimum: 1 }),
  streamTtftMs: Millis,
  streamChunkDelayMs: Millis,
  streamStallTimeoutMs: Type.Integer({ minimum: 1, maximum: 86_400_000 }),
  requestTimeoutMs: Type.Integer({ minimum: 1, maximum: 86_400_000 }),
  headersTimeoutMs: Type.Integer({ minimum: 1, maximum: 86_400_000 }),
  keepAliveTimeoutMs: Type.Integer({ minimum: 1, maximum: 86_400_000 }),
  idleTimeoutMs: Type.Integer({ minimum: 1, maximum: 86_400_000 }),
  refusedUploadMaxBytes: Type.Integer({ minimum: 0, maximum: 1_073_741_824 }),
  refusedUploadTimeoutMs: Type.Integer({ minimum: 1, maximum: 86_400_000 }),
  shutdownGraceMs: Millis,
  journalLimit: Type.Integer({ minimum: 0, maximum: 1_000_000 }),
  maxTasks: Type.Integer({ minimum: 1, maximum: 10_000_000 }),
  rateLimitRpm: Type.Optional(Type.Integer({ minimum: 1, maximum: 10_000_000 })),
  corsOrigins: Type.Optional(
    Type.Array(Type.String({ pattern: '^(\\*|https?://[^\\s/]+)$' }), { minItems: 1 }),
  ),
  callbackAllowedHosts: Type.Optional(
    Type.Array(Type.String({ pattern: '^(\\*\\.)?[A-Za-z0-9.:\\[\\]-]+$' }), { minItems: 1 }),
  ),
  upstreamMode: Type.Union([
    Type.Literal('off'),
    Type.Literal('record'),
    Type.Literal('replay'),
    Type.Literal('proxy'),
  ]),
  upstreamUrl: Type.Optional(UpstreamUrl),
  upstreamUrlVideo: Type.Optional(UpstreamUrl),
  upstreamUrlMessages: Type.Optional(UpstreamUrl),
  upstreamUrlChat: Type.Optional(UpstreamUrl),
  recordingsDir: Type.Optional(Type.String({ minLength: 1 })),
  replayStrict: Type.Boolean(),
  replayPacing: Type.Union([Type.Literal('recorded'), Type.Literal('instant')]),
  recordingMaxBytes: Type.Integer({ minimum: 1, maximum: 1_073_741_824 }),
  upstreamTimeoutMs: Type.Integer({ minimum: 1, maximum: 86_400_000 }),
  /** Shared state (docs/replicas.md): unset, everything lives in memory. */
  stateUrl: Type.Optional(Type.String({ minLength: 1 })),
  statePrefix: Type.String({ pattern: '^[\\x21-\\x7e]{1,64}$' }),
  stateTimeoutMs: Type.Integer({ minimum: 1, maximum: 60_000 }),
  /** Worker processes on one port (node:cluster); `auto` is resolved to the cores at load. */
  workers: Type.Integer({ minimum: 1, maximum: 256 }),
});

export type Config = Static<typeof ConfigSchema>;

export const DEFAULT_CONFIG: Config = {
  port: 4010,
  host: '127.0.0.1',
  logLevel: 'info',
  logFormat: 'auto',
  fixturesDir: DEFAULT_FIXTURES_DIR,
  videoQueueMs: 2000,
  videoRenderMs: 8000,
  promptCacheTtlS: 300,
  promptCacheMinTokens: 1024,
  streamTtftMs: 0,
  streamChunkDelayMs: 0,
  streamStallTimeoutMs: 30_000,
  requestTimeoutMs: 120_000,
  headersTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5000,
  idleTimeoutMs: 30_000,
  refusedUploadMaxBytes: 64 * 1024 * 1024,
  refusedUploadTimeoutMs: 10_000,
  shutdownGraceMs: 10_000,
  journalLimit: 1000,
  maxTasks: 100_000,
  upstreamMode: 'off',
  replayStrict: false,
  replayPacing: 'recorded',
  recordingMaxBytes: 16 * 1024 * 1024,
  upstreamTimeoutMs: 600_000,
  statePrefix: 'gwemu',
  stateTimeoutMs: 2000,
  workers: 1,
};

type Kind = 'int' | 'string' | 'list' | 'bool' | 'workers';

/** Every setting: its env variable, its CLI flag, and how the raw text is read. */
const SETTINGS: ReadonlyArray<{ key: keyof Config; env: string; flag: string; kind: Kind }> = [
  { key: 'port', env: 'PORT', flag: 'port', kind: 'int' },
  { key: 'host', env: 'HOST', flag: 'host', kind: 'string' },
  { key: 'logLevel', env: 'LOG_LEVEL', flag: 'log-level', kind: 'string' },
  { key: 'logFormat', env: 'LOG_FORMAT', flag: 'log-format', kind: 'string' },
  { key: 'apiKeys', env: 'GATEWAY_API_KEYS', flag: 'api-keys', kind: 'list' },
  { key: 'adminToken', env: 'EMULATOR_ADMIN_TOKEN', flag: 'admin-token', kind: 'string' },
  { key: 'publicBaseUrl', env: 'PUBLIC_BASE_URL', flag: 'public-base-url', kind: 'string' },
  { key: 'fixturesDir', env: 'FIXTURES_DIR', flag: 'fixtures', kind: 'string' },
  { key: 'videoQueueMs', env: 'VIDEO_QUEUE_MS', flag: 'video-queue-ms', kind: 'int' },
  { key: 'videoRenderMs', env: 'VIDEO_RENDER_MS', flag: 'video-render-ms', kind: 'int' },
  { key: 'promptCacheTtlS', env: 'PROMPT_CACHE_TTL_S', flag: 'prompt-cache-ttl-s', kind: 'int' },
  {
    key: 'promptCacheMinTokens',
    env: 'PROMPT_CACHE_MIN_TOKENS',
    flag: 'prompt-cache-min-tokens',
    kind: 'int',
  },
  { key: 'streamTtftMs', env: 'STREAM_TTFT_MS', flag: 'stream-ttft-ms', kind: 'int' },
  {
    key: 'streamChunkDelayMs',
    env: 'STREAM_CHUNK_DELAY_MS',
    flag: 'stream-chunk-delay-ms',
    kind: 'int',
  },
  {
    key: 'streamStallTimeoutMs',
    env: 'STREAM_STALL_TIMEOUT_MS',
    flag: 'stream-stall-timeout-ms',
    kind: 'int',
  },
  { key: 'requestTimeoutMs', env: 'REQUEST_TIMEOUT_MS', flag: 'request-timeout-ms', kind: 'int' },
  { key: 'headersTimeoutMs', env: 'HEADERS_TIMEOUT_MS', flag: 'headers-timeout-ms', kind: 'int' },
  {
    key: 'keepAliveTimeoutMs',
    env: 'KEEP_ALIVE_TIMEOUT_MS',
    flag: 'keep-alive-timeout-ms',
    kind: 'int',
  },
  { key: 'idleTimeoutMs', env: 'IDLE_TIMEOUT_MS', flag: 'idle-timeout-ms', kind: 'int' },
  {
    key: 'refusedUploadMaxBytes',
    env: 'REFUSED_UPLOAD_MAX_BYTES',
    flag: 'refused-upload-max-bytes',
    kind: 'int',
  },
  {
    key: 'refusedUploadTimeoutMs',
    env: 'REFUSED_UPLOAD_TIMEOUT_MS',
    flag: 'refused-upload-timeout-ms',
    kind: 'int',
  },
  { key: 'shutdownGraceMs', env: 'SHUTDOWN_GRACE_MS', flag: 'shutdown-grace-ms', kind: 'int' },
  { key: 'journalLimit', env: 'JOURNAL_LIMIT', flag: 'journal-limit', kind: 'int' },
  { key: 'maxTasks', env: 'MAX_TASKS', flag: 'max-tasks', kind: 'int' },
  { key: 'rateLimitRpm', env: 'RATE_LIMIT_RPM', flag: 'rate-limit-rpm', kind: 'int' },
  { key: 'corsOrigins', env: 'CORS_ORIGINS', flag: 'cors-origins', kind: 'list' },
  {
    key: 'callbackAllowedHosts',
    env: 'CALLBACK_ALLOWED_HOSTS',
    flag: 'callback-allowed-hosts',
    kind: 'list',
  },
  { key: 'upstreamMode', env: 'UPSTREAM_MODE', flag: 'upstream-mode', kind: 'string' },
  { key: 'upstreamUrl', env: 'UPSTREAM_URL', flag: 'upstream-url', kind: 'string' },
  {
    key: 'upstreamUrlVideo',
    env: 'UPSTREAM_URL_VIDEO',
    flag: 'upstream-url-video',
    kind: 'string',
  },
  {
    key: 'upstreamUrlMessages',
    env: 'UPSTREAM_URL_MESSAGES',
    flag: 'upstream-url-messages',
    kind: 'string',
  },
  { key: 'upstreamUrlChat', env: 'UPSTREAM_URL_CHAT', flag: 'upstream-url-chat', kind: 'string' },
  { key: 'recordingsDir', env: 'RECORDINGS_DIR', flag: 'recordings-dir', kind: 'string' },
  { key: 'replayStrict', env: 'REPLAY_STRICT', flag: 'replay-strict', kind: 'bool' },
  { key: 'replayPacing', env: 'REPLAY_PACING', flag: 'replay-pacing', kind: 'string' },
  {
    key: 'upstreamTimeoutMs',
    env: 'UPSTREAM_TIMEOUT_MS',
    flag: 'upstream-timeout-ms',
    kind: 'int',
  },
  {
    key: 'recordingMaxBytes',
    env: 'RECORDING_MAX_BYTES',
    flag: 'recording-max-bytes',
    kind: 'int',
  },
  { key: 'stateUrl', env: 'STATE_URL', flag: 'state-url', kind: 'string' },
  { key: 'statePrefix', env: 'STATE_PREFIX', flag: 'state-prefix', kind: 'string' },
  { key: 'stateTimeoutMs', env: 'STATE_TIMEOUT_MS', flag: 'state-timeout-ms', kind: 'int' },
  { key: 'workers', env: 'WORKERS', flag: 'workers', kind: 'workers' },
];

/**
 * What is wrong with a STATE_URL, or undefined: it must be `redis://` or `rediss://` (TLS), with
 * a host, a port from 1 to 65535 when one is given, and at most a database number as its path.
 */
export function stateUrlProblem(raw: string): string | undefined {
  const shape = 'must be redis://[user:password@]host[:port][/db] or rediss://... for TLS';
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return shape;
  }
  if (url.protocol !== 'redis:' && url.protocol !== 'rediss:') return shape;
  if (url.hostname === '') return `${shape}: the host is missing`;
  // `new URL` drops a default-looking port and refuses one past 65535; `:0` it keeps.
  if (/:\/\/[^/]*:(0+|)(\/|$)/.test(raw.replace(/\/\/[^@/]*@/, '//'))) {
    return `${shape}: the port must be 1 to 65535`;
  }
  if (url.pathname !== '' && url.pathname !== '/' && !/^\/\d{1,5}$/.test(url.pathname)) {
    return `${shape}: the path may only be a database number`;
  }
  if (url.search !== '' || url.hash !== '') return `${shape}: no query or fragment`;
  return undefined;
}

export class ConfigError extends Error {
  override name = 'ConfigError';
}

function readValue(raw: string, kind: Kind): unknown {
  if (kind === 'workers')
    return raw.trim() === 'auto' ? availableParallelism() : readValue(raw, 'int');
  if (kind === 'int') return /^-?\d+$/.test(raw.trim()) ? Number(raw.trim()) : raw;
  if (kind === 'bool') {
    const value = raw.trim().toLowerCase();
    return value === 'true' || value === '1'
      ? true
      : value === 'false' || value === '0'
        ? false
        : raw;
  }
  if (kind === 'list') {
    return raw
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean);
  }
  return raw;
}

function describe(schema: unknown): string {
  const s = schema as { type?: string; minimum?: number; maximum?: number; anyOf?: unknown[] };
  if (s.anyOf) {
    return `one of ${s.anyOf.map((b) => (b as { const: string }).const).join(', ')}`;
  }
  if (s.type === 'integer') {
    const max = s.maximum === undefined ? '' : ` and ${s.maximum}`;
    return `an integer between ${s.minimum ?? 0}${max}`;
  }
  if (s.type === 'array') return 'a comma-separated list of non-empty values';
  if (s.type === 'boolean') return 'true or false';
  if ((s as { enum?: string[] }).enum) return `one of ${(s as { enum: string[] }).enum.join(', ')}`;
  return 'a valid value (http(s) URL for PUBLIC_BASE_URL, non-empty otherwise)';
}

/** Validates a whole config object; the error names the env variable of the first bad field. */
export function resolveConfig(partial: Partial<Config> = {}): Config {
  const config: Config = { ...DEFAULT_CONFIG, ...partial };
  for (const key of Object.keys(config) as Array<keyof Config>) {
    if (config[key] === undefined) delete config[key];
  }
  const first = Value.Errors(ConfigSchema, config).First();
  if (first) {
    const key = first.path.split('/')[1] as keyof Config | undefined;
    const setting = SETTINGS.find((s) => s.key === key);
    const name = setting ? setting.env : first.path;
    const fieldSchema = key ? ConfigSchema.properties[key] : undefined;
    const got = key ? JSON.stringify(config[key]) : '';
    if (key === 'workers')
      throw new ConfigError(`WORKERS must be a whole number from 1 to 256, or auto (got ${got})`);
    throw new ConfigError(`${name} must be ${describe(fieldSchema)} (got ${got})`);
  }
  if (config.stateUrl !== undefined) {
    const problem = stateUrlProblem(config.stateUrl);
    // (what cannot be read as a URL is not echoed: a password in it would not be found)
    const got = URL.canParse(config.stateUrl) ? redactUrl(config.stateUrl) : 'no URL';
    if (problem) throw new ConfigError(`STATE_URL ${problem} (got ${got})`);
  }
  if (config.workers > 1 && config.stateUrl === undefined) {
    throw new ConfigError(
      `WORKERS=${config.workers} needs STATE_URL: the workers share their state through it`,
    );
  }
  // What the upstream modes need (docs/record-replay.md "Record and replay").
  const mode = config.upstreamMode;
  const anyUpstream =
    config.upstreamUrl ??
    config.upstreamUrlVideo ??
    config.upstreamUrlMessages ??
    config.upstreamUrlChat;
  if ((mode === 'record' || mode === 'proxy') && anyUpstream === undefined) {
    throw new ConfigError(`UPSTREAM_MODE=${mode} needs UPSTREAM_URL (or UPSTREAM_URL_<GROUP>)`);
  }
  if ((mode === 'record' || mode === 'replay') && config.recordingsDir === undefined) {
    throw new ConfigError(`UPSTREAM_MODE=${mode} needs RECORDINGS_DIR`);
  }
  return config;
}

export const USAGE = `Usage: gateway-emulator [options]

Options (each mirrors an environment variable; flags win):
${SETTINGS.map((s) => `  --${s.flag.padEnd(24)} ${s.env}`).join('\n')}
  --help                     print this help`;

export interface LoadedConfig {
  config: Config;
  help: boolean;
}

/** Builds the config from env and CLI flags (flags override env). Throws ConfigError. */
export function loadConfig(
  env: Record<string, string | undefined>,
  argv: string[] = [],
): LoadedConfig {
  let flags: Record<string, string | boolean | undefined>;
  try {
    const parsed = parseArgs({
      args: argv,
      strict: true,
      options: {
        help: { type: 'boolean' },
        ...Object.fromEntries(SETTINGS.map((s) => [s.flag, { type: 'string' as const }])),
      },
    });
    flags = parsed.values;
  } catch (err) {
    throw new ConfigError(`${(err as Error).message}\n\n${USAGE}`);
  }
  const partial: Record<string, unknown> = {};
  for (const setting of SETTINGS) {
    const flag = flags[setting.flag];
    const raw = typeof flag === 'string' ? flag : env[setting.env];
    if (raw === undefined || raw === '') continue;
    partial[setting.key] = readValue(raw, setting.kind);
  }
  return { config: resolveConfig(partial as Partial<Config>), help: flags.help === true };
}
