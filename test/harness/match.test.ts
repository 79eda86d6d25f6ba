import { describe, expect, it } from 'vitest';
import {
  compileMatch,
  MATCH_WORK,
  type MatchTarget,
  matchWork,
  meets,
  mismatches,
  REGEX_SCAN_CHARS,
  regexScan,
} from '../../src/harness/match.js';

const target = (body: unknown, work?: { left: number }): MatchTarget => ({
  group: 'chat',
  method: 'POST',
  path: '/v1/chat/completions',
  keyHash: 'k',
  headers: {},
  body,
  model: () => undefined,
  prompt: () => undefined,
  turn: () => undefined,
  ...(work ? { work } : {}),
});

describe('body matches within a work budget', () => {
  const row = Array.from({ length: 190 }, (_, i) => i);
  it(`charges selected values × the nodes of the value compared, ${MATCH_WORK} per request`, () => {
    const match = compileMatch({ body: { '$.rows[*]': row } }, (k) => k);
    const body = { rows: Array.from({ length: 100 }, () => [...row]) };
    const work = matchWork();
    expect(mismatches(match, target(body, work))).toEqual([]);
    expect(work.left).toBe(MATCH_WORK - 100 * 191);
  });

  it('takes a path past the budget as not met, for this request and every rule after', () => {
    const row2 = [...row, 'x'];
    const match = compileMatch({ body: { '$.rows[*]': row2, '$.n': 1 } }, (k) => k);
    // 10 000 rows selected, each compared with a 192-node value: 1.9 million, over the budget
    const body = { n: 1, rows: [...Array.from({ length: 9999 }, () => [...row]), row2] };
    expect(mismatches(match, target(body))).toEqual([]); // no budget given: compared in full
    const work = matchWork();
    expect(mismatches(match, target(body, work))).toEqual(['body.$.rows[*]', 'body.$.n']);
    expect(work.left).toBeLessThan(0);
    const cheap = compileMatch({ body: { '$.n': 1 } }, (k) => k);
    expect(meets(cheap, target(body, work))).toBe(false); // the request's budget is spent
    expect(meets(cheap, target(body, matchWork()))).toBe(true);
  });
});

describe('prompt regexes within a scan budget', () => {
  it(`read ${REGEX_SCAN_CHARS} prompt characters per request at most (fault rules too)`, () => {
    const rule = compileMatch({ prompt_regex: 'order \\d' }, (k) => k);
    const prompt = `${'a'.repeat(1_000_000)} order 7`;
    const withPrompt = (scan?: { left: number }): MatchTarget => ({
      ...target(undefined),
      prompt: () => prompt,
      ...(scan ? { scan } : {}),
    });
    const scan = regexScan();
    for (let i = 0; i < 49; i++) expect(meets(rule, withPrompt(scan))).toBe(true);
    expect(meets(rule, withPrompt(scan))).toBe(false); // the 50th read would pass the budget
    expect(mismatches(rule, withPrompt(scan))).toEqual(['prompt_regex']);
    expect(meets(rule, withPrompt())).toBe(true);
  });
});
