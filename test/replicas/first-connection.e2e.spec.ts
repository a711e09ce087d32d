import { describe, expect, it } from '@jest/globals';
import { serializeKvEvents } from '../../src/kv-cache';
import { postJson, waitFor } from '../support/router-app';
import { clusterAdmin, confirmed } from './support/replica-cluster';
import { storedBlocks, useScriptedWorkerReplicas } from './support/scripted-worker-replicas';

/**
 * A replica that starts while the bus is not reachable yet knows no peer: polling its share
 * would mean draining every worker, and what it drained would reach no other replica. It
 * routes, but polls nothing until its first connection; then it takes the lease and polls.
 */
describe('router replicas: a replica still making its first bus connection', () => {
  const fixture = useScriptedWorkerReplicas([]);

  it('routes without draining the workers, and polls once it reached the bus', async () => {
    await fixture.nats.stop();
    const r1 = await fixture.start('r1');
    fixture.drains.push(serializeKvEvents([storedBlocks(0, [7n, 8n])]));
    // Each finished request asks the worker's poller to poll it now.
    for (let i = 0; i < 3; i++) expect((await postJson(`${r1.url}/v1/completions`, { model: 'm', prompt: 'hello', max_tokens: 1 })).status).toBe(200);
    expect((await clusterAdmin(r1)).bus.state).toBe('connecting');
    expect(fixture.worker.requests('/kv_cache_events')).toHaveLength(0);

    await fixture.nats.start();
    await waitFor(() => confirmed(r1.app, fixture.worker.url).has(7n), 15_000, 'the worker polled once the bus is up');
    expect((await clusterAdmin(r1)).workers[0]?.owner).toBe('r1');
  });
});
