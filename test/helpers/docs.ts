import { readFileSync } from 'node:fs';

/** Real PDF files (well-formed, with page objects and an xref table), as Base64. */
const read = (name: string) =>
  readFileSync(new URL(`../fixtures/docs/${name}`, import.meta.url)).toString('base64');

export const DOCS = {
  twoPages: read('two-pages.pdf'),
  tooManyPages: read('one-hundred-one-pages.pdf'),
};
