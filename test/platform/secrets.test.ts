import { describe, expect, it } from 'vitest';
import {
  credentialsOf,
  journalBody,
  MIN_ECHOED_CREDENTIAL,
  redactBodyUrls,
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

  it('reads the query as redactUrl does: `;` between parameters too', () => {
    expect(credentialsOf({}, '/x?a=1;token=sk-semicolon-key&b=2')).toEqual(['sk-semicolon-key']);
  });

  it('redacts every occurrence, a longer credential before one it holds', () => {
    const credentials = credentialsOf({ authorization: 'Bearer sk-abcdefgh' }, '/');
    expect(redactCredentials('a Bearer sk-abcdefgh b sk-abcdefgh c sk-abcdefg', credentials)).toBe(
      'a [REDACTED] b [REDACTED] c sk-abcdefg',
    );
  });
});

describe('redactBodyUrls', () => {
  const presigned =
    'https://bucket.s3.amazonaws.com/cat.png?X-Amz-Credential=AKIA%2F1&X-Amz-Signature=abc123&v=2';
  const hidden =
    'https://bucket.s3.amazonaws.com/cat.png?X-Amz-Credential=[REDACTED]&X-Amz-Signature=[REDACTED]&v=2';

  it('keeps the text as sent when no URL in it holds a credential', () => {
    const raw = '{ "a": "https://example.com/x?v=1", "b": [1, "data:image/png;base64,AAAA"] }';
    expect(redactBodyUrls(raw, JSON.parse(raw))).toBe(raw);
  });

  it('finds a URL whose `://` only escapes spell, in a value or a key', () => {
    const raw = '{"u": "http\\u003a//u:pw@h.example/x", "http:\\/\\/k:pw@h.example/": 1}';
    expect(JSON.parse(redactBodyUrls(raw, JSON.parse(raw)))).toEqual({
      u: 'http://u:[REDACTED]@h.example/x',
      'http://k:[REDACTED]@h.example/': 1,
    });
  });

  it('redacts every http(s) URL in the parsed body, however deep and however escaped, and writes it again', () => {
    const raw = JSON.stringify({
      messages: [
        {
          role: 'user',
          content: [{ type: 'image_url', image_url: { url: presigned } }],
        },
      ],
      callback_url: 'http://u:pw@hooks.example/cb',
    }).replace('https://', 'https:\\/\\/');
    const body = JSON.parse(raw);
    expect(JSON.parse(redactBodyUrls(raw, body))).toEqual({
      messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: hidden } }] }],
      callback_url: 'http://u:[REDACTED]@hooks.example/cb',
    });
    // the parsed body itself is left as it was (the request still uses it)
    expect(body.messages[0].content[0].image_url.url).toBe(presigned);
  });

  it('searches the text of a body that did not parse', () => {
    const raw = `{"image":"${presigned}", "callback_url":"http://u:pw@h/cb?token=t",`;
    expect(redactBodyUrls(raw, undefined)).toBe(
      `{"image":"${hidden}", "callback_url":"http://u:[REDACTED]@h/cb?token=[REDACTED]",`,
    );
  });
});

