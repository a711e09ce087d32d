import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { pools, useFakeCluster } from '../support/router-cluster';
import { ServerRegistry } from '../../src/servers';
import type { PerfMetricsEntry } from '../../src/observability';

describe('GET /perf_metrics', () => {
  let off: RunningRouter;
  // Declared first, so it runs before the cluster's own: the second router leaves before the workers.
  afterAll(() => off?.close());
  const cluster = useFakeCluster({ perf_metrics: { max_requests: 3 } });
  beforeAll(async () => {
    off = await startRouter(pools(cluster.ctx, cluster.gen));
    const registry = cluster.router.app.get(ServerRegistry);
    await waitFor(() => registry.ready('generation').length === 1 && registry.ready('context').length === 1, 10_000, 'servers ready');
  });

  it('is off (404) by default', async () => {
    expect((await fetch(`${off.url}/perf_metrics`)).status).toBe(404);
  });

  it('returns the last N requests with their phases, each once', async () => {
    const before = Date.now() / 1000;
    for (let i = 0; i < 5; i++) {
      const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hi', stream: i === 4 }, { 'x-request-id': `perf-${i}` });
      expect(res.status).toBe(200);
    }
    const res = await fetch(`${cluster.router.url}/perf_metrics`);
    expect(res.status).toBe(200);
    const entries = (await res.json()) as PerfMetricsEntry[];
    expect(entries.map((e) => e.request_id)).toEqual(['perf-2', 'perf-3', 'perf-4']);
    for (const e of entries) {
      expect(e).toMatchObject({ ctx_server: cluster.ctx.url, gen_server: cluster.gen.url, endpoint: '/v1/completions', status: 200, mode: 'disagg', retries: 0, error_kind: null });
      expect(e.disagg_server_arrival_time).toBeGreaterThanOrEqual(before - 1);
      expect(e.disagg_server_first_token_time).toBeGreaterThanOrEqual(e.disagg_server_arrival_time);
      const p = e.phases;
      expect(p.context).not.toBeNull();
      expect(p.generation).not.toBeNull();
      expect(p.e2e).toBeGreaterThanOrEqual(p.context! + p.generation!);
      expect(p.time_to_first_token).toBeLessThanOrEqual(p.e2e);
      expect(p.router_overhead).toBeCloseTo(p.e2e - p.context! - p.generation!, 6);
    }
    expect(entries[2].stream).toBe(true);
    // Read once, as TensorRT-LLM's collector: a poller sees each request one time.
    expect(await (await fetch(`${cluster.router.url}/perf_metrics`)).json()).toEqual([]);
  });
});
