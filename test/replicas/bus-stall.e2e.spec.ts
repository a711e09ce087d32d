import { describe, expect, it } from '@jest/globals';
import { serializeKvEvents } from '../../src/kv-cache';
import { ReplicaBus } from '../../src/replicas/replica-bus.service';
import { sampleValue, scrape } from '../observability/prom-text';
import { waitFor } from '../support/router-app';
import { clusterAdmin } from './support/replica-cluster';
import { storedBlocks, useScriptedWorkerReplicas } from './support/scripted-worker-replicas';

/**
 * The bus can stall right after a replica connected: its resynchronisation (snapshots, then
 * the stream reader) and its watches time out while the connection stays up, so no later
 * 'up' comes to redo them. They are tried again until they succeed (README "Running several
 * replicas", stalls); before, such a replica never read the stream and kept an empty view.
 */
describe('router replicas: a bus that stalls right after a replica connected', () => {
  const fixture = useScriptedWorkerReplicas(['r1']);

  it('the replica retries its resynchronisation and catches up, then follows the stream', async () => {
    fixture.drains.push(serializeKvEvents([storedBlocks(0, [7n, 8n])]));
    await fixture.allHold([7n, 8n], 'r1 polled the worker');

    // Frozen while the late replica starts, so it connects only once thawed; the moment its
    // bus is up (stream and buckets in place, resynchronisation just sent), it stalls.
    await fixture.nats.freeze(true);
    const late = await fixture.start('late');
    let stalled = false;
    late.app.get(ReplicaBus).once('up', () => {
      stalled = true;
      void fixture.nats.freeze(true);
    });
    await fixture.nats.freeze(false);
    await waitFor(() => stalled, 20_000, 'the late replica connected');
    // Its bus calls time out (the client's 2 s) while the connection stays up.
    await waitFor(async () => (await clusterAdmin(late)).bus.retries >= 1, 15_000, 'a failed resynchronisation or watch, to be retried');
    await fixture.nats.freeze(false);

    await fixture.allHold([7n, 8n], 'the late replica adopted the snapshot after its retry');
    expect(sampleValue(await scrape(late.url), 'disagg_router_cluster_bus_retries')).toBeGreaterThanOrEqual(1);
    expect((await clusterAdmin(late)).bus.state).toBe('connected');
    // Its stream reader runs: whoever polls the worker next, both replicas apply the drain.
    fixture.drains.push(serializeKvEvents([storedBlocks(1, [9n])]));
    await fixture.allHold([7n, 8n, 9n], 'a later drain on both replicas');
  });
});
