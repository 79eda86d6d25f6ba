import { existsSync, readFileSync } from 'node:fs';
import { posix } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchors, links, manualPages, repoUrl } from '../helpers/manual.js';

/**
 * Every relative link of the README and of docs/*.md reaches a file that exists and, when it
 * names one, a heading (or `<a id>`) of that page, as GitHub renders them.
 */

const pages = manualPages();

function problems(): string[] {
  const found: string[] = [];
  for (const page of pages) {
    for (const { target, line } of links(page.text)) {
      if (/^[a-z][a-z0-9+.-]*:/i.test(target)) continue; // https:, mailto:
      const [file = '', anchor] = target.split('#');
      const path =
        file === '' ? page.path : posix.normalize(posix.join(posix.dirname(page.path), file));
      const where = `${page.path}:${line}: ${target}`;
      if (!existsSync(repoUrl(path))) {
        found.push(`${where}: no file ${path}`);
        continue;
      }
      if (anchor === undefined) continue;
      if (!path.endsWith('.md')) {
        found.push(`${where}: an anchor into a file that is not markdown`);
      } else if (!anchors(readFileSync(repoUrl(path), 'utf8')).has(anchor)) {
        found.push(`${where}: no heading #${anchor} in ${path}`);
      }
    }
  }
  return found;
}

describe('the manual (README.md and docs/*.md)', () => {
  it('has only relative links that resolve to a file and a heading', () => {
    expect(problems()).toEqual([]);
  });

  it('is found: the README links every page of docs/', () => {
    const readme = pages.find((page) => page.path === 'README.md');
    const linked = new Set(
      links(readme?.text ?? '')
        .map(({ target }) => target.split('#')[0] ?? '')
        .filter((target) => target.startsWith('docs/') && target.endsWith('.md')),
    );
    const docs = pages.map((page) => page.path).filter((path) => path.startsWith('docs/'));
    expect([...docs].sort()).toEqual([...linked].sort());
  });

  it('reads anchors as GitHub makes them', () => {
    const page = [
      '# Agents: tools, structured output, thinking',
      '## Shared state (`STATE_URL`)',
      '## The goals re-based (issue 40), 2026-11-29',
      '## Notes',
      '## Notes',
      '```sh',
      '# not a heading',
      '```',
      '- <a id="custom-tools"></a>**Custom tools**',
    ].join('\n');
    expect([...anchors(page)]).toEqual([
      'agents-tools-structured-output-thinking',
      'shared-state-state_url',
      'the-goals-re-based-issue-40-2026-11-29',
      'notes',
      'notes-1',
      'custom-tools',
    ]);
  });

  it('reads links outside code only', () => {
    const page = [
      'See [Stubs](stubs.md#stubs) and ![a picture](dashboard.png "title"),',
      'not `a[0](b)` nor:',
      '```ts',
      'const x = [1](2);',
      '```',
      '[a link across',
      'lines](#here).',
    ].join('\n');
    expect(links(page)).toEqual([
      { target: 'stubs.md#stubs', line: 1 },
      { target: 'dashboard.png', line: 1 },
      { target: '#here', line: 7 },
    ]);
  });
});
