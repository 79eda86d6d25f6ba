import { existsSync } from 'node:fs';
import { GatewayError } from '../platform/errors.js';
import { RecordingsError } from '../record/recordings.js';
import { type ControlApp, type ControlOptions, errors } from './context.js';
import { DriftBodySchema, DriftReportSchema } from './schemas.js';

/** The drift check of a recordings directory (docs/record-replay.md "Record and replay"). */
export function driftRoutes(
  app: ControlApp,
  { drift, recordingsDir }: Pick<ControlOptions, 'drift' | 'recordingsDir'>,
): void {
  app.post(
    '/drift',
    {
      schema: {
        summary: 'Replay the recordings against the emulator and report where their shapes differ',
        description:
          'Body (optional): `{"recordings": "<dir>"}`; without it, RECORDINGS_DIR is read. Refused besides what the schema states: no directory given and no RECORDINGS_DIR, a directory that does not exist, or one holding a file that is no recording (or too deep, too wide, too large).',
        body: DriftBodySchema,
        response: { 200: DriftReportSchema, ...errors },
      },
      // The body is optional (`curl -X POST` works): none is checked as null.
      preValidation: (request, _reply, done) => {
        if (request.body === undefined) request.body = null;
        done();
      },
    },
    async (request) => {
      const body = request.body;
      const dir = body?.recordings ?? recordingsDir;
      if (dir === undefined) {
        throw new GatewayError(400, 'recordings: give a directory, or set RECORDINGS_DIR');
      }
      if (!existsSync(dir)) throw new GatewayError(400, `recordings: ${dir} does not exist`);
      try {
        return await drift(dir);
      } catch (err) {
        // Not a directory, cannot be read, or a .json file that is not a recording.
        if (err instanceof RecordingsError)
          throw new GatewayError(400, `recordings: ${err.message}`);
        throw err;
      }
    },
  );
}
