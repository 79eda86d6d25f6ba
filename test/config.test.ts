import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { ConfigError, DEFAULT_CONFIG, loadConfig, resolveConfig } from '../src/config.js';

describe('loadConfig', () => {
  it('uses the documented defaults', () => {
    expect(loadConfig({})).toEqual({ config: DEFAULT_CONFIG, help: false });
    expect(DEFAULT_CONFIG).toEqual({
      port: 4010,
      host: '127.0.0.1',
      logLevel: 'info',
      logFormat: 'auto',
      fixturesDir: expect.stringMatching(/fixtures$/),
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
      refusedUploadMaxBytes: 67_108_864,
      refusedUploadTimeoutMs: 10_000,
      shutdownGraceMs: 10_000,
      journalLimit: 1000,
      maxTasks: 100_000,
      upstreamMode: 'off',
      replayStrict: false,
      replayPacing: 'recorded',
      recordingMaxBytes: 16_777_216,
      upstreamTimeoutMs: 600_000,
      statePrefix: 'gwemu',
      stateTimeoutMs: 2000,
      workers: 1,
    });
  });

  it('reads every variable of the contract', () => {
    const { config } = loadConfig({
      PORT: '8080',
      HOST: '0.0.0.0',
      LOG_LEVEL: 'debug',
      GATEWAY_API_KEYS: 'k1, k2,,',
      EMULATOR_ADMIN_TOKEN: 'adm',
      PUBLIC_BASE_URL: 'https://emu.example.com/base',
      FIXTURES_DIR: '/data/fixtures',
      VIDEO_QUEUE_MS: '10',
      VIDEO_RENDER_MS: '20',
      PROMPT_CACHE_TTL_S: '60',
      PROMPT_CACHE_MIN_TOKENS: '128',
      STREAM_TTFT_MS: '300',
      STREAM_CHUNK_DELAY_MS: '15',
      STREAM_STALL_TIMEOUT_MS: '5000',
      REQUEST_TIMEOUT_MS: '60000',
      HEADERS_TIMEOUT_MS: '10000',
      KEEP_ALIVE_TIMEOUT_MS: '65000',
      IDLE_TIMEOUT_MS: '20000',
      REFUSED_UPLOAD_MAX_BYTES: '1024',
      REFUSED_UPLOAD_TIMEOUT_MS: '500',
      SHUTDOWN_GRACE_MS: '3000',
      CALLBACK_ALLOWED_HOSTS: 'hooks.example, *.ci.example:8443',
      CORS_ORIGINS: 'https://app.example,http://localhost:5173',
      LOG_FORMAT: 'json',
      JOURNAL_LIMIT: '50',
      MAX_TASKS: '500',
      UPSTREAM_MODE: 'proxy',
      UPSTREAM_URL: 'https://gateway.example/base',
      UPSTREAM_URL_VIDEO: 'https://video.example',
      UPSTREAM_URL_MESSAGES: 'http://127.0.0.1:9000',
      UPSTREAM_URL_CHAT: 'https://chat.example',
      RECORDINGS_DIR: '/data/recordings',
      REPLAY_STRICT: 'true',
      REPLAY_PACING: 'instant',
      RECORDING_MAX_BYTES: '1000',
      UPSTREAM_TIMEOUT_MS: '2000',
      STATE_URL: 'rediss://emu:p%40ss@redis.example:6380/2',
      STATE_PREFIX: 'ci-run-7',
      STATE_TIMEOUT_MS: '750',
      WORKERS: '3',
    });
    expect(config).toEqual({
      port: 8080,
      host: '0.0.0.0',
      logLevel: 'debug',
      apiKeys: ['k1', 'k2'],
      adminToken: 'adm',
      publicBaseUrl: 'https://emu.example.com/base',
      fixturesDir: '/data/fixtures',
      videoQueueMs: 10,
      videoRenderMs: 20,
      promptCacheTtlS: 60,
      promptCacheMinTokens: 128,
      streamTtftMs: 300,
      streamChunkDelayMs: 15,
      streamStallTimeoutMs: 5000,
      requestTimeoutMs: 60_000,
      headersTimeoutMs: 10_000,
      keepAliveTimeoutMs: 65_000,
      idleTimeoutMs: 20_000,
      refusedUploadMaxBytes: 1024,
      refusedUploadTimeoutMs: 500,
      shutdownGraceMs: 3000,
      callbackAllowedHosts: ['hooks.example', '*.ci.example:8443'],
      corsOrigins: ['https://app.example', 'http://localhost:5173'],
      logFormat: 'json',
      journalLimit: 50,
      maxTasks: 500,
      upstreamMode: 'proxy',
      upstreamUrl: 'https://gateway.example/base',
      upstreamUrlVideo: 'https://video.example',
      upstreamUrlMessages: 'http://127.0.0.1:9000',
      upstreamUrlChat: 'https://chat.example',
      recordingsDir: '/data/recordings',
      replayStrict: true,
      replayPacing: 'instant',
      recordingMaxBytes: 1000,
      upstreamTimeoutMs: 2000,
      stateUrl: 'rediss://emu:p%40ss@redis.example:6380/2',
      statePrefix: 'ci-run-7',
      stateTimeoutMs: 750,
      workers: 3,
    });
  });

  it('refuses a STATE_URL that is not redis:// or rediss:// with a valid port, never echoing its password', () => {
    const refused = (url: string) => () => loadConfig({ STATE_URL: url });
    expect(refused('http://h:6379')).toThrow(
      'STATE_URL must be redis://[user:password@]host[:port][/db] or rediss://... for TLS (got http://h:6379)',
    );
    expect(refused('redis://u:hunter2@h:0')).toThrow(
      'STATE_URL must be redis://[user:password@]host[:port][/db] or rediss://... for TLS: the port must be 1 to 65535 (got redis://u:[REDACTED]@h:0)',
    );
    expect(refused('redis://u:hunter2@h:70000')).toThrow(/STATE_URL must be .*\(got no URL\)$/);
    expect(refused('redis://h/abc')).toThrow(/the path may only be a database number/);
    for (const url of ['redis://u:hunter2@h:0', 'redis//u:hunter2@h', 'redis://u:hunter2@h:x']) {
      try {
        loadConfig({ STATE_URL: url });
        expect.unreachable(url);
      } catch (err) {
        expect((err as Error).message).not.toContain('hunter2');
      }
    }
    expect(loadConfig({ STATE_URL: 'redis://localhost' }).config.stateUrl).toBe(
      'redis://localhost',
    );
  });

  it('takes WORKERS as a whole number or auto, and more than one only with STATE_URL', () => {
    const url = { STATE_URL: 'redis://127.0.0.1:6379' };
    expect(loadConfig({ ...url, WORKERS: '4' }).config.workers).toBe(4);
    expect(loadConfig({ ...url, WORKERS: 'auto' }).config.workers).toBeGreaterThanOrEqual(1);
    expect(loadConfig({ WORKERS: '1' }).config.workers).toBe(1);
    expect(() => loadConfig({ WORKERS: '0' })).toThrow(
      'WORKERS must be a whole number from 1 to 256, or auto (got 0)',
    );
    expect(() => loadConfig({ WORKERS: 'many' })).toThrow(
      'WORKERS must be a whole number from 1 to 256, or auto (got "many")',
    );
    expect(() => loadConfig({ WORKERS: '2' })).toThrow(
      'WORKERS=2 needs STATE_URL: the workers share their state through it',
    );
  });

  it('refuses upstream modes without what they need, naming the variable', () => {
    expect(() => loadConfig({ UPSTREAM_MODE: 'record', RECORDINGS_DIR: '/r' })).toThrow(
      'UPSTREAM_MODE=record needs UPSTREAM_URL (or UPSTREAM_URL_<GROUP>)',
    );
    expect(() => loadConfig({ UPSTREAM_MODE: 'replay' })).toThrow(
      'UPSTREAM_MODE=replay needs RECORDINGS_DIR',
    );
    expect(() => loadConfig({ UPSTREAM_MODE: 'rewind' })).toThrow(
      'UPSTREAM_MODE must be one of off, record, replay, proxy (got "rewind")',
    );
    expect(() => loadConfig({ REPLAY_STRICT: 'maybe' })).toThrow(
      'REPLAY_STRICT must be true or false (got "maybe")',
    );
    expect(() => loadConfig({ UPSTREAM_URL: 'https://user:pw@gateway.example' })).toThrow(
      'UPSTREAM_URL must be',
    );
  });

  it('lets CLI flags override env', () => {
    const { config } = loadConfig({ PORT: '1', LOG_LEVEL: 'warn' }, [
      '--port',
      '4020',
      '--fixtures',
      './fx',
      '--api-keys=a,b',
    ]);
    expect(config).toMatchObject({ port: 4020, logLevel: 'warn', fixturesDir: './fx' });
    expect(config.apiKeys).toEqual(['a', 'b']);
    expect(loadConfig({}, ['--help']).help).toBe(true);
  });

  it.each([
    [{ PORT: 'abc' }, 'PORT must be an integer between 0 and 65535 (got "abc")'],
    [{ PORT: '70000' }, 'PORT must be an integer between 0 and 65535 (got 70000)'],
    [{ PORT: '1.5' }, 'PORT must be an integer between 0 and 65535 (got "1.5")'],
    [
      { LOG_LEVEL: 'loud' },
      'LOG_LEVEL must be one of fatal, error, warn, info, debug, trace, silent (got "loud")',
    ],
    [
      { GATEWAY_API_KEYS: ' , ' },
      'GATEWAY_API_KEYS must be a comma-separated list of non-empty values (got [])',
    ],
    [
      { PUBLIC_BASE_URL: 'ftp://x' },
      'PUBLIC_BASE_URL must be a valid value (http(s) URL for PUBLIC_BASE_URL, non-empty otherwise) (got "ftp://x")',
    ],
    [{ VIDEO_QUEUE_MS: '-5' }, 'VIDEO_QUEUE_MS must be an integer between 0 and 86400000 (got -5)'],
    [{ MAX_TASKS: '0' }, 'MAX_TASKS must be an integer between 1 and 10000000 (got 0)'],
    [
      { PROMPT_CACHE_TTL_S: 'five' },
      'PROMPT_CACHE_TTL_S must be an integer between 1 and 86400 (got "five")',
    ],
  ])('refuses %j naming the variable', (env, message) => {
    expect(() => loadConfig(env)).toThrow(new ConfigError(message));
  });

  it('refuses unknown flags with the usage text', () => {
    expect(() => loadConfig({}, ['--prot', '1'])).toThrow(/Unknown option '--prot'[\s\S]*Usage/);
  });

  it('validates programmatic overrides the same way', () => {
    expect(() => resolveConfig({ journalLimit: -1 })).toThrow(/^JOURNAL_LIMIT must be/);
  });
});

describe('the server process', () => {
  it('stops at start-up with a message naming the bad variable', async () => {
    const run = promisify(execFile);
    const failure = await run('npx', ['tsx', 'src/server.ts'], {
      env: { ...process.env, PORT: 'nope' },
    }).catch((err: { code: number; stderr: string }) => err);
    expect(failure).toMatchObject({
      code: 2,
      stderr: expect.stringContaining(
        'invalid configuration: PORT must be an integer between 0 and 65535 (got "nope")',
      ),
    });
  });

  it('stops at start-up with a message when RECORDINGS_DIR holds no recordings (not a crash)', async () => {
    const run = promisify(execFile);
    const failure = await run('npx', ['tsx', 'src/server.ts'], {
      env: { ...process.env, PORT: '0', RECORDINGS_DIR: 'package.json', UPSTREAM_MODE: 'replay' },
    }).catch((err: { code: number; stderr: string }) => err);
    expect(failure).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/^gateway-emulator: invalid RECORDINGS_DIR: .*not a directory/),
    });
  });
});
