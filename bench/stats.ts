/** The bench's arithmetic and flags: pure functions, with tests (test/bench/stats.test.ts). */

/** A flag's value as a positive number (`fallback` when the flag is absent). */
export function positiveNumber(name: string, text: string | undefined, fallback: number): number {
  const value = text === undefined ? fallback : Number(text);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} needs a positive number`);
  return value;
}

/** The value of `--name N` on the command line, or `fallback`. */
export function numberFlag(args: string[], name: string, fallback: number): number {
  const at = args.indexOf(name);
  return positiveNumber(name, at >= 0 ? String(args[at + 1]) : undefined, fallback);
}

/** The q-quantile (0..1) of sorted numbers. */
export const quantile = (sorted: ArrayLike<number>, q: number): number =>
  sorted.length === 0
    ? Number.NaN
    : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] as number);

/** The median of numbers (the mean of the two middle ones of an even count; NaN of none). */
export function median(xs: number[]): number {
  if (xs.length === 0) return Number.NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

/**
 * The order subjects are measured in, in round `round`: their list rotated by the round, so
 * each is measured first (and last) in turn, and a machine that slows down during a round
 * does not always weigh on the same subject.
 */
export const roundOrder = (count: number, round: number): number[] =>
  Array.from({ length: count }, (_, k) => (k + round) % count);

/** The paired ratios of two subjects' req/s, round by round. */
export const pairedRatios = (of: { rps: number }[], to: { rps: number }[]): number[] =>
  of.map((x, i) => {
    const other = to[i];
    if (other === undefined) throw new Error(`no sample of round ${i} to pair with`);
    return x.rps / other.rps;
  });
