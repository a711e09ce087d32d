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
    it.each([0, 1])('with %i tokenizer threads', async (threads) => {
      const tokenizer = new PromptTokenizer({ tokenizer_dir: fixtureDir(model), tokenizer_threads: threads });
      tokenizers.push(tokenizer);
      for (const c of fixtureCases(model)) {
        const r = request(c.body, c.kind);
        const tokens = await tokenizer.tokenize(r);
        expect({ name: c.name, ids: tokens.lists }).toEqual({ name: c.name, ids: [c.ids] });
        expect(tokens.tokenIds).toEqual(c.ids);
        expect(tokens.untokenized).toBeUndefined();
      }
    }, 120_000);
  });
});
