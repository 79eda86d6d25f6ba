import { existsSync } from 'node:fs';
import { GatewayError } from '../platform/errors.js';
import { RecordingsError } from '../record/recordings.js';
import { type ControlApp, type ControlOptions, errors } from './context.js';
import { DriftReportSchema } from './schemas.js';

/** The drift check of a recordings directory (README "Record and replay"). */
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
          'Body (optional): `{"recordings": "<dir>"}`; without it, RECORDINGS_DIR is read.',
        response: { 200: DriftReportSchema, ...errors },
      },
    },
    async (request) => {
      // The body is optional (`curl -X POST` works), so it is checked here.
      const body = request.body as { recordings?: unknown } | null | undefined;
      if (body !== undefined && body !== null && (typeof body !== 'object' || Array.isArray(body)))
        throw new GatewayError(400, 'the body must be a JSON object, or none');
      const extra = body ? Object.keys(body).find((k) => k !== 'recordings') : undefined;
      if (extra !== undefined) throw new GatewayError(400, `${extra} is not a field of this body`);
      if (
        body?.recordings !== undefined &&
        (typeof body.recordings !== 'string' || body.recordings === '')
      ) {
        throw new GatewayError(400, 'recordings must be a directory path');
      }
      const dir = (body?.recordings as string | undefined) ?? recordingsDir;
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
