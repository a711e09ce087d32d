import { afterAll, describe, expect, it } from '@jest/globals';
import { blockKeyChain } from '../../src/kv-cache/hash-algos';
import { startSimCluster, type FaultRule, type SimCluster, type SimWorker } from '../../src/simulator';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { tokens } from './support/policy-harness';
import { allIdle, confirmsPrefix, served, stateOf } from './support/sim-helpers';

// Not the default 32: the router must adopt it from the workers.
const TPB = 16;
const cachedTokens = (json: Record<string, unknown>): unknown =>
  ((json.usage as Record<string, unknown>).prompt_tokens_details as Record<string, unknown> | undefined)?.cached_tokens;

describe('kv_cache_aware end to end: every hash algorithm, the cache salt, read-your-writes', () => {
  const open: { cluster: SimCluster; router: RunningRouter }[] = [];
  afterAll(async () => {
    for (const { cluster, router } of open) {
      await router.close();
      await cluster.close();
    }
  });
  const start = async (algo: string, pools: { context: number; generation: number }, routerArgs: Record<string, unknown>, faults: FaultRule[] = []) => {
    const cluster = await startSimCluster({ ...pools, tokensPerBlock: TPB, kvHashAlgo: algo, tokenizer: 'bytes', faults });
    // tokens_per_block left out: adopted from the workers' /server_info.
    const router = { type: 'kv_cache_aware', tokenizer: 'bytes', ...routerArgs };
    const config: Record<string, unknown> = { generation_servers: { urls: cluster.generationUrls, router } };
    if (pools.context) config.context_servers = { urls: cluster.contextUrls, router };
    const running = await startRouter(config);
    open.push({ cluster, router: running });
    return { cluster, router: running };
  };

  it.each(['v1_block_key', 'v2_sha256', 'v2_sha256_64'])('%s workers get prefix matches from their own events', async (algo) => {
    const { cluster, router } = await start(algo, { context: 0, generation: 2 }, { track_routed_blocks: false });
    const P = tokens(8 * TPB + 1, 1000);
    const chain = blockKeyChain(algo, P, TPB)!;
    const first = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: P, max_tokens: 1 });
    expect(first.status).toBe(200);
    const home = cluster.generationWorkers.find((w) => served(w).plain === 1)!;
    const state = stateOf(router.app, 'generation', home.url);
    expect(state.kvHashAlgo).toBe(algo);
    await waitFor(() => confirmsPrefix(state, chain, algo), 10_000, `${algo} stored events applied`);
    await waitFor(() => allIdle(router.app), 10_000, 'idle');
    const next = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: [...P, ...tokens(7, 9000)], max_tokens: 1 });
    expect(next.status).toBe(200);
    expect(cachedTokens(next.json)).toBe(8 * TPB);
    expect(served(home).plain).toBe(2);
  });

  it('a salted prompt matches only its own salt', async () => {
    const { cluster, router } = await start('v2_sha256', { context: 0, generation: 2 }, { track_routed_blocks: false });
    const P = tokens(8 * TPB + 1, 3000);
    const ask = (salt: string) => postJson(`${router.url}/v1/completions`, { model: 'm', prompt: P, max_tokens: 1, cache_salt: salt });
    const before = cluster.generationWorkers.map((w) => served(w).plain);
    expect((await ask('tenant-a')).status).toBe(200);
    const home = cluster.generationWorkers.find((w, i) => served(w).plain > before[i])!;
    const state = stateOf(router.app, 'generation', home.url);
    await waitFor(() => state.kvTable('v2_sha256').size >= 8, 10_000, 'salted blocks stored');
    await waitFor(() => allIdle(router.app), 10_000, 'idle');
    const other = await ask('tenant-b');
    expect(cachedTokens(other.json)).toBe(0);
    await waitFor(() => allIdle(router.app), 10_000, 'idle');
    const homeBefore = served(home).plain;
    const again = await ask('tenant-a');
    expect(cachedTokens(again.json)).toBe(8 * TPB);
    expect(served(home).plain).toBe(homeBefore + 1);
  });

  /** Pairs of identical prompts, each sent as soon as the first answer is in; how many pairs shared a context server and its cache. */
  const backToBack = async (cluster: SimCluster, router: RunningRouter, pairs: number): Promise<{ same: number; firsts: number[] }> => {
    const ctxServed = (w: SimWorker) => served(w).context_only;
    const where = (before: number[]) => cluster.contextWorkers.findIndex((w, i) => ctxServed(w) > before[i]);
    const firsts: number[] = [];
    let same = 0;
    for (let pair = 0; pair < pairs; pair++) {
      const body = { model: 'm', prompt: tokens(6 * TPB + 1, 100_000 + pair * 1000), max_tokens: 2 };
      // An unrelated prompt first on odd pairs moves the round-robin tie-break to the other server.
      if (pair % 2) expect((await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: tokens(TPB + 1, 900_000 + pair * 100), max_tokens: 1 })).status).toBe(200);
      let before = cluster.contextWorkers.map(ctxServed);
      const a = await postJson(`${router.url}/v1/completions`, body);
      const first = where(before);
      before = cluster.contextWorkers.map(ctxServed);
      const b = await postJson(`${router.url}/v1/completions`, body);
      expect([a.status, b.status]).toEqual([200, 200]);
      firsts.push(first);
      if (where(before) === first && cachedTokens(b.json) === 6 * TPB) same++;
    }
    return { same, firsts };
  };
  // Workers whose events come late (a busy executor): the repeat is routed before they arrive.
  const slowEvents: FaultRule[] = [{ kind: 'slow', endpoints: ['kv_cache_events'], delayMs: 1000 }];

  it('two identical requests back to back land on the same servers, 20 times out of 20', async () => {
    const { cluster, router } = await start('v1_block_key', { context: 2, generation: 2 }, {}, slowEvents);
    const { same, firsts } = await backToBack(cluster, router, 20);
    expect(same).toBe(20);
    // New prompts still spread over both servers: the pairs did not match by always picking one.
    expect(new Set(firsts)).toEqual(new Set([0, 1]));
    await waitFor(() => allIdle(router.app), 10_000, 'load back to zero');
  });

  it('without track_routed_blocks the repeat misses while the events are late', async () => {
    const { cluster, router } = await start('v1_block_key', { context: 2, generation: 2 }, { track_routed_blocks: false }, slowEvents);
    expect((await backToBack(cluster, router, 2)).same).toBe(0);
  });
});
