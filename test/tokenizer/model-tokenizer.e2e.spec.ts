import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { createRouterApp } from '../../src/app.factory';
import { buildConfig } from '../../src/config';
import { useFakeCluster, type FakeClusterHandle } from '../support/router-cluster';
import { postJson } from '../support/router-app';
import { fakeHubCache, fixtureCases, fixtureDir } from './support/fixtures';

const MODELS = ['llama3', 'deepseek_v3', 'gemma3'];
const CASES = ['completion_plain', 'completion_unicode', 'completion_long', 'chat_multi_turn', 'chat_tools', 'chat_unicode'];
const kvRouter = (extra: Record<string, unknown> = {}) => ({ type: 'kv_cache_aware', tokens_per_block: 32, tokenizer_threads: 1, ...extra });

async function send(cluster: FakeClusterHandle, kind: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
  const before = cluster.ctx.received.length;
  const res = await postJson(`${cluster.router.url}/v1/${kind === 'chat' ? 'chat/completions' : 'completions'}`, { max_tokens: 4, ...body });
  expect(res.status).toBe(200);
  const received = cluster.ctx.received.slice(before).filter((r) => r.method === 'POST' && r.path.startsWith('/v1/'));
  expect(received).toHaveLength(1);
  return received[0].body!;
}

describe('workers receive the ids of the model tokenizer', () => {
  let cache: string;
  const savedCache = process.env.HF_HUB_CACHE;

  beforeAll(() => {
    cache = mkdtempSync(path.join(os.tmpdir(), 'hf-hub-'));
    fakeHubCache(cache, Object.fromEntries(MODELS.map((m) => [`test-org/${m}`, m])));
    process.env.HF_HUB_CACHE = cache;
  });
  const cluster = useFakeCluster({ context_servers: { router: kvRouter() }, generation_servers: { router: { type: 'round_robin' } } });
  afterAll(() => {
    if (savedCache === undefined) delete process.env.HF_HUB_CACHE;
    else process.env.HF_HUB_CACHE = savedCache;
    rmSync(cache, { recursive: true, force: true });
  });

  it.each(MODELS)('%s, found in the Hugging Face cache by the request model', async (model) => {
    for (const c of fixtureCases(model).filter((x) => CASES.includes(x.name))) {
      const got = await send(cluster, c.kind, { ...c.body, model: `test-org/${model}` });
      if (c.kind === 'completion') expect({ case: c.name, prompt: got.prompt }).toEqual({ case: c.name, prompt: c.ids });
      else {
        expect({ case: c.name, ids: got.prompt_token_ids }).toEqual({ case: c.name, ids: c.ids });
        expect(got.messages).toEqual(c.body.messages);
      }
    }
  }, 120_000);

  it('an unknown model keeps its text, is routed by load only and counted', async () => {
    const prompt = 'No tokenizer anywhere for this one.';
    const got = await send(cluster, 'completion', { model: 'nobody/unknown-model', prompt });
    expect(got.prompt).toBe(prompt);
    const chat = await send(cluster, 'chat', { model: 'nobody/unknown-model', messages: [{ role: 'user', content: prompt }] });
    expect(chat.prompt_token_ids).toBeUndefined();
    expect(chat.messages).toEqual([{ role: 'user', content: prompt }]);
    const metrics = await (await fetch(`${cluster.router.url}/prometheus/metrics`)).text();
    expect(metrics).toMatch(/disagg_router_untokenized_prompts_total\{role="context",reason="no_tokenizer"\} 2/);
  }, 60_000);
});

describe('tokenizer_dir', () => {
  const cluster = useFakeCluster({ context_servers: { router: kvRouter({ tokenizer_dir: fixtureDir('gemma3') }) }, generation_servers: { router: { type: 'round_robin' } } });

  it('tokenizes every model with the configured tokenizer', async () => {
    for (const c of fixtureCases('gemma3').filter((x) => CASES.includes(x.name))) {
      const got = await send(cluster, c.kind, { ...c.body, model: 'served-name' });
      expect({ case: c.name, ids: c.kind === 'chat' ? got.prompt_token_ids : got.prompt }).toEqual({ case: c.name, ids: c.ids });
    }
  }, 120_000);

  it.each(['tokenizer_dir', 'custom_tokenizer'])('a %s that cannot be loaded refuses to start, naming the key', async (key) => {
    const missing = path.join(os.tmpdir(), 'no-such-tokenizer-dir');
    const config = buildConfig({ context_servers: { urls: ['127.0.0.1:1'], router: { type: 'kv_cache_aware', [key]: missing } }, generation_servers: { urls: ['127.0.0.1:1'] } });
    await expect(createRouterApp(config, { logger: false }).then((app) => app.init())).rejects.toThrow(new RegExp(`context_servers\\.router\\.${key}: cannot load the tokenizer`));
  });

  it('a tokenizer_dir with a broken tokenizer.json refuses to start', async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'broken-tokenizer-'));
    try {
      writeFileSync(path.join(dir, 'tokenizer.json'), '{"model": ');
      const config = buildConfig({ context_servers: { urls: ['127.0.0.1:1'], router: { type: 'kv_cache_aware', tokenizer_dir: dir } }, generation_servers: { urls: ['127.0.0.1:1'] } });
      await expect(createRouterApp(config, { logger: false }).then((app) => app.init())).rejects.toThrow(/context_servers\.router\.tokenizer_dir: cannot load the tokenizer/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
