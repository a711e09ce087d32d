import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient, EtcdDiscovery, WorkerRegistration } from '../../src/discovery';
import { ServerRegistry } from '../../src/servers';
import { startEtcd, type EtcdServer } from '../support/etcd-server';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';

describe('etcd outage and restart', () => {
  let etcd: EtcdServer;
  let router: RunningRouter;
  let first: FakeWorker;
  let second: FakeWorker;
  const registrations: WorkerRegistration[] = [];

  beforeAll(async () => {
    etcd = await startEtcd();
    first = await new FakeWorker(generationHandler()).start();
    second = await new FakeWorker(generationHandler()).start();
    registrations.push(await WorkerRegistration.start({ etcd: etcd.endpoint, url: first.url, role: 'generation', ttlS: 30 }));
    router = await startRouter({
      metadata_server_config: { hostname: etcd.host, port: etcd.port, refresh_interval: 2 },
      health: { interval_s: 0.2, timeout_s: 2, startup_wait_s: 0 },
    });
  });
  afterAll(async () => {
    await router?.close();
    await Promise.all(registrations.map((r) => r.close()));
    await first?.close();
    await second?.close();
    await etcd?.close();
  });

  it('keeps routing to the known servers while etcd is down, and picks up new keys once it is back', async () => {
    const registry = router.app.get(ServerRegistry);
    const discovery = router.app.get(EtcdDiscovery);
    const ready = (url: string) => registry.findByUrl('generation', url)?.status === 'ready';
    const complete = () => postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: 2 });
    const etcdGauge = async () => /^disagg_router_etcd_connected (\d)$/m.exec(await (await fetch(`${router.url}/metrics`)).text())?.[1];
    await waitFor(() => ready(first.url), 20_000, 'first worker ready');
    expect((await complete()).status).toBe(200);

    await etcd.stop();
    await waitFor(() => !discovery.connected, 30_000, 'outage noticed');
    const info = (await (await fetch(`${router.url}/cluster_info`)).json()) as { metadata_server: Record<string, unknown> };
    expect(info.metadata_server).toMatchObject({ connected: false, servers: 1 });
    expect(info.metadata_server.disconnected_since).not.toBeNull();
    expect(info.metadata_server.last_error).toEqual(expect.any(String));
    expect(await etcdGauge()).toBe('0');
    // Not a 503 while the servers still work.
    expect((await fetch(`${router.url}/health`)).status).toBe(200);
    const served = first.requests('/v1/completions').length;
    for (let i = 0; i < 3; i++) expect((await complete()).status).toBe(200);
    expect(first.requests('/v1/completions').length).toBe(served + 3);

    await etcd.start();
    registrations.push(await WorkerRegistration.start({ etcd: etcd.endpoint, url: second.url, role: 'generation', ttlS: 30 }));
    await waitFor(() => ready(second.url), 30_000, 'second worker picked up after the restart');
    await waitFor(() => discovery.connected, 30_000, 'reconnected');
    expect(ready(first.url)).toBe(true);
    expect(await etcdGauge()).toBe('1');
    for (let i = 0; i < 4; i++) expect((await complete()).status).toBe(200);
    expect(second.requests('/v1/completions').length).toBeGreaterThan(0);
  });
});
