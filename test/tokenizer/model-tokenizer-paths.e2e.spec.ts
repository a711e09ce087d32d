import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { allowConfiguredTokenizerDir, ModelTokenizerResolver } from '../../src/tokenizer';
import { useFakeCluster } from '../support/router-cluster';
import { postJson } from '../support/router-app';
import { fakeHubCache, fixtureDir } from './support/fixtures';

/**
 * The request's `model` picks a tokenizer, and comes from the client: it must never make the
 * router open a directory of its choosing. Only a hub id in the Hugging Face cache and the
 * configured tokenizer directories resolve.
 */
const dir = fixtureDir('gemma3');
const relativeToCwd = path.relative(process.cwd(), dir);
const HOSTILE_MODELS = [
  dir,
  `${dir}/../models`,
  `/proc/self/cwd/${relativeToCwd}`,
  `/proc/self/root${dir}`,
  `${'/proc/self/root'.repeat(8)}${dir}`,
  relativeToCwd,
  `./${relativeToCwd}`,
  `test-org/../../${relativeToCwd}`,
];

describe('request model names and tokenizer directories', () => {
  let cache: string;
  const savedCache = process.env.HF_HUB_CACHE;
  beforeAll(() => {
    cache = mkdtempSync(path.join(os.tmpdir(), 'hf-hub-paths-'));
    fakeHubCache(cache, { 'test-org/gemma3': 'gemma3' });
    process.env.HF_HUB_CACHE = cache;
  });
  afterAll(() => {
    if (savedCache === undefined) delete process.env.HF_HUB_CACHE;
    else process.env.HF_HUB_CACHE = savedCache;
    rmSync(cache, { recursive: true, force: true });
  });
  const cluster = useFakeCluster({ context_servers: { router: { type: 'kv_cache_aware', tokens_per_block: 32, tokenizer_threads: 1 } } });

  async function sentBody(model: string): Promise<Record<string, unknown>> {
    const before = cluster.ctx.received.length;
    const res = await postJson(`${cluster.url}/v1/chat/completions`, { model, max_tokens: 2, messages: [{ role: 'user', content: 'which tokenizer?' }] });
    expect(res.status).toBe(200);
    return cluster.ctx.received.slice(before).find((r) => r.path === '/v1/chat/completions')!.body!;
  }

  it('a hub id in the Hugging Face cache resolves', async () => {
    expect((await sentBody('test-org/gemma3')).prompt_token_ids).toEqual(expect.arrayContaining([2]));
  }, 60_000);

  it.each(HOSTILE_MODELS)('a path never opens a tokenizer: %s', async (model) => {
    const body = await sentBody(model);
    expect(body.prompt_token_ids).toBeUndefined();
    expect(body.messages).toEqual([{ role: 'user', content: 'which tokenizer?' }]);
  });

  it('refused names count as untokenized prompts', async () => {
    const metrics = await (await fetch(`${cluster.url}/prometheus/metrics`)).text();
    const count = Number(/disagg_router_untokenized_prompts_total\{role="context",reason="no_tokenizer"\} (\d+)/.exec(metrics)?.[1]);
    expect(count).toBeGreaterThanOrEqual(HOSTILE_MODELS.length);
  });
});

describe('the model-name resolver', () => {
  it('resolves a configured tokenizer directory by its path, and nothing else outside the cache', () => {
    const resolver = new ModelTokenizerResolver();
    const llama = fixtureDir('llama3');
    expect(resolver.resolve(llama)).toBeUndefined();
    allowConfiguredTokenizerDir(llama);
    expect(new ModelTokenizerResolver().resolve(llama)?.dir).toBe(llama);
    expect(new ModelTokenizerResolver().resolve(fixtureDir('deepseek_v3'))).toBeUndefined();
  });

  it('keeps a bounded number of names, however many a client invents', () => {
    const resolver = new ModelTokenizerResolver({ maxLoaded: 2, maxUnknown: 50 });
    for (let i = 0; i < 2_000; i++) expect(resolver.resolve(`nobody-${i}/model-${i}`)).toBeUndefined();
    expect(resolver.resolve('x'.repeat(3_000_000))).toBeUndefined();
    expect(resolver.size).toEqual({ found: 0, unknown: 50 });
  });
});
