/**
 * The server as one file (`dist/server.bundle.cjs`), which is what `npm start`, the bin and the
 * Docker image run: Node resolves and loads one module instead of ~400, which halves start-up
 * (docs/benchmarks.md "Start-up"). What only some requests need stays outside and loads on first
 * use. A CommonJS script, not an ES module: the bin compiles it with V8's code cache
 * (bin/gateway-emulator.js), which Node offers for scripts only (`vm.Script`).
 * The compiled `dist/*.js` stay the library (`import { startEmulator } from 'gateway-emulator'`).
 * Also builds the dashboard into dist/ui.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

await build({
  entryPoints: ['dist/server.js'],
  outfile: 'dist/server.bundle.cjs',
  bundle: true,
  platform: 'node',
  format: 'cjs',
  target: 'node20',
  // Loaded lazily, from node_modules (swagger-ui also serves its own files from there; the
  // Redis clients only with STATE_URL).
  external: [
    '@fastify/swagger',
    '@fastify/swagger-ui',
    'prom-client',
    'pino-pretty',
    'ioredis',
    'bullmq',
  ],
  // The modules kept outside are required on first use (`import()` in the sources): a script
  // compiled by the bin could import only with an experimental loader of Node's.
  supported: { 'dynamic-import': false },
  // Strict, as the ES modules it is made of (the directive must come first), and
  // `import.meta.url` is the bundle's own URL.
  define: { 'import.meta.url': '__bundleUrl' },
  banner: {
    js: `"use strict";\nvar __bundleUrl = require('node:url').pathToFileURL(__filename).href;`,
  },
  legalComments: 'none',
  logLevel: 'warning',
});

// The dashboard (README "Dashboard"): its script for the browser, and its static files.
await build({
  entryPoints: ['ui/app.ts'],
  outfile: 'dist/ui/app.js',
  bundle: true,
  platform: 'browser',
  format: 'iife',
  target: 'es2022',
  minify: true,
  legalComments: 'none',
  logLevel: 'warning',
});
for (const file of ['index.html', 'favicon.svg']) copyFileSync(`ui/${file}`, `dist/ui/${file}`);
// The charts' library (uPlot, bundled into app.js above) brings its stylesheet: served with ours.
writeFileSync(
  'dist/ui/app.css',
  `${readFileSync('node_modules/uplot/dist/uPlot.min.css', 'utf8')}\n${readFileSync('ui/app.css', 'utf8')}`,
);
