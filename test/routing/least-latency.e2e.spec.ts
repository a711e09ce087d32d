import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { LatencyTracker, LeastLatencyModule, LeastLatencyRouter } from '../../src/examples/least-latency';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { allIdle, routerOf } from './support/sim-helpers';

describe('a custom policy from its own module: least_latency', () => {
  let slow: FakeWorker;
  let fast: FakeWorker;
  let router: RunningRouter;
  const answer = generationHandler();

  beforeAll(async () => {
    // Half a second before the first byte against a few milliseconds: a wide margin on a busy machine.
    slow = await new FakeWorker(async (req, res, w) => {
      await new Promise((r) => setTimeout(r, 500));
      await answer(req, res, w);
    }).start();
    fast = await new FakeWorker(answer).start();
    router = await startRouter({ generation_servers: { urls: [slow.url, fast.url], router: { type: 'least_latency', alpha: 0.5 } } }, [LeastLatencyModule]);
  });
  afterAll(async () => {
    await router?.close();
    await slow?.close();
    await fast?.close();
  });

  it('is chosen by name from config and learns to avoid the slow server', async () => {
    expect(routerOf(router.app)).toBeInstanceOf(LeastLatencyRouter);
    for (let i = 0; i < 8; i++) {
      const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: `q${i}`, max_tokens: 1 });
      expect(res.status).toBe(200);
      await waitFor(() => allIdle(router.app), 10_000, 'idle');
    }
    // Each server is tried once while it has no samples; then the fast one gets the rest.
    expect(slow.requests('/v1/completions')).toHaveLength(1);
    expect(fast.requests('/v1/completions')).toHaveLength(7);
    const tracker = router.app.get(LatencyTracker);
    expect(tracker.estimate('generation', slow.url)).toBeGreaterThan(tracker.estimate('generation', fast.url)!);
    expect(routerOf(router.app).snapshot().ttft_ms).toBeDefined();
  });
});
