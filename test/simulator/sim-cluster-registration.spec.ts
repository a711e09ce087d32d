import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { ClusterWorkerRegistration } from '../../src/discovery/cluster/cluster-worker-registration';
import { ServerRegistry } from '../../src/servers';
import { parseCliArgs, registerInCluster } from '../../src/simulator/cli';
import { startSimWorker, type SimWorker } from '../../src/simulator';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';

describe('simulated workers joining a disagg_cluster', () => {
  let router: RunningRouter;
  const workers: SimWorker[] = [];
  const regs: ClusterWorkerRegistration[] = [];

  beforeAll(async () => {
    router = await startRouter({ disagg_cluster: { cluster_uri: 'http://localhost:8000', cluster_name: 'sim' }, health: { interval_s: 60, startup_wait_s: 0 } });
  });
  afterAll(async () => {
    for (const r of regs) await r.close();
    await router?.close();
    for (const w of workers) await w.close();
  });

  it('parses --disagg-cluster and refuses it for a mixed worker', () => {
    expect(parseCliArgs(['--role', 'context', '--disagg-cluster', 'http://r:8000', '--cluster-name', 'c'])).toMatchObject({ disaggCluster: 'http://r:8000', clusterName: 'c' });
    expect(() => parseCliArgs(['--role', 'mixed', '--disagg-cluster', 'http://r:8000'])).toThrow(/needs --role context or generation/);
    expect(() => parseCliArgs(['--role', 'context', '--disagg-cluster', 'r:8000'])).toThrow(/http:\/\/, https:\/\/ or etcd:\/\//);
  });

  it('registers each worker, which then serves the disaggregated flow', async () => {
    for (const role of ['context', 'generation'] as const) {
      const w = await startSimWorker({ role, latency: { prefillMsPerToken: 0, decodeMsPerToken: 0 }, tokenizer: 'bytes' });
      workers.push(w);
      regs.push(await registerInCluster(w, router.url, 'sim', { heartbeatIntervalS: 1, inactiveTimeoutS: 3, log: () => undefined }));
    }
    await waitFor(async () => (await fetch(`${router.url}/health`)).status === 200, 15_000, 'cluster ready');
    const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'hello there', max_tokens: 3 });
    expect(res.status).toBe(200);
    const registry = router.app.get(ServerRegistry);
    expect(registry.list().map((s) => [s.role, s.url, s.source])).toEqual([
      ['context', workers[0].url, 'cluster'],
      ['generation', workers[1].url, 'cluster'],
    ]);
  });
});
