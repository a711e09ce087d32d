import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { serializeKvEvents, type KvCacheEvent } from '../../src/kv-cache';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { startNats, type NatsServer } from '../support/nats-server';
import { startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { clusterAdmin, clusterInfo, confirmed, TOKEN, waitForOwnership, type Replica } from './support/replica-cluster';

const created = (id: number): KvCacheEvent => ({ event_id: id, data: { type: 'created', num_blocks_per_cache_level: [64, 0] } });
const stored = (id: number, ...hashes: bigint[]): KvCacheEvent => ({
  event_id: id,
  data: { type: 'stored', parent_hash: null, blocks: hashes.map((h) => ({ type: 'stored_block', block_hash: h, tokens: [], lora_id: null, cache_level: 0, priority: 35 })) },
});

/**
 * A restarted worker numbers its KV events from the start again. Its poller sees the ids go
 * back; the other replicas must start over too, or they skip its new events as duplicates.
 */
describe('router replicas: a worker restart reaches every replica', () => {
  let nats: NatsServer;
  let worker: FakeWorker;
  const replicas: Replica[] = [];
  /** What the worker's next drains answer, in order. */
  const drains: string[] = [];

  const start = async (id: string): Promise<Replica> => {
    const router: RunningRouter = await startRouter({
      generation_servers: { urls: [worker.url], router: { type: 'kv_cache_aware', tokenizer: 'bytes', tokens_per_block: 16 } },
      admin: { token: TOKEN },
      health: { interval_s: 0.2 },
      cluster: { bus: nats.url, replica_id: id, lease_ttl_s: 1, poll_interval_ms: 20, snapshot_interval_s: 0.2, load_interval_ms: 20 },
    });
    const replica = { ...router, id };
    replicas.push(replica);
    return replica;
  };
  const holds = (r: Replica, hashes: bigint[]): boolean => {
    const table = confirmed(r.app, worker.url);
    return table.size === hashes.length && hashes.every((h) => table.has(h));
  };
  const allHold = (hashes: bigint[], what: string) => waitFor(() => drains.length === 0 && replicas.every((r) => holds(r, hashes)), 15_000, what);

  beforeAll(async () => {
    nats = await startNats();
    worker = await new FakeWorker(generationHandler()).start();
    worker.kvEvents = () => drains.shift() ?? '[]';
    await start('r1');
    await start('r2');
  });
  afterAll(async () => {
    for (const r of replicas) await r.close().catch(() => undefined);
    await worker?.close();
    await nats?.close();
  });

  it('the owner tells the others through the stream', async () => {
    await waitForOwnership(replicas, 1);
    drains.push(serializeKvEvents([created(1), stored(2, 11n, 12n), stored(3, 13n)]));
    await allHold([11n, 12n, 13n], 'the first cache everywhere');
    // Restarted: ids 1 and 2 again, a new cache.
    drains.push(serializeKvEvents([created(1), stored(2, 21n)]));
    await allHold([21n], 'the restarted cache everywhere');
    drains.push(serializeKvEvents([stored(3, 22n)]));
    await allHold([21n, 22n], 'later events everywhere');
  });

  it('a restart seen during a bus outage reaches the others with the hand-over snapshot', async () => {
    await nats.stop();
    await waitFor(async () => (await Promise.all(replicas.map(clusterInfo))).every((i) => (i.cluster as { degraded: boolean }).degraded), 10_000, 'degraded');
    // One replica (the outage share) drains the restarted worker; the other never sees these events.
    drains.push(serializeKvEvents([created(1), stored(2, 31n)]));
    await waitFor(() => drains.length === 0 && replicas.some((r) => holds(r, [31n])), 10_000, 'the restart drained');
    expect(replicas.filter((r) => holds(r, [31n]))).toHaveLength(1);
    await nats.start();
    await waitFor(async () => (await Promise.all(replicas.map(clusterAdmin))).every((v) => v.bus.state === 'connected'), 20_000, 'reconnected');
    // The other replica's last id (3) is above the snapshot's (2): only the restart epoch says it is newer.
    await allHold([31n], 'the restarted cache everywhere after the outage');
    drains.push(serializeKvEvents([stored(3, 32n)]));
    await allHold([31n, 32n], 'later events everywhere');
  });

  it('a replica that starts after the restarts adopts the current cache', async () => {
    await waitForOwnership(replicas, 1, 20_000);
    await start('late');
    await allHold([31n, 32n], 'the late replica holds the current cache');
  });
});
