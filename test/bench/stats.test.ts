import { describe, expect, it } from 'vitest';
import {
  median,
  numberFlag,
  pairedRatios,
  positiveNumber,
  quantile,
  roundOrder,
} from '../../bench/stats.js';

describe("the bench's arithmetic", () => {
  it('takes quantiles of sorted numbers, the highest for q = 1, NaN for none', () => {
    const sorted = Float64Array.from([10, 20, 30, 40, 50, 60, 70, 80, 90, 100]);
    expect([0, 0.5, 0.9, 0.99, 1].map((q) => quantile(sorted, q))).toEqual([10, 60, 100, 100, 100]);
    expect(quantile([7], 0.99)).toBe(7);
    expect(quantile([], 0.5)).toBeNaN();
  });

  it('takes the median of unsorted numbers (the mean of the middle two of an even count), leaving them as they were', () => {
    const xs = [5, 1, 4, 2, 3];
    expect(median(xs)).toBe(3);
    expect(xs).toEqual([5, 1, 4, 2, 3]);
    expect(median([0.4, 0.1, 0.3, 0.2])).toBeCloseTo(0.25, 12);
    expect(median([10, 9])).toBe(9.5);
    expect(median([7])).toBe(7);
    expect(median([])).toBeNaN();
  });

  it('rotates the order of the subjects from round to round, each first in turn', () => {
    expect([0, 1, 2, 3, 4].map((r) => roundOrder(4, r))).toEqual([
      [0, 1, 2, 3],
      [1, 2, 3, 0],
      [2, 3, 0, 1],
      [3, 0, 1, 2],
      [0, 1, 2, 3],
    ]);
  });

  it('pairs two subjects round by round, and refuses rounds with no partner', () => {
    const emulator = [{ rps: 60 }, { rps: 30 }, { rps: 45 }];
    const limit = [{ rps: 100 }, { rps: 100 }, { rps: 50 }];
    expect(pairedRatios(emulator, limit)).toEqual([0.6, 0.3, 0.9]);
    // The median of the paired ratios, not the ratio of the medians (45 / 100).
    expect(median(pairedRatios(emulator, limit))).toBe(0.6);
    expect(() => pairedRatios(emulator, limit.slice(0, 2))).toThrow(
      'no sample of round 2 to pair with',
    );
  });

  it('reads positive numbers from flags, and refuses anything else by name', () => {
    expect(positiveNumber('--rounds', undefined, 5)).toBe(5);
    expect(positiveNumber('--rounds', '9', 5)).toBe(9);
    for (const bad of ['0', '-3', 'nine', '', 'Infinity', '1e309']) {
      expect(() => positiveNumber('--rounds', bad, 5)).toThrow('--rounds needs a positive number');
    }
    expect(numberFlag(['--streams', '2000', '--x'], '--streams', 1000)).toBe(2000);
    expect(numberFlag(['--x'], '--streams', 1000)).toBe(1000);
    expect(() => numberFlag(['--streams'], '--streams', 1000)).toThrow(
      '--streams needs a positive number',
    );
  });
});
