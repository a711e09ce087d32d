import { describe, expect, it } from '@jest/globals';
import { LatencyTracker, LeastLatencyModule, LeastLatencyRouter } from '../../src/examples/least-latency';
import { generationHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { allIdle, routerOf } from './support/sim-helpers';

describe('a custom policy from its own module: least_latency', () => {
  const answer = generationHandler();
  const cluster = useRouterCluster({
    workers: {
      // Half a second before the first byte against a few milliseconds: a wide margin on a busy machine.
      slow: async (req, res, w) => {
        await new Promise((r) => setTimeout(r, 500));
        await answer(req, res, w);
      },
      fast: answer,
    },
    config: (cluster) => ({ generation_servers: { urls: [cluster.slow.url, cluster.fast.url], router: { type: 'least_latency', alpha: 0.5 } } }),
    imports: [LeastLatencyModule],
  });

  it('is chosen by name from config and learns to avoid the slow server', async () => {
    expect(routerOf(cluster.router.app)).toBeInstanceOf(LeastLatencyRouter);
    for (let i = 0; i < 8; i++) {
      const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: `q${i}`, max_tokens: 1 });
      expect(res.status).toBe(200);
      await waitFor(() => allIdle(cluster.router.app), 10_000, 'idle');
    }
    // Each server is tried once while it has no samples; then the fast one gets the rest.
    expect(cluster.slow.requests('/v1/completions')).toHaveLength(1);
    expect(cluster.fast.requests('/v1/completions')).toHaveLength(7);
    const tracker = cluster.router.app.get(LatencyTracker);
    expect(tracker.estimate('generation', cluster.slow.url)).toBeGreaterThan(tracker.estimate('generation', cluster.fast.url)!);
    expect(routerOf(cluster.router.app).snapshot().ttft_ms).toBeDefined();
  });
});
