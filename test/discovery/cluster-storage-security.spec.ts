import { describe, expect, it } from '@jest/globals';
import { request as httpRequest } from 'node:http';
import { ClusterWorkerRegistration } from '../../src/discovery/cluster/cluster-worker-registration';
import { ClusterStorageListener } from '../../src/discovery/cluster/cluster-storage-listener';
import { workerRecord } from '../../src/discovery/cluster/cluster-keys';
import { MemoryClusterStorage, STORAGE_LIMITS } from '../../src/discovery/cluster/memory-cluster-storage';
import { buildConfig, type AppConfigInput } from '../../src/config';
import { ServerRegistry } from '../../src/servers';
import { contextHandler, FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';

const KEY = 'storage-key-of-the-test';
const CLUSTER = { cluster_uri: 'http://127.0.0.1:8000', cluster_name: 'sec', heartbeat_interval_sec: 0.25, inactive_timeout_sec: 5 };
const PREFIX = '/trtllm-disagg/sec/workers';

async function call(url: string, method: string, body?: unknown, key?: string): Promise<{ status: number; json: unknown }> {
  const headers: Record<string, string> = {};
  if (body !== undefined) headers['content-type'] = 'application/json';
  if (key !== undefined) headers.authorization = `Bearer ${key}`;
  const res = await fetch(url, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, json: await res.json() };
}

/** A raw request whose head announces a body it never sends: the answer must come from the head alone. */
function headOnly(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(`${url}/set`, { method: 'POST', headers: { 'content-type': 'application/json', ...headers } }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.flushHeaders();
  });
}

function config(extra: Record<string, unknown>, top: Partial<AppConfigInput> = {}): AppConfigInput {
  return { ...top, disagg_cluster: { ...CLUSTER, ...extra } } as AppConfigInput;
}

describe('the served cluster storage with disagg_cluster.api_key', () => {
  const cluster = useRouterCluster({
    workers: { ctx: contextHandler(), gen: generationHandler() },
    config: {
      disagg_cluster: { ...CLUSTER, api_key: KEY, minimal_instances: { context_servers: 1, generation_servers: 1 } },
      health: { interval_s: 60, startup_wait_s: 0 },
    },
  });

  it("refuses every endpoint without the key (403, TensorRT-LLM's detail) and serves it with the key", async () => {
    const u = cluster.url;
    for (const [method, path, body] of [
      ['POST', 'set', { key: `${PREFIX}/x`, value: 'v' }],
      ['GET', `get?key=${PREFIX}/x`, undefined],
      ['GET', `expire?key=${PREFIX}/x&ttl=3`, undefined],
      ['DELETE', `delete?key=${PREFIX}/x`, undefined],
      ['GET', `get_prefix?key_prefix=${PREFIX}`, undefined],
    ] as const) {
      expect(await call(`${u}/${path}`, method, body)).toEqual({ status: 403, json: { detail: 'Not authenticated' } });
      expect(await call(`${u}/${path}`, method, body, 'wrong')).toEqual({ status: 403, json: { detail: 'Invalid API key' } });
    }
    expect(await call(`${u}/set`, 'POST', { key: 'k/a', value: 'v1' }, KEY)).toEqual({ status: 200, json: { result: true } });
    expect(await call(`${u}/get?key=k/a`, 'GET', undefined, KEY)).toEqual({ status: 200, json: { result: 'v1' } });
    expect(await call(`${u}/delete?key=k/a`, 'DELETE', undefined, KEY)).toEqual({ status: 200, json: { result: true } });
  });

  it("keeps prompts on the registered workers: an anonymous overwrite or delete of their keys is refused", async () => {
    const registry = cluster.router.app.get(ServerRegistry);
    const opts = { clusterUri: cluster.url, clusterName: CLUSTER.cluster_name, host: '127.0.0.1', heartbeatIntervalS: 0.25, inactiveTimeoutS: 5, apiKey: KEY };
    const regs = [
      await ClusterWorkerRegistration.start({ ...opts, port: cluster.ctx.port, role: 'context' }),
      await ClusterWorkerRegistration.start({ ...opts, port: cluster.gen.port, role: 'generation' }),
    ];
    const attacker = await new FakeWorker(generationHandler()).start();
    try {
      await waitFor(async () => (await fetch(`${cluster.url}/health`)).status === 200, 10_000, 'cluster ready');
      const hijack = workerRecord(regs[1].workerId, '127.0.0.1', attacker.port, 'generation');
      expect((await call(`${cluster.url}/set`, 'POST', { key: regs[1].key, value: hijack, overwrite_if_exists: true })).status).toBe(403);
      expect((await call(`${cluster.url}/delete?key=${encodeURIComponent(regs[0].key)}`, 'DELETE')).status).toBe(403);
      for (let i = 0; i < 20; i++) {
        expect((await postJson(`${cluster.url}/v1/completions`, { model: 'm', prompt: `secret ${i}`, max_tokens: 2 })).status).toBe(200);
      }
      expect(attacker.requests('/v1/completions')).toHaveLength(0);
      expect(cluster.gen.requests('/v1/completions').length).toBeGreaterThanOrEqual(20);
      expect(registry.list().map((s) => s.url).sort()).toEqual([cluster.ctx.url, cluster.gen.url].sort());
    } finally {
      for (const r of regs) await r.close();
      await attacker.close();
    }
  });

  it('answers a body over the limit from its head, before reading it (413), and one of unknown length 411', async () => {
    const tooLarge = await headOnly(cluster.url, { authorization: `Bearer ${KEY}`, 'content-length': String(20 * 1024 * 1024) });
    expect(tooLarge.status).toBe(413);
    expect(JSON.parse(tooLarge.body)).toEqual({ detail: expect.stringContaining('exceeds') });
    const chunked = await headOnly(cluster.url, { authorization: `Bearer ${KEY}`, 'transfer-encoding': 'chunked' });
    expect(chunked.status).toBe(411);
    // Refused without the key first: an anonymous client learns nothing about the limits.
    expect((await headOnly(cluster.url, { 'content-length': String(20 * 1024 * 1024) })).status).toBe(403);
  });
});

