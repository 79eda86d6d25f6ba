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
    // Examples import the package from source; the README shows the published name.
    const code = readFileSync(new URL(`../examples/${file}`, import.meta.url), 'utf8')
      .trim()
      .replaceAll("'../src/index.js'", "'gateway-emulator'");
    return `<!-- example: ${file} -->\n\`\`\`ts\n${code}\n\`\`\`\n<!-- /example -->`;
  },
);
writeFileSync(readmeUrl, readme);
