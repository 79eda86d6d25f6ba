import { describe, expect, it } from 'vitest';
import { fnv1a } from '../../src/platform/hash.js';
import { countTokens } from '../../src/platform/tokens.js';
import { defaultPlan, type Turn, type TurnMemo } from '../../src/text/agent.js';
import { generateReply, replyOfHash } from '../../src/text/default-reply.js';
import { finishText } from '../../src/text/finish.js';
import { replyPrompt } from '../../src/text/replies.js';

describe('reply generator', () => {
  it('is a pure function of prompt and variant', () => {
    expect(generateReply('Tell me a story')).toEqual(generateReply('Tell me a story'));
    expect(generateReply('Tell me a story', 1)).toEqual(generateReply('Tell me a story', 1));
  });

  it('gives different prompts and variants different texts', () => {
    const texts = new Set<string>();
    for (let i = 0; i < 2000; i++) texts.add(generateReply(`prompt number ${i}`).text);
    expect(texts.size).toBe(2000);
    expect(generateReply('same', 0).text).not.toBe(generateReply('same', 1).text);
  });

  it('writes 3 to 6 capitalised sentences and knows their token count', () => {
    for (let i = 0; i < 200; i++) {
      const { text, tokens } = generateReply(String(i));
      const sentences = text.split(/(?<=[.!]) /);
      expect(sentences.length).toBeGreaterThanOrEqual(3);
      expect(sentences.length).toBeLessThanOrEqual(6);
      for (const s of sentences) expect(s).toMatch(/^[A-Z][a-z ]+[.!]$/);
      expect(tokens).toBe(countTokens(text));
    }
  });

  it('hashes with FNV-1a', () => {
    expect(fnv1a('')).toBe(0x811c9dc5);
    expect(fnv1a('a')).toBe(0xe40c292c);
  });
});

describe('finishText', () => {
  const text = 'Alpha beta. Gamma delta. Epsilon.';
  const reply = { text, tokens: countTokens(text) };

  it('ends naturally when nothing cuts it', () => {
    expect(finishText(reply, [], undefined)).toEqual({
      text,
      tokens: countTokens(text),
      reason: 'end',
      stopSequence: null,
    });
  });

  it('cuts before the earliest stop sequence', () => {
    expect(finishText(reply, ['Epsilon', '. Gamma'], 100)).toEqual({
      text: 'Alpha beta',
      tokens: 3,
      reason: 'stop_sequence',
      stopSequence: '. Gamma',
    });
  });

  it('cuts at max tokens when that comes first', () => {
    expect(finishText(reply, ['Epsilon'], 4)).toEqual({
      text: 'Alpha beta.',
      tokens: 4,
      reason: 'max_tokens',
      stopSequence: null,
    });
  });
});

describe('replyPrompt', () => {
  const text = (m: { content: string }) => m.content;
  it('keys on the last run of user turns, else the whole conversation', () => {
    const turn = (role: string, content: string) => ({ role, content });
    expect(replyPrompt([turn('user', 'a'), turn('assistant', 'b'), turn('user', 'c')], text)).toBe(
      'c',
    );
    expect(replyPrompt([turn('user', 'a'), turn('user', 'b'), turn('assistant', 'p')], text)).toBe(
      'a\nb',
    );
    expect(replyPrompt([turn('system', 's'), turn('assistant', 'p')], text)).toBe('s\np');
  });
});

describe('a request read once for all its choices', () => {
  const turn = (memo?: TurnMemo): Turn => ({
    api: 'chat',
    model: 'm',
    prompt: 'What is the weather?',
    variant: 0,
    userTurns: 1,
    results: [],
    tools: [],
    choice: { mode: 'none', parallel: true },
    output: undefined,
    thinking: true,
    ...(memo ? { memo } : {}),
  });

  it("hashes the prompt once: every choice's reply and thinking come from the memo the copies share", async () => {
    const memo: TurnMemo = {};
    const shared = turn(memo);
    const plans = [];
    for (let variant = 0; variant < 3; variant++)
      plans.push(await defaultPlan({ ...shared, variant }));
    expect(memo.hash).toBe(fnv1a(shared.prompt));
    expect(memo.snippet).toBe(shared.prompt);
    // the same words as a turn without a memo (each choice hashing the prompt itself)
    for (let variant = 0; variant < 3; variant++) {
      expect(plans[variant]).toEqual(await defaultPlan({ ...turn(), variant }));
    }
    // and the memo is what is read: a hash put there is the one used
    const planted = turn({ prompt: shared.prompt, hash: 12345 });
    expect((await defaultPlan(planted)).text).toBe(replyOfHash(12345, 0).text);
    // a copy with another prompt does not read the first prompt's memo
    const other = { ...planted, prompt: 'Another question' };
    expect((await defaultPlan(other)).text).toBe(generateReply('Another question', 0).text);
  });
});
