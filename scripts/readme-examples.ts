/**
 * `npm run readme:examples`: copies each examples/*.ts file into the README, between
 * `<!-- example: <file> -->` and `<!-- /example -->`. A test checks that the README holds them.
 */
import { readFileSync, writeFileSync } from 'node:fs';

const readmeUrl = new URL('../README.md', import.meta.url);
let readme = readFileSync(readmeUrl, 'utf8');
readme = readme.replace(
  /<!-- example: ([\w.-]+) -->\n[\s\S]*?<!-- \/example -->/g,
  (_, file: string) => {
    const code = readFileSync(new URL(`../examples/${file}`, import.meta.url), 'utf8').trim();
    return `<!-- example: ${file} -->\n\`\`\`ts\n${code}\n\`\`\`\n<!-- /example -->`;
  },
);
writeFileSync(readmeUrl, readme);
