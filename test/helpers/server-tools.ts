import type { TestApp } from './app.js';

/** A content block as the tests read it. */
export interface Block {
  type: string;
  [field: string]: unknown;
}

/** Adds a stub (a reply rule in the fixture-file shape) for the rest of the test. */
export const stub = (t: TestApp, rule: object) =>
  t.app.inject({ method: 'POST', url: '/_emulator/replies', payload: rule });

/**
 * A message with what differs between two answers to the same request set aside: its ids and
 * the time a fetch ran.
 */
export const withoutIds = (message: object) =>
  JSON.parse(
    JSON.stringify(message)
      .replace(/"(msg|srvtoolu|toolu)_[A-Za-z0-9]+"/g, '"$1_x"')
      .replace(/"retrieved_at":"[^"]*"/g, '"retrieved_at":"T"'),
  );