describe('redactBodyUrls, wherever a URL stands', () => {
  const secret = 'SECRETVAL9';
  const cases: Array<[string, unknown]> = [
    ['an upper-case scheme', { image: `HTTPS://h.test/a.png?token=${secret}` }],
    ['a user name alone', { image: `https://${secret}@github.com/x.png` }],
    ['white space before it', { image: ` https://h.test/a.png?sig=${secret}` }],
    ['text around it', { text: `fetch https://h.test/a.png?api_key=${secret} now` }],
    ['an object key', { metadata: { [`https://h.test/?token=${secret}`]: 1 } }],
    ['`;` between parameters', { image: `https://h.test/?a=1;token=${secret}` }],
    ['another scheme', { url: `wss://h.test/socket?access_token=${secret}` }],
    [
      '300 arrays deep',
      JSON.parse(`${'['.repeat(300)}"https://h/?token=${secret}"${']'.repeat(300)}`),
    ],
    ['a string body', `https://h.test/?token=${secret}`],
  ];
  it.each(cases)('%s', (_, body) => {
    const raw = JSON.stringify(body);
    const kept = redactBodyUrls(raw, body);
    expect(kept).not.toContain(secret);
    expect(kept).toContain('[REDACTED]');
    // the rest of the body stays as it was
    expect(JSON.stringify(JSON.parse(kept)).length).toBeGreaterThan(0);
  });

  it('reads the escapes of a body that did not parse before searching it', () => {
    for (const raw of [
      `{"a":"https:\\/\\/h.test\\/?token=${secret}",`,
      `{"a":"\\u0068ttps://h.test/?token=${secret}",`,
      `{"a":"https://h.test/?token\\u003d${secret}",`,
      `{"a":"https://h.test/?a=1\\u0026token=${secret}",`,
      `{"a":"https://user:${secret}\\u0040h.test/",`,
      `{"a": https://h.test/?token=${secret} `,
    ]) {
      expect([raw, redactBodyUrls(raw, undefined).includes(secret)]).toEqual([raw, false]);
    }
  });

  it('keeps key order when one key changes', () => {
    const body = { a: 1, [`https://h/?token=${secret}`]: 2, c: 3 };
    expect(Object.keys(JSON.parse(redactBodyUrls(JSON.stringify(body), body)))).toEqual([
      'a',
      'https://h/?token=[REDACTED]',
      'c',
    ]);
  });

  it('reads an unparsed body of 20 000 unfinished URLs in one pass (a regex took seconds)', () => {
    const raw = `{"a":${'"https://\\'.repeat(20_000)}`;
    expect(redactBodyUrls(raw, undefined)).toBe(raw);
    const many = `{"a":${`"https://h/?token=${secret}\\`.repeat(20_000)}`;
    expect(redactBodyUrls(many, undefined)).not.toContain(secret);
  });
});

describe('journalBody', () => {
  it('keeps a body up to the limit whole, redacted as redactBodyUrls does', () => {
    const body = { url: 'https://u:secret@h.example/a?token=t1&v=2' };
    const raw = JSON.stringify(body);
    const text = redactBodyUrls(raw, body);
    expect(journalBody(raw, body, 8192)).toEqual({ text, bytes: text.length, redacted: true });
    expect(text).not.toContain('secret');
  });

  it('past the limit, redacts only its beginning (escapes read first), the length as sent', () => {
    const url = (i: number) => `https://u:secret${i}@h.example/x?sig=s${i}&v=${i}`;
    const content = Array.from({ length: 2000 }, (_, i) => `see ${url(i)} `).join('');
    // URLs JSON escapes hide from a search of the text: `\/` and `\u0068`
    const raw = `{"a":"https:\\/\\/u:hidden1@h.example\\/","b":"\\u0068ttps://u:hidden2@h.example/",${JSON.stringify({ messages: [{ role: 'user', content }] }).slice(1)}`;
    expect(JSON.parse(raw).a).toBe('https://u:hidden1@h.example/');
    const { text, bytes, redacted } = journalBody(raw, JSON.parse(raw), 1000);
    expect(bytes).toBe(raw.length);
    expect(redacted).toBe(true);
    expect(text.length).toBeLessThanOrEqual(1000);
    expect(text).not.toMatch(/secret|hidden|sig=s/);
    expect(text).toContain('https://u:[REDACTED]@h.example/x?sig=[REDACTED]&v=0');
  });

  it('replaces a URL the cut leaves unfinished whole: a password cut in two is not half shown', () => {
    const raw = JSON.stringify({ a: 'x'.repeat(980), url: 'https://user:longpassword@h.example/' });
    const cut = raw.indexOf('longpass') + 4;
    const { text, redacted } = journalBody(raw, JSON.parse(raw), cut);
    expect(text).toBe(`${raw.slice(0, raw.indexOf('https://'))}[REDACTED]`);
    expect(redacted).toBe(true);
    // a finished URL before the cut is kept (redacted as usual)
    const done = JSON.stringify({ url: 'https://h.example/a', rest: 'y'.repeat(2000) });
    expect(journalBody(done, JSON.parse(done), 100)).toEqual({
      text: done.slice(0, 100),
      bytes: done.length,
      redacted: false,
    });
    const plain = JSON.stringify({ url: 'https://h.example/a' });
    expect(journalBody(plain, JSON.parse(plain), 100)).toEqual({
      text: plain,
      bytes: plain.length,
      redacted: false,
    });
  });
});
