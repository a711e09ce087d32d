import { afterAll, describe, expect, it } from '@jest/globals';
import { PromptTokenizer } from '../../src/tokenizer';
import { request } from '../routing/support/policy-harness';
import { FIXTURE_MODELS, fixtureCases, fixtureDir } from './support/fixtures';

describe('the model tokenizer gives the ids of Python transformers', () => {
  const tokenizers: PromptTokenizer[] = [];
  afterAll(async () => {
    await Promise.all(tokenizers.map((t) => t.close()));
  });

  describe.each(FIXTURE_MODELS)('%s', (model) => {
    it.each([
      [0, 0],
      [1, 0],
      [0, 64],
      [1, 64],
    ])('with %i tokenizer threads and a %i MB piece cache', async (threads, cacheMb) => {
      const tokenizer = new PromptTokenizer({ tokenizer_dir: fixtureDir(model), tokenizer_threads: threads, tokenizer_cache_mb: cacheMb });
      tokenizers.push(tokenizer);
      for (const c of fixtureCases(model)) {
        const r = request(c.body, c.kind);
        const tokens = await tokenizer.tokenize(r);
        expect({ name: c.name, ids: tokens.lists.map((l) => Array.from(l)) }).toEqual({ name: c.name, ids: [c.ids] });
        expect(tokens.tokenIds && Array.from(tokens.tokenIds)).toEqual(c.ids);
        expect(tokens.untokenized).toBeUndefined();
        // Twice: the second time from the cache.
        if (cacheMb) expect((await tokenizer.tokenize(request(c.body, c.kind))).lists.map((l) => Array.from(l))).toEqual([c.ids]);
      }
    }, 120_000);
  });
});
