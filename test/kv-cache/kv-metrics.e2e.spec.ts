import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startSimCluster, type SimCluster } from '../../src/simulator';
import { sampleValue, scrape } from '../observability/prom-text';
import { tokens } from '../routing/support/policy-harness';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';

const TPB = 16;
const APPLIED = 'disagg_router_kv_events_applied_total';
const POLL_ERRORS = 'disagg_router_kv_poll_errors_total';

describe('KV metrics over the real app and simulated workers', () => {
  let cluster: SimCluster;
  let router: RunningRouter;

  beforeAll(async () => {
    cluster = await startSimCluster({ context: 0, generation: 2, kvBlocks: 64, tokensPerBlock: TPB, tokenizer: 'bytes' });
    router = await startRouter({ generation_servers: { urls: cluster.generationUrls, router: { type: 'kv_cache_aware', tokens_per_block: TPB, tokenizer: 'bytes' } } });
  });
  afterAll(async () => {
    await router?.close();
    await cluster?.close();
  });

  it('counts applied events after traffic, and failed polls once a worker stops answering them', async () => {
    const before = await scrape(router.url);
    expect(sampleValue(before, APPLIED)).toBe(0);
    expect(sampleValue(before, POLL_ERRORS)).toBe(0);

    for (let i = 0; i < 4; i++) {
      const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: tokens(4 * TPB + 1, 1000 + i * 100), max_tokens: 1 });
      expect(res.status).toBe(200);
    }
    // Each finished request polls its worker: created and stored events, counted per server.
    await waitFor(async () => sampleValue(await scrape(router.url), APPLIED) >= 4, 10_000, 'applied events counted');
    const afterTraffic = await scrape(router.url);
    for (const w of cluster.generationWorkers) expect(sampleValue(afterTraffic, APPLIED, { server: w.url })).toBeGreaterThan(0);
    expect(sampleValue(afterTraffic, POLL_ERRORS)).toBe(0);

    const [failing] = cluster.generationWorkers;
    failing.setFaults({ kind: 'error', status: 500, endpoints: ['kv_cache_events'] });
    try {
      // Traffic keeps flowing; the failing worker's polls count as errors.
      await waitFor(async () => {
        const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: tokens(2 * TPB + 1, 9000), max_tokens: 1 });
        expect(res.status).toBe(200);
        return sampleValue(await scrape(router.url), POLL_ERRORS, { server: failing.url }) > 0;
      }, 10_000, 'a failed poll counted');
    } finally {
      failing.clearFaults();
    }
    const end = await scrape(router.url);
    expect(sampleValue(end, POLL_ERRORS, { server: cluster.generationWorkers[1].url })).toBe(0);
  });
});
