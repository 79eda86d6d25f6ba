import { fnv1a, prng } from '../platform/hash.js';
import { countTokens } from '../platform/tokens.js';

/**
 * The default reply when no rule matches, shared by the chat and messages APIs: a pure function
 * of the prompt text and a variant number, so the same request always gets the same words.
 */

const WORDS = (
  'the a an of to in and for on with as by at from that this it its into over under about ' +
  'model signal output input stream token cache prompt reply answer context result system ' +
  'request response pattern detail number record section layer value gateway message ' +
  'video frame scene camera light motion color sound shot image task status queue render ' +
  'simple exact careful steady quiet bright early later clear local small large direct open ' +
  'returns shows keeps moves builds reads writes holds sends marks takes gives finds makes ' +
  'first next each every other same different whole single final useful likely short long ' +
  'time place point part line step case way form kind rule test check plan note view path'
).split(' ');

export interface Reply {
  text: string;
  tokens: number;
}

const BANK_SIZE = 512;

/** A fixed bank of sentences (5 to 14 words), built once from a fixed seed. */
const BANK: Reply[] = (() => {
  const next = prng(0x5eed);
  const pick = (n: number) => Math.floor(next() * n);
  const bank: Reply[] = [];
  for (let s = 0; s < BANK_SIZE; s++) {
    const length = 5 + pick(10);
    const first = WORDS[pick(WORDS.length)] as string;
    let text = first.charAt(0).toUpperCase() + first.slice(1);
    for (let w = 1; w < length; w++) text += ` ${WORDS[pick(WORDS.length)]}`;
    text += pick(6) === 0 ? '!' : '.';
    bank.push({ text, tokens: countTokens(text) });
  }
  return bank;
})();

/**
 * 3 to 6 sentences from the bank, chosen by (prompt, variant). The token count comes with the
 * text (sentences end in punctuation, so their counts simply add up).
 */
export const generateReply = (prompt: string, variant = 0): Reply =>
  replyOfHash(fnv1a(prompt), variant);

/** generateReply of a prompt whose fnv1a hash is known (a request's choices share it). */
export function replyOfHash(hash: number, variant: number): Reply {
  const next = prng(hash ^ Math.imul(variant + 1, 0x9e3779b1));
  const count = 3 + Math.floor(next() * 4);
  let text = '';
  let tokens = 0;
  for (let s = 0; s < count; s++) {
    const sentence = BANK[Math.floor(next() * BANK_SIZE)] as Reply;
    text = s === 0 ? sentence.text : `${text} ${sentence.text}`;
    tokens += sentence.tokens;
  }
  return { text, tokens };
}
