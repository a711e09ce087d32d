import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { hfTokenizerLoader } from '../../src/tokenizer/hf/hf-tokenizer-source';
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
  const mismatches = (texts: string[]): string[] =>
    texts.filter((text) => {
      const want = hf.encode(text, false);
      const got = hf.encodePiece(text);
      return want.length !== got.length || want.some((id, i) => id !== got[i]);
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
