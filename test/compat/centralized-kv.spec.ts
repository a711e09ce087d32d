import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RouterRegistry } from '../../src/routing';
import { startSimWorker, type SimWorker } from '../../src/simulator';
import { unusedPort } from '../support/free-port';
import { postJson, waitFor } from '../support/router-app';
import { startThroughCli, tokenIds, TRTLLM_FLAGS, writeConfig } from './compat-support';

// A TensorRT-LLM config with router type centralized_kv_cache_aware in both pools, started
// through the command line; simulated workers with two data-parallel ranks push unsigned reports.
const TPB = 32;
const P = tokenIds(5 * TPB + 1, 3000);

describe('compat: disagg_config_centralized_kv.yaml', () => {
  let ctx: SimWorker[];
  let gen: SimWorker[];
  let router: Awaited<ReturnType<typeof startThroughCli>>;

  beforeAll(async () => {
    const port = await unusedPort();
    const sim = { dpRanks: 2, tokensPerBlock: TPB, tokenizer: 'bytes', kvReports: { address: `tcp://127.0.0.1:${port}`, loadIntervalMs: 50 } };
    ctx = [await startSimWorker({ ...sim, role: 'context' }), await startSimWorker({ ...sim, role: 'context' })];
    gen = [await startSimWorker({ ...sim, role: 'generation' }), await startSimWorker({ ...sim, role: 'generation' })];
    const hp = (w: SimWorker) => `127.0.0.1:${w.port}`;
    const file = writeConfig('disagg_config_centralized_kv.yaml', { port, ctx0: hp(ctx[0]), ctx1: hp(ctx[1]), gen0: hp(gen[0]), gen1: hp(gen[1]) });
    router = await startThroughCli(['disaggregated', '-c', file, ...TRTLLM_FLAGS]);
  });
  afterAll(async () => {
    await router?.close();
    for (const w of [...(ctx ?? []), ...(gen ?? [])]) await w.close();
  });

  const snapshot = (role: 'context' | 'generation') => router.app.get(RouterRegistry).router(role).snapshot();

  it('runs TensorRT-LLM arguments per pool, both pools on one endpoint', () => {
    expect(snapshot('context')).toMatchObject({ policy: 'centralized_kv_cache_aware', namespace: 'ctx', args: { rank_routing_algo: 'instance', load_weight: 0.25, tokens_per_block: TPB } });
    expect(snapshot('generation')).toMatchObject({ policy: 'centralized_kv_cache_aware', namespace: 'gen', args: { rank_routing_algo: 'adp', stale_timeout_s: 30 } });
    expect(snapshot('context').router_endpoint).toBe(snapshot('generation').router_endpoint);
  });

  it('routes a cached prefix to its rank and writes route_hint.dp_rank into the worker bodies', async () => {
    ctx[0].kvRanks[1].admit(P);
    gen[1].kvRanks[0].admit(P);
    const blocks = (role: 'context' | 'generation', w: SimWorker, rank: number) =>
      ((snapshot(role).workers as Record<string, { ranks?: Record<string, { blocks: number }> }>)[w.workerId]?.ranks?.[rank]?.blocks ?? 0);
    await waitFor(() => blocks('context', ctx[0], 1) >= 5 && blocks('generation', gen[1], 0) >= 5, 15_000, 'pushed stored events');
    const res = await postJson(`${router.url}/v1/completions`, { model: 'sim-model', prompt: [...P, 7, 8, 9], max_tokens: 4 });
    expect(res.status).toBe(200);
    const body = (w: SimWorker) => w.received[w.received.length - 1] as { disaggregated_params?: Record<string, unknown> };
    expect(body(ctx[0]).disaggregated_params).toMatchObject({ request_type: 'context_only', route_hint: { dp_rank: 1 } });
    expect(body(gen[1]).disaggregated_params).toMatchObject({ request_type: 'generation_only', route_hint: { dp_rank: 0 } });
    expect(ctx[0].stats.requests.byDpRank[1]).toBe(1);
    expect(gen[1].stats.requests.byDpRank[0]).toBe(1);
  });
});
