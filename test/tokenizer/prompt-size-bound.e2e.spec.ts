import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import { hfTokenizerLoader } from '../../src/tokenizer/hf/hf-tokenizer-source';
import { projectRequire } from '../../src/tokenizer/package-resolver';
import { exceedsChars, MAX_CHARS_PER_TOKEN, maxPromptChars } from '../../src/tokenizer/prompt-size-bound';
import { sampleValue, scrape } from '../observability/prom-text';
import { useFakeCluster } from '../support/router-cluster';
import { forwarded } from './support/forwarded';
import { fixtureDir } from './support/fixtures';

const NS = 'disagg_router_';
const LIMIT = 20_000;
const TOO_LONG = { reason: 'prompt_too_long', role: 'context' };

describe('prompts too long for the model are not tokenized (routed by load, forwarded as they came)', () => {
  const router = { type: 'kv_cache_aware', tokens_per_block: 32, tokenizer_threads: 1, tokenizer_dir: fixtureDir('llama3'), tokenizer_max_prompt_chars: LIMIT };
  const cluster = useFakeCluster({ context_servers: { router }, generation_servers: { router: { type: 'round_robin' } } });
  const encode = (text: string): number[] => hfTokenizerLoader()(projectRequire(), fs, fixtureDir('llama3')).encode(text, true);

  it('a text prompt within the bound is forwarded as ids; one past it as text, counted by reason', async () => {
    const before = await scrape(cluster.router.url, '/metrics');
    const short = 'word '.repeat(1000);
    expect((await forwarded(cluster, '/v1/completions', { prompt: short })).prompt).toEqual(encode(short));
    const long = 'word '.repeat(LIMIT / 5 + 1);
    expect((await forwarded(cluster, '/v1/completions', { prompt: long })).prompt).toBe(long);
    const after = await scrape(cluster.router.url, '/metrics');
    expect(sampleValue(after, `${NS}untokenized_prompts_total`, TOO_LONG) - sampleValue(before, `${NS}untokenized_prompts_total`, TOO_LONG)).toBe(1);
  }, 60_000);

  it('a chat whose messages and tools pass the bound (100k-tool requests) is neither rendered nor tokenized', async () => {
    const before = await scrape(cluster.router.url, '/metrics');
    const tools = Array.from({ length: 5_000 }, (_, i) => ({ type: 'function', function: { name: `tool_${i}`, description: 'x'.repeat(20), parameters: { type: 'object' } } }));
    const got = await forwarded(cluster, '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }], tools });
    expect(got.prompt_token_ids).toBeUndefined();
    expect(got.messages).toEqual([{ role: 'user', content: 'hi' }]);
    const after = await scrape(cluster.router.url, '/metrics');
    expect(sampleValue(after, `${NS}untokenized_prompts_total`, TOO_LONG) - sampleValue(before, `${NS}untokenized_prompts_total`, TOO_LONG)).toBe(1);
  }, 60_000);
});

describe('the bound itself', () => {
  it("comes from the model's files, a placeholder maximum ignored", () => {
    const dir = fs.mkdtempSync('/tmp/max-len-');
    try {
      fs.writeFileSync(`${dir}/tokenizer_config.json`, JSON.stringify({ model_max_length: 1e30 }));
      fs.writeFileSync(`${dir}/config.json`, JSON.stringify({ max_position_embeddings: 8192 }));
      expect(maxPromptChars(dir)).toBe(8192 * MAX_CHARS_PER_TOKEN);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
    expect(maxPromptChars(undefined)).toBe(131_072 * MAX_CHARS_PER_TOKEN);
  });

  it('counts keys and strings, stopping once past the limit', () => {
    // role (4) + content (7) + user (4) + abc (3) = 18 characters.
    expect(exceedsChars([{ role: 'user', content: 'abc' }], 18)).toBe(false);
    expect(exceedsChars([{ role: 'user', content: 'abcd' }], 18)).toBe(true);
    expect(exceedsChars(undefined, 0)).toBe(false);
  });
});
