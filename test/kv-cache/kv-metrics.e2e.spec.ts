import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startSimCluster, type SimCluster } from '../../src/simulator';
import { sampleValue, scrape } from '../observability/prom-text';
import { tokens } from '../routing/support/policy-harness';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';

const TPB = 16;
const APPLIED = 'disagg_router_kv_events_applied_total';
const POLL_ERRORS = 'disagg_router_kv_poll_errors_total';
const POLLS = 'disagg_router_kv_polls_total';

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
    for (const w of cluster.generationWorkers) {
      expect(sampleValue(afterTraffic, APPLIED, { server: w.url })).toBeGreaterThan(0);
      expect(sampleValue(afterTraffic, POLLS, { server: w.url })).toBeGreaterThan(0);
    }
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

describe('KV polls under a burst of finishes', () => {
  let cluster: SimCluster;
  let router: RunningRouter;
  const BURST = 24;

  beforeAll(async () => {
    cluster = await startSimCluster({ context: 0, generation: 1, kvBlocks: 256, tokensPerBlock: TPB, tokenizer: 'bytes' });
    router = await startRouter({
      generation_servers: { urls: cluster.generationUrls, router: { type: 'kv_cache_aware', tokens_per_block: TPB, tokenizer: 'bytes', kv_events_min_poll_gap_s: 2 } },
    });
  });
  afterAll(async () => {
    await router?.close();
    await cluster?.close();
  });

  it('drains the worker once per gap, not once per finished request, and still applies every event', async () => {
    const [worker] = cluster.generationWorkers;
    const answers = await Promise.all(Array.from({ length: BURST }, (_, i) =>
      postJson(`${router.url}/v1/completions`, { model: 'm', prompt: tokens(3 * TPB + 1, 20_000 + i * 100), max_tokens: 1 })));
    expect(answers.map((a) => a.status)).toEqual(Array(BURST).fill(200));
    // Every prompt's 3 blocks end up applied from the worker's events (a created event too).
    await waitFor(async () => sampleValue(await scrape(router.url), APPLIED, { server: worker.url }) >= BURST + 1, 15_000, 'the burst applied');
    const polls = sampleValue(await scrape(router.url), POLLS, { server: worker.url });
    // The router's own start-up polls, the first finish's and one follow-up per 2 s gap.
    expect(polls).toBeGreaterThanOrEqual(1);
    expect(polls).toBeLessThanOrEqual(3);
  });

  it('drains a steady stream of finishes once per gap too, when each lands after the drain before it came back', async () => {
    const [worker] = cluster.generationWorkers;
    const GAP_MS = 2000;
    const windowStart = performance.now();
    const before = await scrape(router.url);
    const SEQUENTIAL = 8;
    for (let i = 0; i < SEQUENTIAL; i++) {
      const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: tokens(3 * TPB + 1, 40_000 + i * 100), max_tokens: 1 });
      expect(res.status).toBe(200);
    }
    // Every prompt's stored blocks still arrive, from the poll at the end of a gap.
    const applied = sampleValue(before, APPLIED, { server: worker.url });
    await waitFor(async () => sampleValue(await scrape(router.url), APPLIED, { server: worker.url }) >= applied + SEQUENTIAL, 15_000, 'the stream applied');
    const polls = sampleValue(await scrape(router.url), POLLS, { server: worker.url }) - sampleValue(before, POLLS, { server: worker.url });
    const windowMs = performance.now() - windowStart;
    // Poll starts at least a gap apart: one a finish found idle, then one per gap of the window.
    expect(polls).toBeGreaterThanOrEqual(1);
    expect(polls).toBeLessThanOrEqual(1 + Math.floor(windowMs / GAP_MS));
  });
});
