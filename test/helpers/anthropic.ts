import Anthropic from '@anthropic-ai/sdk';
import { type Emulator, startEmulator } from '../../src/emulator.js';

/** Runs `run` against a freshly started emulator (on a free port), closed after, whatever happens. */
export async function withEmulator(run: (emulator: Emulator) => Promise<void>): Promise<void> {
  const emulator = await startEmulator({ logLevel: 'silent' });
  try {
    await run(emulator);
  } finally {
    await emulator.close();
  }
}

/** The official SDK pointed at an emulator's messages group, with no retries. */
export const anthropicClient = (emulator: Emulator) =>
  new Anthropic({
    apiKey: 'sk-local',
    baseURL: `${emulator.url}/messages-api`,
    defaultHeaders: { 'msgapi-version': '2023-06-01' },
    maxRetries: 0,
  });

/** Runs `run` with the official SDK against a freshly started emulator. */
export const withAnthropic = (run: (client: Anthropic, emulator: Emulator) => Promise<void>) =>
  withEmulator((emulator) => run(anthropicClient(emulator), emulator));

/** Usage's cache fields when the cache was neither read nor written. */
export const ZERO_CACHE = {
  cache_creation_input_tokens: 0,
  cache_read_input_tokens: 0,
  cache_creation: { ephemeral_5m_input_tokens: 0, ephemeral_1h_input_tokens: 0 },
};

/**
 * What usage says besides its tokens when nothing else was asked: no thinking, no server tool
 * run, the default region and speed.
 */
export const USAGE_REST = {
  output_tokens_details: { thinking_tokens: 0 },
  server_tool_use: null,
  inference_geo: 'global',
  speed: 'standard',
} as const;

/** What a message says besides its blocks, stop and usage: no container, no diagnostics. */
export const MESSAGE_REST = { container: null, stop_details: null, diagnostics: null } as const;
