import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../../src/discovery';
import { ClusterWorkerRegistration } from '../../src/discovery/cluster/cluster-worker-registration';
import { ServerRegistry } from '../../src/servers';
import { contextHandler, FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';

describe('disagg_cluster in etcd (etcd:// uri)', () => {
  let client: Etcd3;
  let registry: ServerRegistry;
  // Declared before the cluster: runs first, while etcd is still up.
  afterAll(() => client?.close());
  const cluster = useRouterCluster({
    etcd: true,
    config: (cluster) => ({
      disagg_cluster: { cluster_uri: `etcd://${cluster.etcd.endpoint}`, cluster_name: 'c1', heartbeat_interval_sec: 1, inactive_timeout_sec: 2 },
      health: { interval_s: 60, startup_wait_s: 0 },
    }),
  });
  beforeAll(() => {
    client = createEtcdClient({ hosts: cluster.etcd.endpoint });
    registry = cluster.router.app.get(ServerRegistry);
  });

  it('does not serve the storage endpoints itself', async () => {
    expect((await fetch(`${cluster.router.url}/get?key=x`)).status).toBe(404);
  });

  it('routes to workers whose keys are in etcd and drops them when their leases run out', async () => {
    const ctx = await new FakeWorker(contextHandler()).start();
    const gen = await new FakeWorker(generationHandler()).start();
    const opts = { clusterUri: `etcd://${cluster.etcd.endpoint}`, clusterName: 'c1', host: '127.0.0.1', heartbeatIntervalS: 1, inactiveTimeoutS: 2 };
    const regs: ClusterWorkerRegistration[] = [];
    try {
      expect((await fetch(`${cluster.router.url}/health`)).status).toBe(503);
      regs.push(await ClusterWorkerRegistration.start({ ...opts, port: ctx.port, role: 'context' }));
      regs.push(await ClusterWorkerRegistration.start({ ...opts, port: gen.port, role: 'generation' }));
      const stored = await client.get(regs[1].key).string();
      expect(JSON.parse(stored!)).toEqual({ worker_id: regs[1].workerId, host: '127.0.0.1', port: gen.port, role: 1 });
      await waitFor(async () => (await fetch(`${cluster.router.url}/health`)).status === 200, 15_000, 'cluster ready');
      const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: 3 });
      expect(res.status).toBe(200);
      expect(gen.requests('/v1/completions')).toHaveLength(1);

      // A key of another cluster and a malformed one are not servers.
      await client.put('/trtllm-disagg/other/workers/x').value(JSON.stringify({ worker_id: 'x', host: '127.0.0.1', port: 9, role: 1 }));
      await client.put('/trtllm-disagg/c1/workers/broken').value('not json');
      expect(registry.list()).toHaveLength(2);

      regs[1].abandon();
      await waitFor(() => registry.list('generation').length === 0, 15_000, 'generation lease expired');
      expect(await client.get(regs[1].key).string()).toBeNull();
      expect(registry.list('context')).toHaveLength(1);
      expect((await fetch(`${cluster.router.url}/health`)).status).toBe(503);

      await regs[0].close();
      await waitFor(() => registry.list().length === 0, 10_000, 'context worker gone');
    } finally {
      for (const r of regs) await r.close();
      await client.delete().prefix('/trtllm-disagg/');
      await ctx.close();
      await gen.close();
    }
  });
});
