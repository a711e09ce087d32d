import { describe, expect, it } from '@jest/globals';
import * as fs from 'node:fs';
import { unpack } from 'msgpackr';
import { ChatTemplates } from '../../src/tokenizer/hf/chat-template';
import { hfTokenizerLoader } from '../../src/tokenizer/hf/hf-tokenizer-source';
import { projectRequire } from '../../src/tokenizer/package-resolver';
import { sampleValue, scrape } from '../observability/prom-text';
import { postJson } from '../support/router-app';
import type { ReceivedRequest } from '../support/fake-worker';
import { useFakeCluster } from '../support/router-cluster';
import { forwarded } from './support/forwarded';
import { fixtureDir } from './support/fixtures';
import { int, randomText, rngOf } from './support/prompt-generator';

const NS = 'disagg_router_';
const CACHE_MB = 1;
const kvRouter = (model: string) => ({ type: 'kv_cache_aware', tokens_per_block: 32, tokenizer_threads: 1, tokenizer_cache_mb: CACHE_MB, tokenizer_dir: fixtureDir(model) });

describe('the tokenizer piece cache, seen from outside', () => {
  const cluster = useFakeCluster({ context_servers: { router: kvRouter('qwen3') }, generation_servers: { router: { type: 'round_robin' } } });
  const dir = fixtureDir('qwen3');
  const whole = hfTokenizerLoader()(projectRequire(), fs, dir);
  const templates = new ChatTemplates(dir);

  it('a growing chat is forwarded with the ids of the whole encode, its earlier turns from the cache', async () => {
    const before = await scrape(cluster.router.url, '/prometheus/metrics');
    const rng = rngOf(27);
    const messages = [{ role: 'system', content: randomText(rng, 300) }];
    for (let turn = 0; turn < 4; turn++) {
      messages.push({ role: 'user', content: randomText(rng, int(rng, 50, 150)) });
      const got = await forwarded(cluster, '/v1/chat/completions', { messages });
      expect(got.prompt_token_ids).toEqual(whole.encode(templates.render({ messages, add_generation_prompt: true }), false));
      messages.push({ role: 'assistant', content: randomText(rng, int(rng, 50, 150)) });
    }
    const after = await scrape(cluster.router.url, '/prometheus/metrics');
    const delta = (name: string, labels: Record<string, string> = {}): number => sampleValue(after, NS + name, labels) - sampleValue(before, NS + name, labels);
    expect(delta('tokenizer_cache_pieces_total', { result: 'hit' })).toBeGreaterThanOrEqual(3);
    expect(delta('tokenizer_cache_tokens_total', { result: 'hit' })).toBeGreaterThan(delta('tokenizer_cache_tokens_total', { result: 'miss' }) / 4);
    expect(sampleValue(after, `${NS}tokenizer_cache_bytes`)).toBeGreaterThan(0);
  }, 60_000);

  it('stays within its size: pieces past it are evicted', async () => {
    const before = await scrape(cluster.router.url, '/prometheus/metrics');
    const rng = rngOf(2027);
    // Distinct ~20 KB prompts, cut into ~1 KB pieces: well past 1 MB in all.
    for (let i = 0; i < 70; i++) await forwarded(cluster, '/v1/completions', { prompt: randomText(rng, 3000) });
    const after = await scrape(cluster.router.url, '/prometheus/metrics');
    expect(sampleValue(after, `${NS}tokenizer_cache_evictions_total`)).toBeGreaterThan(sampleValue(before, `${NS}tokenizer_cache_evictions_total`));
    expect(sampleValue(after, `${NS}tokenizer_cache_bytes`)).toBeLessThanOrEqual(CACHE_MB * 1024 * 1024);
  }, 120_000);
});

describe('a tokenizer that cannot cut plain text', () => {
  const cluster = useFakeCluster({ context_servers: { router: kvRouter('gemma3') }, generation_servers: { router: { type: 'round_robin' } } });

  it('encodes a long prompt whole, counted by reason', async () => {
    const before = await scrape(cluster.router.url, '/prometheus/metrics');
    const prompt = randomText(rngOf(5), 450);
    expect(prompt.length).toBeGreaterThan(2048);
    const got = await forwarded(cluster, '/v1/completions', { prompt });
    expect(got.prompt).toEqual(hfTokenizerLoader()(projectRequire(), fs, fixtureDir('gemma3')).encode(prompt, true));
    const after = await scrape(cluster.router.url, '/prometheus/metrics');
    const key = { reason: 'normalizer' };
    expect(sampleValue(after, `${NS}tokenizer_uncut_prompts_total`, key) - sampleValue(before, `${NS}tokenizer_uncut_prompts_total`, key)).toBe(1);
  }, 60_000);
});

describe('tokenized ids to msgpack workers', () => {
  const cluster = useFakeCluster({
    http_session: { body_encoding: 'msgpack' },
    context_servers: { router: kvRouter('qwen3') },
    generation_servers: { router: kvRouter('qwen3') },
  });
  const dir = fixtureDir('qwen3');
  const whole = hfTokenizerLoader()(projectRequire(), fs, dir);
  const templates = new ChatTemplates(dir);
  const inference = (calls: ReceivedRequest[]): ReceivedRequest[] => calls.filter((r) => r.path.startsWith('/v1/'));
  const idsOf = (call: ReceivedRequest): unknown => (unpack(call.raw) as Record<string, unknown>).prompt_token_ids;

  it('go out as a msgpack list of integers, never as binary', async () => {
    const rng = rngOf(31);
    const messages = [{ role: 'system', content: randomText(rng, 400) }, { role: 'user', content: randomText(rng, 200) }];
    const expected = whole.encode(templates.render({ messages, add_generation_prompt: true }), false);
    expect(expected.length).toBeGreaterThan(64);
    // Twice: the second time every piece comes from the cache.
    for (let round = 0; round < 2; round++) {
      const ctxBefore = cluster.ctx.received.length;
      const genBefore = cluster.gen.received.length;
      const res = await postJson(`${cluster.router.url}/v1/chat/completions`, { model: 'served-name', max_tokens: 4, messages });
      expect(res.status).toBe(200);
      const [ctxCall] = inference(cluster.ctx.received.slice(ctxBefore));
      const [genCall] = inference(cluster.gen.received.slice(genBefore));
      // The generation body carries the ids the context worker answered with (the fake's own).
      for (const call of [ctxCall, genCall]) {
        expect(call.encoding).toBe('msgpack');
        expect(Array.isArray(idsOf(call))).toBe(true);
      }
      expect(idsOf(ctxCall)).toEqual(expected);
    }
  }, 60_000);
});
