import { afterAll, describe, expect, it } from '@jest/globals';
import { serializeKvEvents } from '../../src/kv-cache';
import { KvSync } from '../../src/replicas/kv-sync.service';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { clusterAdmin, TOKEN } from './support/replica-cluster';
import { storedBlocks, useScriptedWorkerReplicas } from './support/scripted-worker-replicas';

/**
 * A replica adopts the stored snapshots of the workers it knows when its bus comes up. A
 * worker it registers later (the admin API, discovery, or config servers registered at
 * bootstrap after a quick bus connection) gets its snapshot too: the snapshot watch brings
 * only later writes, and the stream's earlier messages for it were skipped while it was
 * unknown, so its table would hold only the events published after.
 */
describe('router replicas: a worker registered after the bus came up', () => {
  const fixture = useScriptedWorkerReplicas(['r1']);
  let other: FakeWorker | undefined;
  afterAll(async () => {
    await other?.close();
  });

  it('adopts the stored snapshot of a worker added through the admin API', async () => {
    fixture.drains.push(serializeKvEvents([storedBlocks(0, [7n, 8n])]));
    await fixture.allHold([7n, 8n], 'r1 polled the worker');
    await waitFor(async () => (await fixture.storedManifest())?.last_event_id === 0, 10_000, 'the snapshot of event 0');

    // The late replica knows another worker only; its bus is up and its resynchronisation done.
    other = await new FakeWorker(generationHandler()).start();
    const late = await fixture.start('late', { urls: [other.url] });
    await waitFor(async () => (await clusterAdmin(late)).bus.state === 'connected', 15_000, 'the late replica connected');
    await late.app.get(KvSync).settled();
    // Whatever the stream held for the worker was read while the late replica did not know it.
    const [r1] = fixture.replicas;
    await waitFor(async () => {
      const published = (await clusterAdmin(r1)).stream.last_seq;
      return published >= 1 && (await clusterAdmin(late)).stream.last_seq >= published;
    }, 10_000, 'the late replica read the stream');
    const before = (await clusterAdmin(late)).snapshots.adopted;

    const added = await postJson(`${late.url}/admin/v1/servers`, { url: fixture.worker.url, role: 'generation' }, { authorization: `Bearer ${TOKEN}` });
    expect(added.status).toBe(201);
    await fixture.allHold([7n, 8n], 'the late replica adopted the snapshot of the added worker');
    expect((await clusterAdmin(late)).snapshots.adopted).toBe(before + 1);

    fixture.drains.push(serializeKvEvents([storedBlocks(1, [9n])]));
    await fixture.allHold([7n, 8n, 9n], 'a later drain on both replicas');
  });
});
