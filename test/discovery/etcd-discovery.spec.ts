import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient, EtcdDiscovery, WorkerRegistration } from '../../src/discovery';
import { ServerRegistry, type ServerState } from '../../src/servers';
import { startSimWorker, type SimWorker } from '../../src/simulator';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';

/** A worker's key as trtllm-serve writes it. */
function trtllmValue(url: string, role: string): string {
  return JSON.stringify({ model: 'm', version: '1.0', timestamp: new Date().toISOString(), server_role: role, url });
}

describe('etcd discovery', () => {
  let client: Etcd3;
  let registry: ServerRegistry;
  const workers: Array<{ close(): Promise<void> }> = [];
  const registrations: WorkerRegistration[] = [];
  // Declared before the cluster: runs first, while etcd is still up.
  afterAll(() => client?.close());
  const cluster = useRouterCluster({
    etcd: true,
    config: (cluster) => ({
      metadata_server_config: { hostname: cluster.etcd.host, port: cluster.etcd.port, refresh_interval: 30 },
      // Replaced by the metadata server, as in trtllm-serve.
      generation_servers: { urls: ['127.0.0.1:9'] },
      health: { interval_s: 0.2, timeout_s: 2, failure_threshold: 2, startup_wait_s: 0 },
    }),
  });

  const server = (url: string): ServerState | undefined => registry.findByUrl('generation', url);
  const complete = () => postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: 2 });
  async function fakeWorker(): Promise<FakeWorker> {
    const w = await new FakeWorker(generationHandler()).start();
    workers.push(w);
    return w;
  }

  beforeAll(async () => {
    client = createEtcdClient({ hosts: cluster.etcd.endpoint });
    registry = cluster.router.app.get(ServerRegistry);
    await waitFor(() => cluster.router.app.get(EtcdDiscovery).connected, 20_000, 'etcd connected');
  });
  afterEach(async () => {
    // Helpers first: they would register their worker again.
    await Promise.all(registrations.splice(0).map((r) => r.close()));
    await client.delete().prefix('trtllm/').exec();
    await waitFor(() => registry.list().length === 0, 20_000, 'servers gone');
    await Promise.all(workers.splice(0).map((w) => w.close()));
  });

  it('routes to a worker once its key is put, and stops when the key is deleted', async () => {
    const worker = await fakeWorker();
    expect(registry.list()).toHaveLength(0);
    expect((await complete()).status).toBe(503);
    await client.put('trtllm/worker-a').value(trtllmValue(worker.url, 'GENERATION'));
    await waitFor(() => server(worker.url)?.status === 'ready', 20_000, 'worker ready');
    expect(server(worker.url)?.source).toBe('etcd');
    const ok = await complete();
    expect(ok.status).toBe(200);
    expect(worker.requests('/v1/completions')).toHaveLength(1);

    const info = (await (await fetch(`${cluster.router.url}/cluster_info`)).json()) as Record<string, unknown>;
    expect(info.metadata_server).toMatchObject({ connected: true, servers: 1, endpoint: cluster.etcd.endpoint });

    await client.delete().key('trtllm/worker-a').exec();
    await waitFor(() => server(worker.url) === undefined, 20_000, 'worker removed');
    const refused = await complete();
    expect(refused.status).toBe(503);
    expect(refused.json.error).toBeDefined();
    expect(worker.requests('/v1/completions')).toHaveLength(1);
  });

  it('ignores keys whose role the router does not serve, and malformed values', async () => {
    const stranger = await fakeWorker();
    const worker = await fakeWorker();
    await client.put('trtllm/encoder').value(trtllmValue(stranger.url, 'MM_ENCODER'));
    await client.put('trtllm/garbage').value('not json');
    await client.put('trtllm/no-url').value(JSON.stringify({ server_role: 'GENERATION' }));
    // Put last: once it shows up, the keys before it have been seen.
    await client.put('trtllm/worker').value(JSON.stringify({ server_type: 'generation', url: worker.url }));
    await waitFor(() => server(worker.url)?.status === 'ready', 20_000, 'worker ready');
    expect(registry.list().map((s) => s.url)).toEqual([worker.url]);
    expect(cluster.router.app.get(EtcdDiscovery).state().ignored_keys).toBe(3);
    for (let i = 0; i < 3; i++) expect((await complete()).status).toBe(200);
    expect(stranger.received).toHaveLength(0);
  });

  it('ejects a worker whose /health fails and readmits it when healthy; its key stays', async () => {
    const sick: SimWorker = await startSimWorker({ role: 'generation', tokenizer: 'bytes' });
    workers.push(sick);
    const other = await fakeWorker();
    await client.put('trtllm/sick').value(trtllmValue(sick.url, 'GENERATION'));
    await client.put('trtllm/other').value(trtllmValue(other.url, 'GENERATION'));
    await waitFor(() => server(sick.url)?.status === 'ready' && server(other.url)?.status === 'ready', 20_000, 'both ready');

    sick.setHealthy(false);
    await waitFor(() => server(sick.url)?.status === 'unhealthy', 20_000, 'sick ejected');
    expect(server(sick.url)?.ejection?.reason).toBe('health_check');
    const before = sick.stats.requests.byType.plain;
    for (let i = 0; i < 4; i++) expect((await complete()).status).toBe(200);
    expect(sick.stats.requests.byType.plain).toBe(before);
    expect(other.requests('/v1/completions').length).toBeGreaterThanOrEqual(4);

    sick.setHealthy(true);
    await waitFor(() => server(sick.url)?.status === 'ready', 20_000, 'sick readmitted');
    expect(server(sick.url)?.ejection).toBeUndefined();
    expect((await client.get('trtllm/sick').string()) !== null).toBe(true);
    for (let i = 0; i < 4; i++) expect((await complete()).status).toBe(200);
    expect(sick.stats.requests.byType.plain).toBeGreaterThan(before);
  });

  it('removes the key of a worker found dead, as trtllm-serve does', async () => {
    const doomed = await new FakeWorker(generationHandler()).start();
    await client.put('trtllm/doomed').value(trtllmValue(doomed.url, 'GENERATION'));
    await waitFor(() => server(doomed.url)?.status === 'ready', 20_000, 'doomed ready');
    await doomed.close();
    await waitFor(async () => (await client.get('trtllm/doomed').string()) === null, 20_000, 'dead key removed');
    await waitFor(() => server(doomed.url) === undefined, 20_000, 'dead server removed');
  });

  it('a worker whose key was removed as dead registers again through its helper once it is back', async () => {
    let worker: SimWorker = await startSimWorker({ role: 'generation', tokenizer: 'bytes' });
    const port = worker.port;
    const registration = await WorkerRegistration.start({ etcd: cluster.etcd.endpoint, url: worker.url, role: 'generation', ttlS: 30 });
    registrations.push(registration);
    await waitFor(() => server(worker.url)?.status === 'ready', 20_000, 'ready');
    await worker.close();
    await waitFor(async () => (await client.get(registration.key).string()) === null, 20_000, 'dead key removed');
    await waitFor(() => server(worker.url) === undefined, 20_000, 'removed');

    worker = await startSimWorker({ role: 'generation', tokenizer: 'bytes', port });
    workers.push(worker);
    await waitFor(() => server(worker.url)?.status === 'ready', 20_000, 're-registered and ready');
    expect((await complete()).status).toBe(200);
    expect(worker.stats.requests.byType.plain).toBe(1);
  });
});
