import { describe, expect, it } from '@jest/globals';
import { serializeKvEvents, type KvCacheEvent } from '../../src/kv-cache';
import { waitFor } from '../support/router-app';
import { clusterAdmin, clusterInfo, waitForOwnership } from './support/replica-cluster';
import { createdCache, storedBlocks, useScriptedWorkerReplicas } from './support/scripted-worker-replicas';

const stored = (id: number, ...hashes: bigint[]): KvCacheEvent => storedBlocks(id, hashes);

/**
 * A restarted worker numbers its KV events from the start again. Its poller sees the ids go
 * back; the other replicas must start over too, or they skip its new events as duplicates.
 */
describe('router replicas: a worker restart reaches every replica', () => {
  const fixture = useScriptedWorkerReplicas(['r1', 'r2']);
  const { replicas, drains, holds, allHold } = fixture;

  it('the owner tells the others through the stream', async () => {
    await waitForOwnership(replicas, 1);
    drains.push(serializeKvEvents([createdCache(1), stored(2, 11n, 12n), stored(3, 13n)]));
    await allHold([11n, 12n, 13n], 'the first cache everywhere');
    // Restarted: ids 1 and 2 again, a new cache.
    drains.push(serializeKvEvents([createdCache(1), stored(2, 21n)]));
    await allHold([21n], 'the restarted cache everywhere');
    drains.push(serializeKvEvents([stored(3, 22n)]));
    await allHold([21n, 22n], 'later events everywhere');
  });

  it('a restart seen during a bus outage reaches the others with the hand-over snapshot', async () => {
    await fixture.nats.stop();
    await waitFor(async () => (await Promise.all(replicas.map(clusterInfo))).every((i) => (i.cluster as { degraded: boolean }).degraded), 10_000, 'degraded');
    // One replica (the outage share) drains the restarted worker; the other never sees these events.
    drains.push(serializeKvEvents([createdCache(1), stored(2, 31n)]));
    await waitFor(() => drains.length === 0 && replicas.some((r) => holds(r, [31n])), 10_000, 'the restart drained');
    expect(replicas.filter((r) => holds(r, [31n]))).toHaveLength(1);
    await fixture.nats.start();
    await waitFor(async () => (await Promise.all(replicas.map(clusterAdmin))).every((v) => v.bus.state === 'connected'), 20_000, 'reconnected');
    // The other replica's last id (3) is above the snapshot's (2): only the restart epoch says it is newer.
    await allHold([31n], 'the restarted cache everywhere after the outage');
    drains.push(serializeKvEvents([stored(3, 32n)]));
    await allHold([31n, 32n], 'later events everywhere');
  });

  it('a replica that starts after the restarts adopts the current cache', async () => {
    await waitForOwnership(replicas, 1, 20_000);
    await fixture.start('late');
    await allHold([31n, 32n], 'the late replica holds the current cache');
  });

  it('a replica that replays the stream without the snapshot adopts it, though it is at the same position', async () => {
    const restore = await fixture.hideSnapshot(3);
    const replayer = await fixture.start('replayer');
    // The third epoch's events on the stream start at id 3: its ids 1 and 2 are in the snapshot only.
    await waitFor(() => holds(replayer, [21n, 22n, 32n]), 10_000, 'the replayer read the stream');
    expect((await clusterAdmin(replayer)).stream).toMatchObject({ gaps: 1, workers_with_gaps: [fixture.worker.url] });
    await restore();
    await allHold([31n, 32n], 'the replayer holds the current cache');
  });
});
