import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { hfTokenizerLoader, hfWordEncoderLoader } from '../../src/tokenizer/hf/hf-tokenizer-source';
import { projectRequire } from '../../src/tokenizer/package-resolver';
import { FIXTURE_MODELS, fixtureDir } from './support/fixtures';
import { int, pick, randomText, rngOf } from './support/prompt-generator';

/**
 * The word-cached piece encoder against the library's own encode, text by text: generated
 * texts with every kind of added token of the tokenizer inside them (special or not, with
 * lstrip/rstrip), decomposed unicode the normalizer composes, words longer than the word cache
 * keeps, and enough distinct words to overflow and clear that cache. Seeded.
 */
const BYTE_LEVEL_MODELS = ['llama3', 'deepseek_v3', 'qwen3'];
const CASES = Number(process.env.WORD_ENCODER_CASES ?? 400);

describe.each(FIXTURE_MODELS)('the piece encoder of %s', (model) => {
  const dir = fixtureDir(model);
  const hf = hfTokenizerLoader()(projectRequire(), fs, dir);
  const json = JSON.parse(fs.readFileSync(path.join(dir, 'tokenizer.json'), 'utf8')) as { added_tokens?: { content: string }[] };
  const addedTokens = (json.added_tokens ?? []).map((t) => t.content);
  const differ = (want: number[], got: number[]): boolean => want.length !== got.length || want.some((id, i) => id !== got[i]);
  // Each text without special tokens (encodePiece, encodeFast) and with them (encodeFast).
  const mismatches = (texts: string[]): string[] =>
    texts.filter((text) => {
      const plain = hf.encode(text, false);
      return differ(plain, hf.encodePiece(text)) || differ(plain, hf.encodeFast(text, false)) || differ(hf.encode(text, true), hf.encodeFast(text, true));
    });

  it(BYTE_LEVEL_MODELS.includes(model) ? 'is the word-cached encoder (a byte-level BPE)' : 'is the library encode (not a byte-level BPE)', () => {
    expect(hf.fastPieces).toBe(BYTE_LEVEL_MODELS.includes(model));
  });

  it('gives the library ids for generated texts with added tokens inside', () => {
    const rng = rngOf(7);
    const texts: string[] = [];
    for (let i = 0; i < CASES; i++) {
      const added = Array.from({ length: int(rng, 0, 3) }, () => pick(rng, addedTokens));
      texts.push(randomText(rng, int(rng, 1, 30), added) + (rng() < 0.3 ? pick(rng, addedTokens) : ''));
    }
    expect(mismatches(texts)).toEqual([]);
  });

  it('gives the library ids where added tokens are cut short, run into each other or overlap', () => {
    const rng = rngOf(17);
    const texts: string[] = [];
    for (let i = 0; i < CASES; i++) {
      const token = pick(rng, addedTokens);
      const other = pick(rng, addedTokens);
      const cut = token.slice(0, int(rng, 1, Math.max(1, token.length - 1)));
      // A prefix of one token, a token glued to the tail of another, a token inside a token.
      const joins = [cut + token, token.slice(1) + other, cut + cut + other.slice(0, -1), token + token.slice(0, -1), `${cut}x${other}${cut}`];
      texts.push(randomText(rng, int(rng, 0, 6), []) + pick(rng, joins) + randomText(rng, int(rng, 0, 6), []));
    }
    expect(mismatches(texts)).toEqual([]);
  });

  it(BYTE_LEVEL_MODELS.includes(model) ? 'has a model-free word encoder that learns words and then needs no model' : 'has no model-free word encoder', () => {
    const words = hfWordEncoderLoader()(projectRequire(), fs, dir);
    expect(words !== null).toBe(BYTE_LEVEL_MODELS.includes(model));
    if (!words) return;
    const rng = rngOf(13);
    const texts = Array.from({ length: 60 }, () => randomText(rng, int(rng, 1, 30), addedTokens.slice(0, 20)));
    for (const text of texts) {
      let tried = words.tryEncode(text);
      if (tried.missing) {
        for (const word of tried.missing) words.learn(word, hf.encodeWord!(word));
        tried = words.tryEncode(text);
      }
      expect(tried.ids).toEqual(hf.encode(text, false));
    }
    // Seen once, a text is made of known words: no model needed.
    expect(texts.every((text) => words.tryEncode(text).missing === undefined)).toBe(true);
  });

  it('gives the library ids for decomposed unicode, long words and a word cache that overflows', () => {
    const rng = rngOf(11);
    const long = ['x'.repeat(300), 'ab'.repeat(200), `${'é'.repeat(150)}e\u0301${'9'.repeat(40)}`, '\u00a0'.repeat(400), '  \n'.repeat(120)];
    // 70,000 distinct words outrun the word cache (65,536 entries): it is cleared and refilled.
    const many: string[] = [];
    for (let i = 0; i < 70; i++) many.push(Array.from({ length: 1000 }, (_, k) => `w${(i * 1000 + k).toString(36)}q`).join(' '));
    const decomposed = Array.from({ length: 50 }, () => randomText(rng, 20).normalize('NFD'));
    expect(mismatches([...long, ...many, ...decomposed, ...many.slice(0, 5)])).toEqual([]);
  });
});
