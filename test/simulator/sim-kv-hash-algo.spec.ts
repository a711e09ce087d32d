import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { blockHashChain } from '../../src/kv-cache/block-hash';
import { v2Sha256Chain, v2Sha256x64Chain } from '../../src/kv-cache/block-hash-v2';
import { cacheSaltId } from '../../src/kv-cache/cache-salt';
import { KvStoredData, parseKvEvents } from '../../src/kv-cache/kv-events';
import { SimWorker, startSimWorker } from '../../src/simulator';
import { postJson, range } from './sim-test-helpers';

const TPB = 32;
const PROMPT = range(100, 170);

describe('simulated worker: block-hash algorithm and cache salt', () => {
  const workers = new Map<string, SimWorker>();

  beforeAll(async () => {
    for (const algo of ['v1_block_key', 'v2_sha256', 'v2_sha256_64']) {
      workers.set(algo, await startSimWorker({ role: 'mixed', tokensPerBlock: TPB, kvHashAlgo: algo, tokenizer: 'bytes' }));
    }
  });
  afterAll(async () => {
    await Promise.all([...workers.values()].map((w) => w.close()));
  });

  const drain = async (w: SimWorker) => parseKvEvents(await (await fetch(`${w.url}/kv_cache_events`, { method: 'POST' })).text());
  const storedHashes = (events: Awaited<ReturnType<typeof drain>>) =>
    events.filter((e) => e.data.type === 'stored').flatMap((e) => (e.data as KvStoredData).blocks.map((b) => b.block_hash));

  it.each([
    ['v1_block_key', (salt?: bigint) => blockHashChain(PROMPT, TPB, undefined, salt), undefined],
    ['v2_sha256', (salt?: bigint) => v2Sha256Chain(PROMPT, TPB, salt), 'v2_sha256'],
    ['v2_sha256_64', (salt?: bigint) => v2Sha256x64Chain(PROMPT, TPB, salt), 'v2_sha256_64'],
  ] as const)('%s: announced in /server_info, written on events, salted per request', async (algo, chain, tag) => {
    const w = workers.get(algo)!;
    const info = (await (await fetch(`${w.url}/server_info`)).json()) as Record<string, unknown>;
    expect(info).toMatchObject({ kv_cache_hash_algo: algo, tokens_per_block: TPB });
    await drain(w);
    expect((await postJson(`${w.url}/v1/completions`, { prompt: PROMPT, max_tokens: 1 })).status).toBe(200);
    const events = await drain(w);
    expect(storedHashes(events)).toEqual(chain());
    for (const e of events) expect(e.hash_algo).toBe(tag);
    // Another salt is another namespace: nothing cached, new blocks stored.
    const salted = await postJson(`${w.url}/v1/completions`, { prompt: PROMPT, max_tokens: 1, cache_salt: 'tenant-a' });
    expect((salted.body.usage).prompt_tokens_details).toMatchObject({ cached_tokens: 0 });
    expect(storedHashes(await drain(w))).toEqual(chain(cacheSaltId('tenant-a')));
    const again = await postJson(`${w.url}/v1/completions`, { prompt: PROMPT, max_tokens: 1, cache_salt: 'tenant-a' });
    expect((again.body.usage).prompt_tokens_details).toMatchObject({ cached_tokens: 69 });
  });

  it('refuses a bad cache_salt and an unknown algorithm', async () => {
    const w = workers.get('v2_sha256')!;
    expect((await postJson(`${w.url}/v1/completions`, { prompt: PROMPT, cache_salt: 7 })).status).toBe(400);
    await expect(startSimWorker({ kvHashAlgo: 'md5' })).rejects.toThrow(/kvHashAlgo must be one of/);
  });
});
