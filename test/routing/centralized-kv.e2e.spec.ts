import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { randomBytes } from 'node:crypto';
import { Push } from 'zeromq';
import { encodeEventReportFrame } from '../../src/kv-events-zmq';
import { RouterRegistry, type CentralizedKvCacheAwareRouter } from '../../src/routing';
import { startSimWorker, type SimWorker } from '../../src/simulator';
import { scrape, sampleValue } from '../observability/prom-text';
import { unusedPort } from '../support/free-port';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { tokens } from './support/policy-harness';

const TPB = 32;
const KEY = randomBytes(32);
const P = tokens(6 * TPB + 1, 1000);
const Q = tokens(6 * TPB + 1, 20_000);

type Body = { disaggregated_params?: { request_type?: string; route_hint?: { dp_rank?: number } } };
const lastBody = (w: SimWorker): Body => w.received[w.received.length - 1] as Body;

/**
 * Simulated workers with two data-parallel ranks push KV events and load over real ZMQ (signed
 * with TLLM_CENTRALIZED_ROUTER_HMAC_KEY) to the router's endpoint; requests go over real HTTP.
 */
describe('centralized_kv_cache_aware over real ZMQ', () => {
  let port: number;
  let ctx: SimWorker[];
  let gen: SimWorker[];
  let router: RunningRouter;
  const savedKey = process.env.TLLM_CENTRALIZED_ROUTER_HMAC_KEY;

  const central = (role: 'context' | 'generation') => router.app.get(RouterRegistry).router(role) as CentralizedKvCacheAwareRouter;
  const known = (role: 'context' | 'generation', w: SimWorker) => central(role).snapshot().workers as Record<string, { ranks?: Record<string, { blocks: number }> }>;
  const rankBlocks = (role: 'context' | 'generation', w: SimWorker, rank: number) => known(role, w)[w.workerId]?.ranks?.[rank]?.blocks ?? 0;

  beforeAll(async () => {
    port = await unusedPort();
    process.env.TLLM_CENTRALIZED_ROUTER_HMAC_KEY = KEY.toString('base64');
    const reports = { address: `tcp://127.0.0.1:${port}`, hmacKey: KEY, eventIntervalMs: 10, loadIntervalMs: 50 };
    const sim = { dpRanks: 2, tokensPerBlock: TPB, tokenizer: 'bytes', kvReports: reports } as const;
    ctx = [await startSimWorker({ ...sim, role: 'context' }), await startSimWorker({ ...sim, role: 'context' })];
    gen = [await startSimWorker({ ...sim, role: 'generation' }), await startSimWorker({ ...sim, role: 'generation' })];
    const policy = { type: 'centralized_kv_cache_aware', router_port: port, router_host: '127.0.0.1', tokens_per_block: TPB, tokenizer: 'bytes', load_suspend_s: 5, stale_timeout_s: 2 };
    router = await startRouter({
      context_servers: { urls: ctx.map((w) => w.url), router: policy },
      generation_servers: { urls: gen.map((w) => w.url), router: policy },
      metrics: { enabled: true },
    });
    // Every rank of every worker has reported its load: all are candidates.
    await waitFor(() => [...ctx.map((w) => known('context', w)), ...gen.map((w) => known('generation', w))].every((k) => Object.keys(k).length > 0), 15_000, 'load reports of all workers');
  });
  afterAll(async () => {
    await router?.close();
    for (const w of [...(ctx ?? []), ...(gen ?? [])]) await w.close();
    if (savedKey === undefined) delete process.env.TLLM_CENTRALIZED_ROUTER_HMAC_KEY;
    else process.env.TLLM_CENTRALIZED_ROUTER_HMAC_KEY = savedKey;
  });

  it('sends a shared prefix to the instance and rank holding it, route_hint.dp_rank in both bodies', async () => {
    const before = await scrape(router.url);
    // Context worker 1 holds P on rank 1, generation worker 0 on rank 0: their pushed events say so.
    ctx[1].kvRanks[1].admit(P);
    gen[0].kvRanks[0].admit(P);
    await waitFor(() => rankBlocks('context', ctx[1], 1) >= 6 && rankBlocks('generation', gen[0], 0) >= 6, 10_000, 'stored events pushed');

    for (let turn = 0; turn < 3; turn++) {
      const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: [...P, ...tokens(7, 90_000 + 10 * turn)], max_tokens: 3 });
      expect(res.status).toBe(200);
      // The context rank reused the cached prefix.
      expect((res.json.usage as { prompt_tokens_details?: { cached_tokens?: number } }).prompt_tokens_details?.cached_tokens).toBeGreaterThanOrEqual(6 * TPB);
      expect(lastBody(ctx[1]).disaggregated_params).toMatchObject({ request_type: 'context_only', route_hint: { dp_rank: 1 } });
      expect(lastBody(gen[0]).disaggregated_params).toMatchObject({ request_type: 'generation_only', route_hint: { dp_rank: 0 } });
    }
    expect(ctx[1].stats.requests.byDpRank[1]).toBe(3);
    expect(gen[0].stats.requests.byDpRank[0]).toBe(3);
    expect(ctx[0].stats.requests.byType.context_only).toBe(0);
    const after = await scrape(router.url);
    for (const kind of ['events', 'load']) {
      expect(sampleValue(after, 'disagg_router_kv_reports_total', { kind })).toBeGreaterThan(sampleValue(before, 'disagg_router_kv_reports_total', { kind }));
    }
  });

  it('drops a report with a bad HMAC and counts it; the intruder is never routed to', async () => {
    const metric = async () => sampleValue(await scrape(router.url), 'disagg_router_kv_reports_dropped_total', { reason: 'bad_hmac' });
    const before = await metric();
    const push = new Push({ linger: 0 });
    push.connect(`tcp://127.0.0.1:${port}`);
    try {
      const stored = { event_id: 1, data: { type: 'stored', parent_hash: null, blocks: ctx[1].kvRanks[1].chainFor(P).map((h) => ({ type: 'stored_block', block_hash: h })) } };
      const forged = encodeEventReportFrame({ workerId: 'intruder:rank0', namespace: 'ctx', seq: 0, events: [stored], isFullSnapshot: true }, randomBytes(32));
      await push.send(forged);
      await waitFor(async () => (await metric()) > before, 10_000, 'bad_hmac counted');
    } finally {
      push.close();
    }
    expect(await metric()).toBe(before + 1);
    expect(Object.keys(known('context', ctx[0]))).not.toContain('intruder');
  });

  it('forgets a worker that stops pushing (stale) and routes its prefix elsewhere', async () => {
    ctx[0].kvRanks[0].admit(Q);
    await waitFor(() => rankBlocks('context', ctx[0], 0) >= 6, 10_000, 'Q stored on context worker 0');
    const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: Q, max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(lastBody(ctx[0]).disaggregated_params).toMatchObject({ route_hint: { dp_rank: 0 } });
    const evictedBefore = sampleValue(await scrape(router.url), 'disagg_router_kv_report_workers_evicted_total');

    await ctx[0].stopKvReports();
    await waitFor(() => known('context', ctx[0])[ctx[0].workerId] === undefined, 15_000, 'worker 0 evicted as stale');
    expect(sampleValue(await scrape(router.url), 'disagg_router_kv_report_workers_evicted_total')).toBeGreaterThan(evictedBefore);
    const served0 = ctx[0].stats.requests.byType.context_only;
    const again = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: Q, max_tokens: 2 });
    expect(again.status).toBe(200);
    expect(ctx[0].stats.requests.byType.context_only).toBe(served0);
    expect(lastBody(ctx[1]).disaggregated_params).toHaveProperty('route_hint');
  });
});
