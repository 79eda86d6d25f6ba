/**
 * A step of `npm run build`, after the TypeScript compile: every request validator and response
 * serializer the routes ask for, as standalone code, into dist/precompiled (src/platform/
 * precompile.ts). A route's first request then loads small files instead of compiling.
 */
import { buildApp } from '../dist/app.js';
import { resolveConfig } from '../dist/config.js';
import { precompileInto } from '../dist/platform/precompile.js';

const done = await precompileInto('dist/precompiled', () =>
  buildApp(resolveConfig({ logLevel: 'error' })),
);
console.log(
  `precompiled ${done.validators} validators and ${done.serializers} serializers (${Math.round(done.bytes / 1024)} KiB) into dist/precompiled`,
);
