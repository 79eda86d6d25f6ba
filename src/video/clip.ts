import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { DEFAULT_FIXTURES_DIR } from '../config.js';

export const CLIP_PATH = join('media', 'sample.mp4');

/** The result clip: `media/sample.mp4` of FIXTURES_DIR, else the shipped one. */
export function loadClip(fixturesDir: string): Buffer {
  const own = join(fixturesDir, CLIP_PATH);
  return readFileSync(existsSync(own) ? own : join(DEFAULT_FIXTURES_DIR, CLIP_PATH));
}
