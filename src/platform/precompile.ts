import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import {
  precompileSerializer,
  precompileValidator,
  recordSerializerRequests,
  recordValidatorRequests,
} from './validation.js';

/**
 * Builds an app and writes, as standalone code, every request validator and response
 * serializer its routes ask for: `<dir>/validators/<key>.cjs` and `<dir>/serializers/<key>.cjs`
 * (see `precompiledFile` in validation.ts). `npm run build` runs it into dist/precompiled.
 */
export async function precompileInto(
  dir: string,
  build: () => Promise<FastifyInstance>,
): Promise<{ validators: number; serializers: number; bytes: number }> {
  rmSync(dir, { recursive: true, force: true });
  const validators = recordValidatorRequests();
  const serializers = recordSerializerRequests();
  const app = await build();
  try {
    await app.ready();
  } finally {
    recordValidatorRequests(false);
    recordSerializerRequests(false);
  }
  let bytes = 0;
  const write = (kind: string, list: Array<{ key: string; code: string }>) => {
    mkdirSync(join(dir, kind), { recursive: true });
    const written = new Set<string>();
    for (const { key, code } of list) {
      if (written.has(key)) continue;
      written.add(key);
      writeFileSync(join(dir, kind, `${key}.cjs`), code);
      bytes += code.length;
    }
    return written.size;
  };
  const result = {
    validators: write(
      'validators',
      validators.map(({ schema, coerceTypes }) => precompileValidator(schema, coerceTypes)),
    ),
    serializers: write('serializers', serializers.map(precompileSerializer)),
    bytes,
  };
  await app.close();
  return result;
}
