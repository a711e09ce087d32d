import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient, EtcdDiscovery } from '../../src/discovery';
import { startEtcd, type EtcdServer } from '../support/etcd-server';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';

describe('etcd discovery at startup', () => {
  let etcd: EtcdServer;
  let worker: FakeWorker;
  let router: RunningRouter | undefined;

  beforeAll(async () => {
    etcd = await startEtcd();
    worker = await new FakeWorker(generationHandler()).start();
    const client: Etcd3 = createEtcdClient({ hosts: etcd.endpoint });
    await client.put('trtllm/w').value(JSON.stringify({ server_role: 'GENERATION', url: worker.url }));
    client.close();
  });
  afterAll(async () => {
    await router?.close();
    await worker?.close();
    await etcd?.close();
  });

  it('starts while etcd is unreachable, says so, and serves the registered servers once etcd answers', async () => {
    await etcd.stop();
    router = await startRouter({
      metadata_server_config: { hostname: etcd.host, port: etcd.port, refresh_interval: 30 },
      health: { interval_s: 0.2, timeout_s: 2, startup_wait_s: 120 },
    });
    const discovery = router.app.get(EtcdDiscovery);
    const health = await fetch(`${router.url}/health`);
    expect(health.status).toBe(503);
    expect(((await health.json()) as { reason: string }).reason).toMatch(/^starting: 0 of 0 servers ready, waiting for etcd; waiting up to \d+ s more$/);
    expect(discovery.connected).toBe(false);
    const refused = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'hi' });
    expect(refused.status).toBe(503);
    expect((refused.json.error as { code: string }).code).toBe('starting');
    await waitFor(() => discovery.state().last_error !== null, 20_000, 'the failed first read recorded');

    await etcd.start();
    await waitFor(async () => (await fetch(`${router!.url}/health`)).status === 200, 30_000, 'ready once etcd answers');
    expect(discovery.connected).toBe(true);
    expect((await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: 2 })).status).toBe(200);
    expect(worker.requests('/v1/completions')).toHaveLength(1);
  });
});
