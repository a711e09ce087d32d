import { beforeAll, describe, expect, it } from '@jest/globals';
import { postJson } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { skewWorkerClocks, waitForAlignedClocks } from '../support/worker-clocks';

interface Timing { arrival_time: number; first_token_time: number; last_token_time: number }
interface WorkerEntry { ctx_request_id: number; perf_metrics: { timing_metrics: Timing } }
interface Entry {
  ctx_server: string;
  gen_server: string;
  disagg_server_arrival_time: number;
  disagg_server_first_token_time: number | null;
  ctx_perf_metrics: WorkerEntry | null;
  gen_perf_metrics: WorkerEntry;
}

const SKEW_S = 1000;

// perf_metrics_max_requests: TensorRT-LLM's /perf_metrics, end to end against simulated workers
// that serve their own /perf_metrics and /steady_clock_offset.
describe("GET /perf_metrics in TensorRT-LLM's format", () => {
  const cluster = useRouterCluster({
    sim: { context: 1, generation: 1, latency: 'zero' },
    // Workers whose steady clocks are far off: only the router's alignment brings them in line.
    beforeRouter: (cluster) => skewWorkerClocks([...cluster.sim.contextUrls, ...cluster.sim.generationUrls], SKEW_S),
    config: (cluster) => ({
      perf_metrics_max_requests: 10,
      context_servers: { urls: cluster.sim.contextUrls },
      generation_servers: { urls: cluster.sim.generationUrls },
    }),
  });
  beforeAll(() => waitForAlignedClocks([...cluster.sim.contextUrls, ...cluster.sim.generationUrls], SKEW_S));

  it('joins the workers metrics by ctx_request_id, on clocks aligned with the router', async () => {
    for (let i = 0; i < 3; i++) {
      const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'sim-model', prompt: `hello ${i}`, max_tokens: 3, stream: i === 1 });
      expect(res.status).toBe(200);
    }
    const res = await fetch(`${cluster.router.url}/perf_metrics`);
    expect(res.status).toBe(200);
    const entries = (await res.json()) as Entry[];
    expect(entries).toHaveLength(3);
    const ctxServer = cluster.sim.contextUrls[0].replace('http://', '');
    const genServer = cluster.sim.generationUrls[0].replace('http://', '');
    for (const e of entries) {
      expect(Object.keys(e).sort()).toEqual(['ctx_perf_metrics', 'ctx_server', 'disagg_server_arrival_time', 'disagg_server_first_token_time', 'gen_perf_metrics', 'gen_server']);
      expect(e).toMatchObject({ ctx_server: ctxServer, gen_server: genServer });
      expect(e.ctx_perf_metrics!.ctx_request_id).toBe(e.gen_perf_metrics.ctx_request_id);
      expect(e.disagg_server_first_token_time).toBeGreaterThanOrEqual(e.disagg_server_arrival_time);
      // Aligned: the workers' times sit near the router's, not SKEW_S away.
      for (const t of [e.ctx_perf_metrics!.perf_metrics.timing_metrics, e.gen_perf_metrics.perf_metrics.timing_metrics]) {
        expect(Math.abs(t.arrival_time - e.disagg_server_arrival_time)).toBeLessThan(SKEW_S / 2);
      }
    }
    expect(new Set(entries.map((e) => e.gen_perf_metrics.ctx_request_id)).size).toBe(3);
    // Reading takes them.
    expect(await (await fetch(`${cluster.router.url}/perf_metrics`)).json()).toEqual([]);
  });
});
