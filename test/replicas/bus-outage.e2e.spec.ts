import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { tokens } from '../routing/support/policy-harness';
import { postJson, waitFor } from '../support/router-app';
import { clusterAdmin, clusterInfo, startReplicaCluster, TOKEN, TPB, waitForConvergence, waitForOwnership, type Replica, type ReplicaCluster } from './support/replica-cluster';

const metric = async (r: Replica, name: string): Promise<number | undefined> => {
  const text = await (await fetch(`${r.url}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`disagg_router_cluster_${name} `));
  return line === undefined ? undefined : Number(line.split(' ')[1]);
};

const peerLoad = async (r: Replica): Promise<number> => {
  const res = await fetch(`${r.url}/admin/v1/servers`, { headers: { authorization: `Bearer ${TOKEN}` } });
  const { servers } = (await res.json()) as { servers: { peer_active_requests: number }[] };
  return servers.reduce((n, s) => n + s.peer_active_requests, 0);
};

describe('router replicas: shared load, bus outage and return', () => {
  let cluster: ReplicaCluster;
  beforeAll(async () => {
    // Each worker's first completion is slow: a request stays in flight long enough to be seen.
    cluster = await startReplicaCluster({ workers: 3, replicas: 2, faults: [{ kind: 'slow', delayMs: 1_500, count: 1, endpoints: ['completions'] }] });
  });
  afterAll(async () => {
    await cluster?.close();
  });
  const complete = (r: Replica, base: number) => postJson(`${r.url}/v1/completions`, { model: 'm', prompt: tokens(6 * TPB + 1, base), max_tokens: 1 });

  it('exports the cluster state as metrics that follow the replicas', async () => {
    await waitForOwnership(cluster.replicas, 3);
    const [r1, r2] = cluster.replicas;
    await waitFor(async () => (await metric(r1, 'replicas')) === 2 && (await metric(r2, 'replicas')) === 2, 10_000, 'replicas metric');
    expect(await metric(r1, 'bus_connected')).toBe(1);
    expect((await metric(r1, 'owned_workers'))! + (await metric(r2, 'owned_workers'))!).toBe(3);
  });

  it('a request in flight through one replica counts as load on the other', async () => {
    const [r1, r2] = cluster.replicas;
    expect(await peerLoad(r2)).toBe(0);
    const slow = complete(r1, 1_000);
    await waitFor(async () => (await peerLoad(r2)) === 1, 10_000, 'r2 sees r1\'s request');
    expect((await slow).status).toBe(200);
    await waitFor(async () => (await peerLoad(r2)) === 0, 10_000, 'r2 sees it finish');
  });

  it('without the bus each replica keeps routing and polls its own share; when it returns they resynchronise', async () => {
    const [r1, r2] = cluster.replicas;
    await cluster.nats.stop();
    await waitFor(async () => (await Promise.all(cluster.replicas.map(clusterInfo))).every((i) => (i.cluster as { degraded: boolean }).degraded), 10_000, 'degraded');
    expect(await metric(r1, 'bus_connected')).toBe(0);
    const views = await Promise.all(cluster.replicas.map(clusterAdmin));
    expect(views.map((v) => v.bus.state)).toEqual(['degraded', 'degraded']);
    // Both replicas agree on one poller per worker, from the membership they last saw.
    expect(views[0].workers).toEqual(views[1].workers);
    expect(views[0].workers.every((w) => w.owner === 'r1' || w.owner === 'r2')).toBe(true);
    for (let i = 0; i < 8; i++) expect((await complete(i % 2 ? r2 : r1, 50_000 + (i % 4) * 1_000)).status).toBe(200);
    await cluster.nats.start();
    await waitFor(async () => (await Promise.all(cluster.replicas.map(clusterAdmin))).every((v) => v.bus.state === 'connected' && v.bus.resyncs >= 1), 20_000, 'reconnected');
    expect(await metric(r2, 'bus_connected')).toBe(1);
    // What each polled alone during the outage reaches the other.
    await waitForConvergence(cluster, cluster.replicas, 20_000);
    await waitForOwnership(cluster.replicas, 3, 20_000);
  });
});
