import { describe, expect, it } from '@jest/globals';
import { serializeKvEvents } from '../../src/kv-cache';
import { waitFor } from '../support/router-app';
import { clusterAdmin, clusterInfo, waitForOwnership } from './support/replica-cluster';
import { createdCache, storedBlocks, useScriptedWorkerReplicas } from './support/scripted-worker-replicas';


/**
 * Events a replica polled during a bus outage reach the others in its hand-over snapshot, not
 * on the stream. A replica that reads the stream without that snapshot (it started while the
 * snapshot was being rewritten, or it was gone) sees the event ids skip: its tables lack those
 * blocks until it adopts the snapshot, even one at its own position.
 */
describe('router replicas: events missing from the stream', () => {
  const fixture = useScriptedWorkerReplicas(['r1', 'r2']);
  const { replicas, drains, holds, allHold } = fixture;

  it('a replica that replays the stream past the outage adopts the hand-over snapshot at its own position', async () => {
    await waitForOwnership(replicas, 1);
    drains.push(serializeKvEvents([createdCache(1), storedBlocks(2, [41n])]));
    await allHold([41n], 'the first blocks everywhere');
    await fixture.nats.stop();
    await waitFor(async () => (await Promise.all(replicas.map(clusterInfo))).every((i) => (i.cluster as { degraded: boolean }).degraded), 10_000, 'degraded');
    drains.push(serializeKvEvents([storedBlocks(3, [42n])]));
    await waitFor(() => drains.length === 0 && replicas.some((r) => holds(r, [41n, 42n])), 10_000, 'event 3 drained in the outage');
    await fixture.nats.start();
    await waitFor(async () => (await Promise.all(replicas.map(clusterAdmin))).every((v) => v.bus.state === 'connected'), 20_000, 'reconnected');
    await allHold([41n, 42n], 'the hand-over everywhere');
    drains.push(serializeKvEvents([storedBlocks(4, [43n])]));
    await allHold([41n, 42n, 43n], 'event 4 everywhere');

    // On the stream: events 1, 2 and 4. Event 3 is in the snapshot only, which the late replica does not find at start.
    const restore = await fixture.hideSnapshot(4);
    const late = await fixture.start('late');
    await waitFor(() => holds(late, [41n, 43n]), 10_000, 'the late replica read the stream');
    const view = await clusterAdmin(late);
    expect(view.stream).toMatchObject({ gaps: 1, workers_with_gaps: [fixture.worker.url] });
    const adoptedBefore = view.snapshots.adopted;

    await restore();
    await allHold([41n, 42n, 43n], 'the late replica holds the whole cache');
    const after = await clusterAdmin(late);
    expect(after.stream).toMatchObject({ workers_with_gaps: [] });
    expect(after.snapshots.adopted).toBe(adoptedBefore + 1);

    // Whole again: the next events apply as usual.
    drains.push(serializeKvEvents([storedBlocks(5, [44n])]));
    await allHold([41n, 42n, 43n, 44n], 'event 5 everywhere');
    expect((await clusterAdmin(late)).stream).toMatchObject({ gaps: 1 });
  });
});
