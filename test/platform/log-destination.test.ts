import { Writable } from 'node:stream';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { requestLineOf } from '../../src/platform/log-destination.js';

/** A pino logger as buildApp makes one (redaction of credential headers), at a fixed time. */
function logger(level: string, lines: string[], options: pino.LoggerOptions = {}) {
  const stream = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return pino(
    {
      level,
      redact: { paths: ['req.headers["authorization"]'], censor: '[REDACTED]' },
      timestamp: () => ',"time":1767225600000',
      ...options,
    },
    stream,
  );
}

describe('the request line written directly', () => {
  it("is pino's own line, byte for byte, for any URL and time", async () => {
    const direct: string[] = [];
    const viaPino: string[] = [];
    const write = requestLineOf(logger('info', direct));
    const log = logger('info', viaPino);
    const cases: Array<[string, string, string, number, number]> = [
      ['req_1', 'POST', '/v1/chat/completions', 200, 1.2345678],
      ['req_2', 'GET', '/videogen/v1/videos/text2video/1?a="b"&c=\\d', 404, 0],
      ['req_3', 'DELETE', '/x/ünïcödé/\u0001/\t', 503, 12_345.5],
      ['req_4', 'PATCH', `/${'long/'.repeat(40)}`, 429, Number.NaN],
    ];
    for (const [reqId, method, url, statusCode, responseTime] of cases) {
      write?.(reqId, method, url, statusCode, responseTime);
      log.info({ reqId, method, url, statusCode, responseTime }, 'request completed');
    }
    await new Promise((ok) => setImmediate(ok));
    expect(write).toBeTypeOf('function');
    expect(direct).toEqual(viaPino);
    expect(direct.map((line) => JSON.parse(line))[1]).toEqual({
      level: 30,
      time: 1767225600000,
      pid: process.pid,
      hostname: expect.any(String),
      reqId: 'req_2',
      method: 'GET',
      url: '/videogen/v1/videos/text2video/1?a="b"&c=\\d',
      statusCode: 404,
      responseTime: 0,
      msg: 'request completed',
    });
  });

  it('is not used where pino would write something else', () => {
    expect(requestLineOf(logger('warn', []))).toBeUndefined();
    expect(requestLineOf(logger('info', [], { mixin: () => ({ a: 1 }) }))).toBeUndefined();
    expect(requestLineOf(logger('info', [], { messageKey: 'message' }))).toBeUndefined();
    expect(requestLineOf(logger('info', [], { msgPrefix: '[x] ' }))).toBeUndefined();
    expect(requestLineOf(logger('info', [], { nestedKey: 'payload' }))).toBeUndefined();
    expect(requestLineOf(logger('info', [], { formatters: { log: (o) => o } }))).toBeUndefined();
    expect(
      requestLineOf(logger('info', [], { hooks: { streamWrite: (line) => line } })),
    ).toBeUndefined();
    expect(requestLineOf({})).toBeUndefined();
  });
});
