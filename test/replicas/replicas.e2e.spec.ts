import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { blockKeyChain } from '../../src/kv-cache/hash-algos';
import { rendezvousOwner } from '../../src/replicas/rendezvous';
import { ReplicaBus } from '../../src/replicas/replica-bus.service';
import { tokens } from '../routing/support/policy-harness';
import { postJson, waitFor } from '../support/router-app';
import { clusterAdmin, confirmed, startReplicaCluster, TPB, waitForConvergence, waitForOwnership, type ReplicaCluster } from './support/replica-cluster';

const cachedTokens = (json: Record<string, unknown>): unknown =>
  ((json.usage as Record<string, unknown>).prompt_tokens_details as Record<string, unknown> | undefined)?.cached_tokens;

describe('router replicas share one KV view over NATS JetStream', () => {
  let cluster: ReplicaCluster;
  beforeAll(async () => {
    cluster = await startReplicaCluster({ workers: 3, replicas: 2, router: { track_routed_blocks: false } });
  });
  afterAll(async () => {
    await cluster?.close();
  });

  const complete = async (replica: number, prompt: number[]) => {
    const res = await postJson(`${cluster.replicas[replica].url}/v1/completions`, { model: 'm', prompt, max_tokens: 1 });
    expect(res.status).toBe(200);
    return res;
  };
  const homeOf = (before: number[]) => cluster.sim.generationWorkers.findIndex((w, i) => (w.stats.requests.byType.plain ?? 0) > before[i]);
  const totals = () => cluster.sim.generationWorkers.map((w) => w.stats.requests.byType.plain ?? 0);

  it('exactly one replica polls each worker, and the events it drains reach the other replica', async () => {
    const owners = await waitForOwnership(cluster.replicas, 3);
    expect(new Set(owners.values()).size).toBeGreaterThan(0);
    const P = tokens(8 * TPB + 1, 1000);
    const before = totals();
    await complete(0, P);
    const home = cluster.sim.generationWorkers[homeOf(before)];
    const chain = blockKeyChain('v1_block_key', P, TPB)!;
    // Routed-block tracking is off: only the owner's poll, through the stream, can tell r2.
    await waitFor(() => chain.slice(0, 8).every((h) => confirmed(cluster.replicas[1].app, home.url).has(h)), 10_000, 'r2 learns r1\'s blocks');
    const next = await complete(1, [...P, ...tokens(5, 9000)]);
    expect(cachedTokens(next.json)).toBe(8 * TPB);
    expect(home.stats.requests.byType.plain).toBe(before[homeOf(before)] + 2);
    await waitForConvergence(cluster);
  });

  it('spreads the workers over the replicas by rendezvous hashing, even when one replica came up first and took them all', async () => {
    const ids = cluster.replicas.map((r) => r.id);
    await waitFor(async () => {
      const views = await Promise.all(cluster.replicas.map(clusterAdmin));
      return views.every((v) => v.workers.length === 3 && v.workers.every((w) => w.owner === rendezvousOwner(w.url, ids)));
    }, 20_000, 'every worker polled by its rendezvous owner');
    await waitForConvergence(cluster);
  });

  it('a replica that dies without a word loses its workers to the others within the lease time, and no event is lost or applied twice', async () => {
    const r3 = await cluster.addReplica('r3');
    await waitForOwnership(cluster.replicas, 3);
    // Cut r1 off the bus as a crash would: its leases are not handed back, they expire.
    await cluster.replicas[0].app.get(ReplicaBus).nc!.close();
    await waitFor(async () => {
      const view = await clusterAdmin(r3);
      return view.workers.every((w) => w.owner === 'r2' || w.owner === 'r3');
    }, 15_000, 'r1\'s workers taken over');
    const survivors = cluster.replicas.slice(1);
    for (let i = 0; i < 12; i++) await complete(1 + (i % 2), tokens(6 * TPB + 1, 20_000 + (i % 4) * 500));
    await waitForConvergence(cluster, survivors);
    await cluster.replicas[0].close();
    cluster.replicas.splice(0, 1);
  });

  it('a replica that starts late catches up from the snapshots and the stream, not from zero', async () => {
    for (let i = 0; i < 9; i++) await complete(i % 2, tokens(5 * TPB + 1, 40_000 + i * 700));
    await waitForConvergence(cluster);
    // Snapshots of every worker, written after the traffic, so most of the stream is behind them.
    await waitFor(async () => (await Promise.all(cluster.replicas.map(clusterAdmin))).reduce((n, v) => n + v.snapshots.written, 0) >= 3, 10_000, 'snapshots written');
    const late = await cluster.addReplica('late');
    await waitForConvergence(cluster);
    const view = await clusterAdmin(late);
    expect(view.snapshots.adopted).toBeGreaterThan(0);
    const peer = await clusterAdmin(cluster.replicas[0]);
    expect(view.stream.received).toBeLessThan(peer.stream.last_seq);
  });
});
