import { describe, expect, it } from 'vitest';
import {
  credentialsOf,
  MIN_ECHOED_CREDENTIAL,
  redactCredentials,
} from '../../src/platform/secrets.js';

describe('credentialsOf', () => {
  it('takes secret headers (the scheme word set apart) and secret query values (as sent and decoded), longest first', () => {
    expect(
      credentialsOf(
        {
          authorization: 'Bearer sk-bearer-123',
          'x-api-key': ['sk-first-key', 'sk-second-key'],
          'content-type': 'application/json',
          'x-request-id': 'not-a-secret-at-all',
          'ocp-apim-subscription-key': 'short',
        },
        '/v1/chat?api-version=2024-06-01&api-key=sk%2Dquery%2Dkey&subscription-key=abc+def+ghij',
      ),
    ).toEqual([
      'Bearer sk-bearer-123',
      'sk%2Dquery%2Dkey',
      'sk-bearer-123',
      'sk-second-key',
      'sk-first-key',
      'sk-query-key',
      'abc+def+ghij',
      'abc def ghij',
      'def ghij',
    ]);
  });

  it(`leaves out values shorter than ${MIN_ECHOED_CREDENTIAL} characters, and a query value that does not decode is kept as sent`, () => {
    expect(credentialsOf({ 'x-api-key': 'k' }, '/x?token=%E0%A4%A&key=1234567')).toEqual([
      '%E0%A4%A',
    ]);
    expect(credentialsOf({}, '/x')).toEqual([]);
  });

  it('redacts every occurrence, a longer credential before one it holds', () => {
    const credentials = credentialsOf({ authorization: 'Bearer sk-abcdefgh' }, '/');
    expect(redactCredentials('a Bearer sk-abcdefgh b sk-abcdefgh c sk-abcdefg', credentials)).toBe(
      'a [REDACTED] b [REDACTED] c sk-abcdefg',
    );
  });
});
