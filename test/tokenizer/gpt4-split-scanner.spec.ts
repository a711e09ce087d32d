import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WORD_CACHED_ENCODER_SOURCE } from '../../src/tokenizer/hf/word-cached-encoder-source';
import { projectRequire } from '../../src/tokenizer/package-resolver';
import { fixtureDir } from './support/fixtures';
import { int, pick, randomText, rngOf } from './support/prompt-generator';

interface Scanner {
  splitGpt4(text: string, maxDigits: number, emit: (start: number, end: number) => void): void;
  gpt4SplitDigits(pattern: unknown): number;
}

/** The word encoder's source as the tokenizer threads evaluate it, its scanner taken out. */
const scanner = new Function(`${WORD_CACHED_ENCODER_SOURCE}; return { splitGpt4, gpt4SplitDigits };`)() as Scanner;

/** The Split regex of a fixture's pre-tokenizer, as @huggingface/tokenizers compiles it. */
function compiledSplit(model: string, step = 0): RegExp {
  const { Tokenizer } = projectRequire()('@huggingface/tokenizers') as { Tokenizer: new (json: unknown, config: unknown) => { pre_tokenizer: { tokenizers: { pattern: RegExp }[] } } };
  const json = JSON.parse(fs.readFileSync(path.join(fixtureDir(model), 'tokenizer.json'), 'utf8')) as unknown;
  return new Tokenizer(json, {}).pre_tokenizer.tokenizers[step].pattern;
}

/** Code points each of the pattern's classes holds, and those it reads apart (newlines, the apostrophe, the space). */
const ODD = [
  "'", "'s", "'S", "'ll", "'LL", "'lL", "'re", "'ve", "'m", "'d", "'t", "'x", "'", "''s", 'ſ', 'K', '\u212a',
  '\r', '\n', '\r\n', '\n\r', ' ', '  ', '\t', '\u000b', '\u000c', '\u0085', '\u00a0', '\u1680', '\u2000', '\u200a', '\u2028', '\u2029', '\u202f', '\u205f', '\u3000', '\ufeff', '\u200b', '\u001c',
  '0', '7', '٣', '²', '½', 'Ⅻ', '𝟘', '𐒠', '123', '1234567', '१२३',
  'a', 'Z', 'é', 'ß', 'ǅ', 'ʰ', '々', '〇', 'ㄱ', '𝒜', '𠀀', '😀', '👍🏽', '\u0301', '\u200d',
  '\ud800', '\udc00', 'x\ud83dy', '\udfff\ud800',
  '.', '!', '(', '"', '$', '_', '-', '—', '…', '«', '€', '\u0000', '\u007f',
];

function generated(seed: number): string {
  const rng = rngOf(seed);
  const parts: string[] = [];
  for (let i = int(rng, 1, 40); i > 0; i--) parts.push(rng() < 0.5 ? pick(rng, ODD) : randomText(rng, int(rng, 1, 4)));
  return parts.join(rng() < 0.5 ? '' : pick(rng, ['', ' ', '\n', ' \n ', "'"]));
}

describe.each([
  ['qwen3', 1],
  ['llama3', 3],
])('the Split scanner for %s', (model, digits) => {
  const regex = compiledSplit(model);

  it('recognises the pattern the tokenizer compiled', () => {
    expect(scanner.gpt4SplitDigits(regex)).toBe(digits);
  });

  it('finds exactly the regex matches in 20,000 generated texts (every class, pairs, lone surrogates, newline runs, contractions)', () => {
    const differing: string[] = [];
    for (let seed = 1; seed <= 20_000; seed++) {
      const text = generated(seed);
      const want = text.match(regex) ?? [];
      const got: string[] = [];
      scanner.splitGpt4(text, digits, (start, end) => got.push(text.slice(start, end)));
      if (want.length !== got.length || want.some((w, i) => w !== got[i])) differing.push(`seed ${seed}: ${JSON.stringify(text)}`);
    }
    expect(differing.slice(0, 5)).toEqual([]);
  });
});

describe('the Split scanner elsewhere', () => {
  it('takes no other pattern: DeepSeek V3 keeps the regexes', () => {
    for (const step of [0, 1, 2]) expect(scanner.gpt4SplitDigits(compiledSplit('deepseek_v3', step))).toBe(0);
    // The same text without the unicode flag, or with another digit count, is another regex.
    const qwen = compiledSplit('qwen3');
    expect(scanner.gpt4SplitDigits(new RegExp(qwen.source, 'g'))).toBe(0);
    expect(scanner.gpt4SplitDigits(new RegExp(qwen.source.replace('\\p{N}|', '\\p{N}{1,2}|'), 'gu'))).toBe(0);
  });
});
