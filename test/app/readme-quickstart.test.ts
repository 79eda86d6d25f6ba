import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type Emulator, startEmulator } from '../../src/emulator.js';
import { codeBlocks, manualPages } from '../helpers/manual.js';

/**
 * Every `curl` of the README's shell blocks runs, in the README's order, against one started
 * emulator (its URL for `http://127.0.0.1:4010`). A call with a `# {...}` line under it answers
 * that JSON, whole; every other call answers a 2xx.
 */

const README_URL = 'http://127.0.0.1:4010';

interface Call {
  method: string;
  url: string;
  headers: Record<string, string>;
  body: string | undefined;
  /** The whole answer the README shows under the call, when it shows one. */
  shown: unknown;
}

/** A command's words as the shell splits them (single and double quotes, no expansion). */
const words = (command: string) =>
  [...command.matchAll(/'([^']*)'|"((?:[^"\\]|\\.)*)"|(\S+)/g)].map(
    ([, single, double, bare]) => single ?? double?.replace(/\\(.)/g, '$1') ?? bare ?? '',
  );

function call(command: string, shown: unknown): Call {
  const [curl, ...args] = words(command);
  expect(curl).toBe('curl');
  const result: Call = { method: '', url: '', headers: {}, body: undefined, shown };
  for (let i = 0; i < args.length; i++) {
    const arg = args[i] ?? '';
    if (arg === '-s') continue;
    const value = args[++i] ?? '';
    if (arg === '-X') result.method = value;
    else if (arg === '-H') {
      const colon = value.indexOf(':');
      result.headers[value.slice(0, colon).toLowerCase()] = value.slice(colon + 1).trim();
    } else if (arg === '-d') result.body = value;
    else if (!arg.startsWith('-')) {
      result.url = arg;
      i--;
    } else throw new Error(`the README's curl uses ${arg}, which this test does not read`);
  }
  result.method ||= result.body === undefined ? 'GET' : 'POST';
  return result;
}

/** The README's curl calls, each with the JSON line under it (`# {...}`), if any. */
function readmeCalls(): Call[] {
  const readme = manualPages().find((page) => page.path === 'README.md')?.text ?? '';
  return codeBlocks(readme)
    .filter(({ lang }) => lang === 'sh')
    .flatMap(({ code }) => {
      const lines = code.replaceAll('\\\n', ' ').split('\n');
      return lines.flatMap((line, index) => {
        if (!line.startsWith('curl ')) return [];
        const next = lines[index + 1] ?? '';
        return [call(line, next.startsWith('# {') ? JSON.parse(next.slice(2)) : undefined)];
      });
    });
}

let emulator: Emulator;
beforeAll(async () => {
  emulator = await startEmulator({ logLevel: 'silent' });
});
afterAll(() => emulator.close());

describe("the README's first five things", () => {
  it('reads every curl of its shell blocks', () => {
    const readme = manualPages().find((page) => page.path === 'README.md')?.text ?? '';
    const curls = codeBlocks(readme)
      .filter(({ lang }) => lang === 'sh')
      .flatMap(({ code }) => code.match(/^curl /gm) ?? []);
    expect(readmeCalls()).toHaveLength(curls.length);
    expect(curls.length).toBeGreaterThan(0);
  });

  it('runs them in order: each answers as the README shows, or a 2xx', async () => {
    const calls = readmeCalls();
    const answers: unknown[] = [];
    for (const { method, url, headers, body, shown } of calls) {
      expect(url.startsWith(`${README_URL}/`)).toBe(true);
      const res = await fetch(emulator.url + url.slice(README_URL.length), {
        method,
        headers,
        body,
      });
      const text = await res.text();
      answers.push(
        shown === undefined
          ? `${method} ${url}: ${res.ok ? '2xx' : `${res.status} ${text}`}`
          : JSON.parse(text),
      );
    }
    expect(answers).toEqual(
      calls.map(({ method, url, shown }) => shown ?? `${method} ${url}: 2xx`),
    );
  });
});
