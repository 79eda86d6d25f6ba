import { Ajv2019 } from 'ajv/dist/2019.js';
import addFormats from 'ajv-formats';
import { ajvLinearRegExp } from '../../platform/linear-regex.js';

let ajv: Ajv2019 | undefined;

/** Characters of schema JSON the current Ajv has compiled. */
let compiledChars = 0;

/**
 * An Ajv keeps in its scope what every schema it compiled refers to (an `enum`'s values, say),
 * `removeSchema` or not: 1000 schemas of 800 values each kept 46 MB for good, and a client
 * chooses them. So it is replaced by a new one after this many characters of schema, and the
 * schemas (and values) compiled by the old one are forgotten with it: they are compiled again
 * when they come back.
 */
const AJV_RENEW_CHARS = 16 * 1024 * 1024;

/**
 * The Ajv to compile `chars` more characters of schema with: a new one once the current one
 * has compiled AJV_RENEW_CHARS (`renewed`: the schemas and values known are to be forgotten).
 */
export function compilerFor(chars: number): { compiler: Ajv2019; renewed: boolean } {
  const renewed = compiledChars > AJV_RENEW_CHARS;
  if (renewed) {
    ajv = undefined;
    compiledChars = 0;
  }
  const compiler = validator();
  compiledChars += chars;
  return { compiler, renewed };
}

/**
 * Made on first use: start-up does not pay for an Ajv and its formats. Draft 2019-09: it reads
 * what clients still write in draft-07 words (a tuple's array `items`, `definitions`,
 * `dependencies`) and checks the keywords draft-07 does not know (`dependentRequired`,
 * `minContains`, `unevaluatedProperties`...), which upstream's draft 2020-12 checks; a 2020-12
 * tuple (`prefixItems`) is read in draft-07 words (see tuplesAsDraft7).
 */
function validator(): Ajv2019 {
  if (!ajv) {
    ajv = new Ajv2019({
      strict: false,
      // A client's schema is the client's: Ajv's remarks on it (`unknown format "emoji"
      // ignored`) would go to the emulator's console past its LOG_LEVEL.
      logger: false,
      allErrors: false,
      discriminator: false,
      // A definition referred to N times would be copied N times: the compiled code would grow
      // as its size times N, which a node count does not see (3.8 KB of schema cost 2 s).
      inlineRefs: false,
      code: { regExp: ajvLinearRegExp },
    });
    addFormats.default(ajv);
    boundFormats(ajv);
  }
  return ajv;
}

/**
 * ajv-formats checks strings with JavaScript regular expressions, some of them slow on long
 * input (`url` on 60 KB: 24 s). A string longer than any real date, address or URL is not of
 * the format; the checks never see more than this many characters.
 */
const FORMAT_CHARS = 4096;

type FormatTest = (value: string) => boolean;

function boundFormats(ajv: Ajv2019): void {
  for (const [name, format] of Object.entries(ajv.formats)) {
    const bounded =
      (test: FormatTest): FormatTest =>
      (value) =>
        value.length <= FORMAT_CHARS && test(value);
    const testOf = (f: unknown): FormatTest | undefined =>
      f instanceof RegExp
        ? (value) => f.test(value)
        : typeof f === 'function'
          ? (f as FormatTest)
          : undefined;
    const direct = testOf(format);
    if (direct) {
      ajv.addFormat(name, bounded(direct));
      continue;
    }
    const definition = format as { type?: string; validate?: unknown; async?: boolean };
    const test = testOf(definition.validate);
    if (test && (definition.type ?? 'string') === 'string' && !definition.async) {
      ajv.addFormat(name, { ...definition, validate: bounded(test) } as never);
    }
  }
}
