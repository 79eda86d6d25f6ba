import { readdirSync, readFileSync } from 'node:fs';

/** The README and every page of docs/, as a reader (and GitHub) sees them. */
export interface ManualPage {
  /** Relative to the repository: `README.md`, `docs/agents.md`. */
  path: string;
  text: string;
}

const ROOT = new URL('../../', import.meta.url);

export const repoUrl = (path: string) => new URL(path, ROOT);

export function manualPages(): ManualPage[] {
  const docs = readdirSync(repoUrl('docs/'))
    .filter((name) => name.endsWith('.md'))
    .sort();
  return ['README.md', ...docs.map((name) => `docs/${name}`)].map((path) => ({
    path,
    text: readFileSync(repoUrl(path), 'utf8'),
  }));
}

/** A fenced code block: its info string (`sh`, `ts`), its lines, and the line it opens on. */
export interface CodeBlock {
  lang: string;
  code: string;
  line: number;
}

/** The page without its fenced code blocks (their lines left empty, so line numbers hold). */
export function prose(text: string): string {
  let fenced = false;
  return text
    .split('\n')
    .map((line) => {
      if (line.startsWith('```')) {
        fenced = !fenced;
        return '';
      }
      return fenced ? '' : line;
    })
    .join('\n');
}

export function codeBlocks(text: string): CodeBlock[] {
  const blocks: CodeBlock[] = [];
  let open: CodeBlock | null = null;
  const lines: string[] = [];
  text.split('\n').forEach((line, index) => {
    if (!line.startsWith('```')) {
      if (open) lines.push(line);
      return;
    }
    if (open) {
      blocks.push({ ...open, code: lines.join('\n') });
      open = null;
      lines.length = 0;
    } else {
      open = { lang: line.slice(3).trim(), code: '', line: index + 1 };
    }
  });
  return blocks;
}

/**
 * The anchors GitHub gives a page: each heading's text (inline code, links and emphasis as
 * rendered) in lower case, every character but letters, digits, `_`, `-` and spaces dropped,
 * spaces as hyphens, a repeat suffixed `-1`, `-2`; and every `<a id="...">`.
 * @see https://github.com/Flet/github-slugger
 */
export function anchors(text: string): Set<string> {
  const found = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of prose(text).split('\n')) {
    const heading = /^#{1,6} (.*)$/.exec(line);
    if (heading) {
      const base = (heading[1] ?? '')
        .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
        .replace(/<[^>]+>|[`*]/g, '')
        .trim()
        .toLowerCase()
        .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
        .replaceAll(' ', '-');
      const count = seen.get(base) ?? 0;
      seen.set(base, count + 1);
      found.add(count === 0 ? base : `${base}-${count}`);
    }
    for (const id of line.matchAll(/<a id="([^"]+)"><\/a>/g)) found.add(id[1] ?? '');
  }
  return found;
}

/** Every link and image target of a page's prose (not in code), with its line. */
export function links(text: string): { target: string; line: number }[] {
  // Inline code is not a link, even when it looks like one (`a[0](b)`).
  const withoutCode = prose(text).replace(/`[^`]*`/g, (code) => code.replace(/[^\n]/g, ' '));
  return withoutCode.split('\n').flatMap((line, index) =>
    [...line.matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)].map((match) => ({
      target: match[1] ?? '',
      line: index + 1,
    })),
  );
}
