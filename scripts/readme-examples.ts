/**
 * `npm run readme:examples`: copies each examples/*.ts file into the README and the docs/
 * pages, between `<!-- example: <file> -->` and `<!-- /example -->`. A test checks that they
 * hold them.
 */
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';

const root = new URL('../', import.meta.url);
const pages = [
  'README.md',
  ...readdirSync(new URL('docs/', root))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
];
for (const page of pages) {
  const url = new URL(page, root);
  const text = readFileSync(url, 'utf8');
  const written = text.replace(
    /<!-- example: ([\w.-]+) -->\n[\s\S]*?<!-- \/example -->/g,
    (_, file: string) => {
      // Examples import the package from source; the pages show the published name.
      const code = readFileSync(new URL(`examples/${file}`, root), 'utf8')
        .trim()
        .replaceAll("'../src/index.js'", "'gateway-emulator'");
      return `<!-- example: ${file} -->\n\`\`\`ts\n${code}\n\`\`\`\n<!-- /example -->`;
    },
  );
  if (written !== text) writeFileSync(url, written);
}
