/**
 * The server as one file (`dist/server.bundle.js`), which is what `npm start`, the bin and the
 * Docker image run: Node resolves and loads one module instead of ~400, which halves start-up
 * (README "Benchmarks"). What only some requests need stays outside and loads on first use.
 * The compiled `dist/*.js` stay the library (`import { startEmulator } from 'gateway-emulator'`).
 * Also builds the dashboard into dist/ui.
 */
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import { build } from 'esbuild';

await build({
  entryPoints: ['dist/server.js'],
  outfile: 'dist/server.bundle.js',
  bundle: true,
  platform: 'node',
  format: 'esm',
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
  // CommonJS dependencies call require(); an ES module has none of its own.
  banner: {
    js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);",
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
