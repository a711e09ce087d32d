import { mulberry32 } from '../../../src/simulator/seeded-random';

/** Text fragments that stress a tokenizer: unicode, code, whitespace runs, digits, contractions. */
const FRAGMENTS = [
  'router', 'worker', 'Cache', 'prefill', 'decode', 'TOKEN', 'block', 'hash', 'the', 'a', 'I', 'x',
  "don't", "it's", "WE'LL", "they've", "'s", "'d",
  'café', 'naïve', 'über', 'e\u0301', 'A\u030a', '東京は日本の首都です', 'こんにちは', 'カタカナ', 'Привет', 'мир', '안녕하세요', '한', 'ᄀ', 'ᅡ',
  'مرحبا', 'שלום', '🙂', '👍🏽', '🇫🇷', '∑', '≈', '½', '①', 'ﬁ', '\u00a0', '\u200b', '\ufeff',
  '12345', '3.14159', '1,000,000', '0x1F', '2026-12-04', '42',
  'function add(a, b) {\n  return a + b;\n}', 'const x = [1, 2, 3];', 'if (x) { y(); }', 'def f(x):\n    return x * 2\n', '<div class="a">', '</div>', '{"k": "v"}', 'a_b-c.d/e\\f',
  '  ', '   ', '\n', '\n\n', '\n\n\n', '\t', '\t\t', ' \n ', '\r\n', '    \n',
  '.', ',', '!', '?', '...', ';', ':', '--', '(', ')', '"', "'", '`', '#', '*', '_',
];

export type Rng = () => number;

export const rngOf = (seed: number): Rng => mulberry32(seed);
export const pick = <T>(rng: Rng, xs: readonly T[]): T => xs[Math.floor(rng() * xs.length)];
export const int = (rng: Rng, lo: number, hi: number): number => lo + Math.floor(rng() * (hi - lo + 1));

/** A run of fragments joined by spaces, nothing or newlines; sometimes cut mid-word. */
export function randomText(rng: Rng, fragments: number, specials: readonly string[] = []): string {
  let out = '';
  for (let i = 0; i < fragments; i++) {
    const r = rng();
    const f = specials.length && r < 0.02 ? pick(rng, specials) : r < 0.55 ? pick(rng, FRAGMENTS.slice(0, 12)) : pick(rng, FRAGMENTS);
    const sep = rng();
    out += (i === 0 ? '' : sep < 0.7 ? ' ' : sep < 0.85 ? '' : '\n') + f;
  }
  // Ends mid-word now and then.
  if (rng() < 0.25 && out.length > 3) out = out.slice(0, out.length - int(rng, 1, 3));
  return out;
}

export interface Message {
  role: string;
  content: string;
}

/** A conversation: an optional system prompt, then user and assistant turns alternating. */
export function randomConversation(rng: Rng, turns: number, system: string | undefined): Message[][] {
  const steps: Message[][] = [];
  const messages: Message[] = system === undefined ? [] : [{ role: 'system', content: system }];
  for (let t = 0; t < turns; t++) {
    messages.push({ role: 'user', content: randomText(rng, int(rng, 1, 40)) });
    steps.push(messages.map((m) => ({ ...m })));
    messages.push({ role: 'assistant', content: randomText(rng, int(rng, 1, 60)) });
  }
  return steps;
}
