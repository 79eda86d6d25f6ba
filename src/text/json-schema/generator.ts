import type { JsonSchema } from 'json-schema-faker';

/** The generator's random source, as it hands it to a format. */
interface Random {
  int(min: number, max: number): number;
  pick<T>(items: readonly T[]): T;
}

const EMOJI = ['😀', '🚀', '👍', '🎉', '🌍', '🔥', '✅', '🙂'];
const base64url = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

const two = (n: number) => String(n).padStart(2, '0');
const clockTime = (random: Random) =>
  `${two(random.int(0, 23))}:${two(random.int(0, 59))}:${two(random.int(0, 59))}`;

/**
 * Formats the generator has no maker for (it would make a word): zod's, values zod's own checks
 * take; and ajv-formats' own (`url`, `iso-time`, `iso-date-time`, a pointer as a URI fragment),
 * values Ajv takes.
 * @see https://ajv.js.org/packages/ajv-formats.html#formats
 */
export const GENERATOR_FORMATS: Record<string, (random: Random) => string> = {
  emoji: (random) => random.pick(EMOJI).repeat(random.int(1, 3)),
  jwt: (random) =>
    `${base64url({ alg: 'HS256', typ: 'JWT' })}.${base64url({ sub: `user-${random.int(1, 9999)}` })}.${base64url({ sig: random.int(0, 1e9) })}`,
  url: (random) =>
    `https://example.com/${random.pick(['items', 'docs', 'users'])}/${random.int(1, 9999)}`,
  'iso-time': clockTime,
  'iso-date-time': (random) =>
    `${random.int(2000, 2030)}-${two(random.int(1, 12))}-${two(random.int(1, 28))}T${clockTime(random)}`,
  'json-pointer-uri-fragment': (random) =>
    `#/${random.pick(['items', 'data', 'users'])}/${random.int(0, 9)}`,
};

export type Generate = (
  schema: JsonSchema,
  options: {
    seed: number;
    maxDepth: number;
    refDepthMax: number;
    formats: typeof GENERATOR_FORMATS;
  },
) => unknown;
let generator: Promise<Generate> | undefined;

export const loadGenerator = () => {
  generator ??= import('json-schema-faker').then(({ generateSync }) => generateSync as Generate);
  return generator;
};
