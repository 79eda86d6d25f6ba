/**
 * `npm run openapi:snapshot`: writes the generated OpenAPI document to test/app/openapi.snapshot.json.
 * The snapshot test fails whenever the document changes; run this when a change is meant.
 */
import { writeFileSync } from 'node:fs';
import { buildApp } from '../src/app.js';
import { resolveConfig } from '../src/config.js';

const SNAPSHOT = new URL('../test/app/openapi.snapshot.json', import.meta.url);

const app = await buildApp(resolveConfig({ logLevel: 'silent' }));
await app.ready();
writeFileSync(SNAPSHOT, `${JSON.stringify(await app.openapi(), null, 2)}\n`);
await app.close();
console.log(`wrote ${SNAPSHOT.pathname}`);