describe('the served cluster storage bounds what a client can make it hold', () => {
  const cluster = useRouterCluster({
    config: { disagg_cluster: { ...CLUSTER, minimal_instances: { context_servers: 0, generation_servers: 0 } }, admin: { allowed_hosts: ['127.0.0.1', 'localhost'] } },
  });

  it('refuses an oversized key or value (413) and stores one at the limit', async () => {
    const u = cluster.url;
    expect((await call(`${u}/set`, 'POST', { key: 'k/big', value: 'x'.repeat(16 * 1024 + 1) })).status).toBe(413);
    expect((await call(`${u}/set`, 'POST', { key: `k/${'x'.repeat(1024)}`, value: 'v' })).status).toBe(413);
    expect(await call(`${u}/set`, 'POST', { key: 'k/edge', value: 'x'.repeat(16 * 1024) })).toEqual({ status: 200, json: { result: true } });
    expect((await call(`${u}/delete?key=k/edge`, 'DELETE')).status).toBe(200);
  });

  it('ignores odd worker records without a 500: a 100k-character host, a host with spaces, a host not in allowed_hosts', async () => {
    const registry = cluster.router.app.get(ServerRegistry);
    const records = [
      JSON.stringify({ worker_id: 'w1', host: 'h'.repeat(100_000).slice(0, 16_000), port: 8001, role: 0 }),
      JSON.stringify({ worker_id: 'w2', host: 'a b/c', port: 8001, role: 0 }),
      JSON.stringify({ worker_id: 'w3', host: '10.1.2.3', port: 8001, role: 1 }),
      JSON.stringify({ worker_id: 'x'.repeat(300), host: '127.0.0.1', port: 8001, role: 1 }),
      '{"worker_id": "w5", "host": "127.0.0.1", "port": 8001, "role": {"a": 1}}',
    ];
    for (const [i, value] of records.entries()) {
      expect((await call(`${cluster.url}/set`, 'POST', { key: `${PREFIX}/odd-${i}`, value, overwrite_if_exists: true })).status).toBe(200);
    }
    // A valid record after them is taken: the odd ones were looked at and left out.
    const ok = workerRecord('good', '127.0.0.1', 8009, 'context');
    expect((await call(`${cluster.url}/set`, 'POST', { key: `${PREFIX}/good`, value: ok })).status).toBe(200);
    await waitFor(() => registry.list().length === 1, 5_000, 'the valid worker');
    expect(registry.list()[0].url).toBe('http://127.0.0.1:8009');
    for (const key of [...records.keys()].map((i) => `odd-${i}`).concat('good')) await call(`${cluster.url}/delete?key=${PREFIX}/${key}`, 'DELETE');
  });
});

