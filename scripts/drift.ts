/**
 * `npm run drift -- --recordings <dir>`: replays each recording against the emulator's own
 * engine and prints where the shapes differ (docs/record-replay.md "Record and replay"). Exit code 1 on
 * drift, 2 on bad arguments, so that a scheduled CI job can run it on fresh recordings.
 */
import { existsSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { buildApp } from '../src/app.js';
import { loadConfig, resolveConfig } from '../src/config.js';
import { resigned } from '../src/messages/resign.js';
import { createDeps } from '../src/platform/deps.js';
import { checkDrift } from '../src/record/drift.js';
import { RecordingsError } from '../src/record/recordings.js';

const { values } = parseArgs({
  options: { recordings: { type: 'string' }, json: { type: 'boolean' } },
});
const dir = values.recordings ?? process.env.RECORDINGS_DIR;
if (!dir || !existsSync(dir)) {
  process.stderr.write('usage: npm run drift -- --recordings <dir> [--json]\n');
  process.exit(2);
}
const { config } = loadConfig({ ...process.env, UPSTREAM_MODE: 'off', LOG_LEVEL: 'silent' });
const report = await checkDrift(
  dir,
  () => buildApp(resolveConfig({ ...config, journalLimit: 0 }), createDeps()),
  { queueMs: config.videoQueueMs, renderMs: config.videoRenderMs },
  resigned,
).catch((err: unknown) => {
  if (!(err instanceof RecordingsError)) throw err;
  process.stderr.write(`drift: ${err.message}\n`);
  process.exit(2);
});
if (values.json) process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
else {
  process.stdout.write(
    `${report.recordings} recordings, ${report.responses} answers compared: ${report.drift ? `${report.differences.length} differences` : 'no drift'}\n`,
  );
  for (const d of report.differences) {
    process.stdout.write(
      `  ${d.recording} #${d.response} ${d.kind} at ${d.at}: emulator ${JSON.stringify(d.emulator)}, recorded ${JSON.stringify(d.recorded)}\n`,
    );
  }
}
process.exit(report.drift ? 1 : 0);
