import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';

/**
 * POSTs one callback's JSON and resolves with the answer's status once its body is read (up to
 * `MAX_ANSWER_BYTES`, then the connection is dropped: a target cannot keep a slot by talking).
 * Rejects on a network error or when `signal` aborts. Never follows a redirect (node:http does
 * not). `lookup` resolves the host for the connection (the callback guard's, against DNS
 * rebinding). Each attempt has a connection of its own, closed after it (`Connection: close`):
 * a target cannot make the emulator hold idle sockets, one per host it names, until it runs out.
 */
export type Post = (
  url: string,
  body: string,
  signal: AbortSignal,
  lookup: LookupFunction | undefined,
) => Promise<number>;

/** What a callback target's answer may say before the emulator stops reading it. */
export const MAX_ANSWER_BYTES = 64 * 1024;

/** A `Post` over node:http(s). */
export const httpPost: Post = (url, body, signal, lookup) =>
  new Promise((resolve, reject) => {
    // Settles on abort whatever the socket is doing: the caller's timer frees the slot.
    signal.addEventListener('abort', () => reject(signal.reason), { once: true });
    const secure = url.startsWith('https:');
    const req = (secure ? httpsRequest : httpRequest)(
      url,
      {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
        },
        agent: false,
        signal,
        ...(lookup ? { lookup } : {}),
      },
      (res) => {
        const status = res.statusCode ?? 0;
        let read = 0;
        res.on('data', (chunk: Buffer) => {
          read += chunk.length;
          if (read > MAX_ANSWER_BYTES) {
            res.destroy();
            resolve(status);
          }
        });
        res.on('end', () => resolve(status));
        res.on('error', reject);
        res.on('close', () => resolve(status));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