describe('disagg_cluster.storage_listener', () => {
  const cluster = useRouterCluster({
    workers: { ctx: contextHandler(), gen: generationHandler() },
    config: {
      disagg_cluster: { ...CLUSTER, storage_listener: { host: '127.0.0.1', port: 0 } },
      health: { interval_s: 60, startup_wait_s: 0 },
    },
  });

  it('serves the storage on its own address only, and workers register through it', async () => {
    const storageUrl = cluster.router.app.get(ClusterStorageListener).url!;
    expect(storageUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect((await fetch(`${cluster.url}/get?key=k`)).status).toBe(404);
    const opts = { clusterUri: storageUrl, clusterName: CLUSTER.cluster_name, host: '127.0.0.1', heartbeatIntervalS: 0.25, inactiveTimeoutS: 5 };
    const regs = [
      await ClusterWorkerRegistration.start({ ...opts, port: cluster.ctx.port, role: 'context' }),
      await ClusterWorkerRegistration.start({ ...opts, port: cluster.gen.port, role: 'generation' }),
    ];
    try {
      await waitFor(async () => (await fetch(`${cluster.url}/health`)).status === 200, 10_000, 'cluster ready');
      expect((await postJson(`${cluster.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: 2 })).status).toBe(200);
    } finally {
      for (const r of regs) await r.close();
    }
  });
});

describe('where the storage may be served without a key (checked at start)', () => {
  it('refuses a non-loopback listener or cluster_uri without api_key, naming the ways out', () => {
    expect(() => buildConfig(config({}, { hostname: '0.0.0.0' }))).toThrow(/without credentials on 0\.0\.0\.0 \(hostname\).*disagg_cluster\.api_key/s);
    expect(() => buildConfig(config({ cluster_uri: 'http://10.0.0.1:8000' }))).toThrow(/cluster_uri: http:\/\/10\.0\.0\.1:8000 is not loopback/);
    expect(() => buildConfig(config({ storage_listener: { host: '0.0.0.0', port: 9000 } }))).toThrow(/storage_listener\.host/);
    expect(() => buildConfig(config({ api_key: '' }))).toThrow(/api_key: is empty/);
  });

  it('accepts a key, a loopback-only scope, a loopback storage listener, or an explicit allow_unauthenticated', () => {
    expect(buildConfig(config({ api_key: 'k' }, { hostname: '0.0.0.0' })).disagg_cluster?.api_key).toBe('k');
    expect(buildConfig(config({ cluster_uri: 'http://[::1]:8000' }, { hostname: 'localhost' })).disagg_cluster).toBeDefined();
    expect(buildConfig(config({ storage_listener: { host: '127.0.0.1', port: 9000 } }, { hostname: '0.0.0.0' })).disagg_cluster?.storage_listener?.port).toBe(9000);
    expect(buildConfig(config({ allow_unauthenticated: true, cluster_uri: 'http://10.0.0.1:8000' }, { hostname: '0.0.0.0' })).disagg_cluster?.allow_unauthenticated).toBe(true);
    expect(buildConfig(config({ cluster_uri: 'etcd://10.0.0.1:2379' }, { hostname: '0.0.0.0' })).disagg_cluster).toBeDefined();
    expect(buildConfig(config({}), 'env test', { DISAGG_CLUSTER_API_KEY: 'from-env' }).disagg_cluster?.api_key).toBe('from-env');
  });

  it("the register helper, as TensorRT-LLM's storage client, never sends a key over plain http off loopback", async () => {
    await expect(
      ClusterWorkerRegistration.start({ clusterUri: 'http://10.0.0.1:8000', host: '127.0.0.1', port: 1, role: 'context', apiKey: 'k' }),
    ).rejects.toThrow(/plain http to the non-loopback host 10\.0\.0\.1/);
  });
});

describe('MemoryClusterStorage bounds', () => {
  it('holds at most STORAGE_LIMITS.keys keys and totalBytes bytes; a delete or an expiry makes room again', () => {
    let now = 0;
    const storage = new MemoryClusterStorage(() => now);
    for (let i = 0; i < STORAGE_LIMITS.keys; i++) expect(storage.set(`k/${i}`, 'v')).toBe('set');
    expect(storage.set('k/one-more', 'v')).toBe('full');
    // An overwrite of a key held is no new key.
    expect(storage.set('k/0', 'w', { overwrite: true })).toBe('set');
    expect(storage.delete('k/1')).toBe(true);
    expect(storage.set('k/one-more', 'v', { ttlS: 1 })).toBe('set');
    now += 2_000;
    expect(storage.get('k/one-more')).toBeUndefined();
    for (let i = 0; i < STORAGE_LIMITS.keys; i++) storage.delete(`k/${i}`);
    expect(storage.size).toBe(0);

    const value = 'x'.repeat(STORAGE_LIMITS.valueBytes);
    const fit = Math.floor(STORAGE_LIMITS.totalBytes / (value.length + 8));
    for (let i = 0; i < fit; i++) expect(storage.set(`b/${String(i).padStart(4, '0')}`, value)).toBe('set');
    expect(storage.set('b/over', value)).toBe('full');
    expect(storage.set('b/0000', value, { overwrite: true })).toBe('set');
  });
});
