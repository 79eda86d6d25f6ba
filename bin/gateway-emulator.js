#!/usr/bin/env node
import { createHash } from 'node:crypto';
/**
 * Starts the server (`dist/server.bundle.cjs`) with its compiled code kept on disk between runs:
 * V8's code cache, as Node 22's own compile cache keeps it for modules, on every Node version the
 * emulator supports. Without it, about a third of the start-up is V8 parsing and compiling the
 * 3 MB bundle. docs/benchmarks.md "Start-up".
 *
 * The cache is a file per build of the bundle (a hash of its bytes: V8 itself checks only the
 * length of the source, and installs share NODE_COMPILE_CACHE), Node version and architecture, in NODE_COMPILE_CACHE when set (the Docker image sets it), else in
 * node_modules/.cache/gateway-emulator. It is written once the server listens (then it holds
 * the code start-up ran) unless such a cache was used, or at exit by a run that never listened
 * (`--help`: the code it loaded) and found no cache; a cache V8 refuses (other V8 flags) counts
 * as none. Any failure to read or write it only costs the cache: the server starts the same.
 * @see https://nodejs.org/api/vm.html#new-vmscriptcode-options
 * @see https://v8.dev/blog/code-caching-for-devs
 */
import {
  mkdirSync,
  readdirSync,
  readFileSync,
  renameSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs';
import module from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import vm from 'node:vm';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const bundle = join(root, 'dist', 'server.bundle.cjs');
/** What the server emits on `process` once it listens (src/server.ts). */
const LISTENING = 'gateway-emulator:listening';
// Node 22.1+ keeps the compiled code of the modules loaded later (on first use) too.
module.enableCompileCache?.();
run();

/** Compiles the bundle with its cached code, if any, runs it, and saves its code when it can. */
function run() {
  const bytes = readFileSync(bundle);
  const source = bytes.toString('utf8');
  const cache = cacheFiles(bytes);
  // A start's cache, else a load's (--help's), else none.
  const found = cache && (readOr(cache.started) ?? readOr(cache.loaded));
  // The function Node wraps a CommonJS module in, on the bundle's first line: line numbers in
  // stack traces stay the bundle's.
  const script = new vm.Script(
    `(function (exports, require, module, __filename, __dirname) {${source}\n})`,
    { filename: bundle, cachedData: found?.data },
  );
  const accepted = found !== undefined && !script.cachedDataRejected ? found.file : undefined;
  if (cache && accepted !== cache.started) {
    // Once it listens, the code start-up compiled; a run that never listens (--help) leaves the
    // code it loaded, if there was none.
    const onExit = () => saveCache(cache, script, cache.loaded);
    process.once(LISTENING, () => {
      process.off('exit', onExit);
      saveCache(cache, script, cache.started);
    });
    if (accepted === undefined) process.once('exit', onExit);
  }
  const exports = {};
  const require = module.createRequire(bundle);
  script.runInThisContext()(exports, require, { exports }, bundle, dirname(bundle));
}

/** A file's bytes, or undefined when it cannot be read. */
function readOr(file) {
  try {
    return { file, data: readFileSync(file) };
  } catch {
    return undefined;
  }
}

/**
 * The two caches of this build of the bundle, Node and architecture (one written once the
 * server listened, one by a run that never listened) and what names this Node's caches;
 * undefined: no cache.
 */
function cacheFiles(bytes) {
  try {
    const dir = process.env.NODE_COMPILE_CACHE
      ? resolve(process.env.NODE_COMPILE_CACHE)
      : join(root, 'node_modules', '.cache', 'gateway-emulator');
    const hash = createHash('sha256').update(bytes).digest('hex').slice(0, 20);
    const runtime = `-${process.version}-${process.arch}`;
    const build = `server.bundle-${hash}${runtime}`;
    return {
      dir,
      runtime,
      build,
      started: join(dir, `${build}.v8cache`),
      loaded: join(dir, `${build}-loaded.v8cache`),
    };
  } catch {
    return undefined;
  }
}

/**
 * Writes the script's code to `file` (whole, then renamed: a replica or worker starting at the
 * same time reads either no cache or a whole one), and removes this Node's caches of other
 * builds, and the load's cache once there is a start's.
 */
function saveCache({ dir, runtime, build, started, loaded }, script, file) {
  try {
    mkdirSync(dir, { recursive: true });
    const partial = `${file}.${process.pid}.tmp`;
    writeFileSync(partial, script.createCachedData());
    renameSync(partial, file);
    if (file === started) unlinkSync(loaded);
  } catch {
    // (a directory it may not write, or no load's cache to remove)
  }
  try {
    for (const other of readdirSync(dir)) {
      if (
        other.startsWith('server.bundle-') &&
        other.includes(runtime) &&
        !other.startsWith(build)
      ) {
        unlinkSync(join(dir, other));
      }
    }
  } catch {
    // (a directory it may not change)
  }
}
