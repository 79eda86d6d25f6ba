import { describe, expect, it } from 'vitest';
import { sameJson, ToolsMemo } from '../../src/text/tools-memo.js';

describe('sameJson', () => {
  it('is true exactly when the two values would be written as the same JSON', () => {
    const pairs: Array<[unknown, unknown]> = [
      [
        { a: 1, b: [1, 'x', null, { c: true }] },
        { a: 1, b: [1, 'x', null, { c: true }] },
      ],
      [
        { a: 1, b: 2 },
        { b: 2, a: 1 },
      ],
      [
        [1, 2],
        [1, 2, 3],
      ],
      [{ a: [] }, { a: {} }],
      [{ a: null }, { a: {} }],
      [{ a: '1' }, { a: 1 }],
      [{}, []],
    ];
    for (const [a, b] of pairs) {
      expect(sameJson(a, b), JSON.stringify([a, b])).toBe(JSON.stringify(a) === JSON.stringify(b));
    }
  });
});

describe('ToolsMemo', () => {
  const tools = (name: string) => [{ name, input_schema: { type: 'object' } }];

  it('reads a set once, finds it again in a fresh parse, and gives its JSON', () => {
    const memo = new ToolsMemo<string>(4, 1000);
    let reads = 0;
    const read = () => `read ${++reads}`;
    const made = (definitions: unknown) => {
      const { json, value } = memo.get(definitions, read);
      return { json, value };
    };
    expect(made(tools('a'))).toEqual({ json: JSON.stringify(tools('a')), value: 'read 1' });
    expect(made(JSON.parse(JSON.stringify(tools('a'))))).toEqual({
      json: JSON.stringify(tools('a')),
      value: 'read 1',
    });
    expect(memo.get(tools('b'), read).value).toBe('read 2');
    expect(reads).toBe(2);
  });

  it('forgets the least recently used set past its bound, and keeps no set over its size', () => {
    const memo = new ToolsMemo<number>(2, 60);
    let reads = 0;
    const read = () => ++reads;
    memo.get(tools('a'), read);
    memo.get(tools('b'), read);
    memo.get(tools('a'), read); // a is the most recent now
    memo.get(tools('c'), read); // b goes
    expect(reads).toBe(3);
    memo.get(tools('a'), read);
    memo.get(tools('b'), read);
    expect(reads).toBe(4);
    const large = tools('x'.repeat(100));
    memo.get(large, read);
    memo.get(large, read);
    expect(reads).toBe(6);
  });

  it('remembers nothing of a set whose reading fails', () => {
    const memo = new ToolsMemo<number>(2, 1000);
    const fail = () => {
      throw new Error('bad tool');
    };
    expect(() => memo.get(tools('a'), fail)).toThrow('bad tool');
    expect(memo.get(tools('a'), () => 7).value).toBe(7);
  });
});
