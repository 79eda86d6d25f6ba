/**
 * The default reply generator shared by the chat and messages APIs: a pure function of the
 * prompt text and a variant number, so the same request always gets the same words.
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

/** 32-bit FNV-1a over the UTF-16 code units. */
export function fnv1a(text: string, seed = 0x811c9dc5): number {
  let h = seed >>> 0;
  for (let i = 0; i < text.length; i++) {
    h ^= text.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return h >>> 0;
}

/** mulberry32: a tiny, fast, well-distributed 32-bit PRNG. */
function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** 2 to 5 sentences of 5 to 14 words, fixed by (prompt, variant). */
export function generateReply(prompt: string, variant = 0): string {
  const next = prng(fnv1a(prompt) ^ Math.imul(variant + 1, 0x9e3779b1));
  const pick = (n: number) => Math.floor(next() * n);
  const sentences: string[] = [];
  const count = 2 + pick(4);
  for (let s = 0; s < count; s++) {
    const length = 5 + pick(10);
    const words: string[] = [];
    for (let w = 0; w < length; w++) words.push(WORDS[pick(WORDS.length)] as string);
    const first = words[0] as string;
    words[0] = first.charAt(0).toUpperCase() + first.slice(1);
    sentences.push(`${words.join(' ')}${pick(6) === 0 ? '!' : '.'}`);
  }
  return sentences.join(' ');
}
