import { describe, expect, it } from '@jest/globals';
import { ClusterWorkerRegistration } from '../../src/discovery/cluster/cluster-worker-registration';
import { ServerRegistry } from '../../src/servers';
import { contextHandler, FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, waitFor, type RunningRouter } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';

const CLUSTER = { cluster_uri: 'http://127.0.0.1:8000', cluster_name: 'test_cluster', heartbeat_interval_sec: 0.25, inactive_timeout_sec: 1.5 };

async function call(url: string, method: string, body?: unknown): Promise<{ status: number; json: unknown }> {
  const res = await fetch(url, { method, headers: body ? { 'content-type': 'application/json' } : undefined, body: body ? JSON.stringify(body) : undefined });
  return { status: res.status, json: await res.json() };
}

describe('disagg_cluster storage served by the router (http uri)', () => {
  const cluster = useRouterCluster({
    config: { disagg_cluster: { ...CLUSTER, minimal_instances: { context_servers: 1, generation_servers: 1 } }, health: { interval_s: 60, startup_wait_s: 0 } },
  });

  it('speaks TensorRT-LLM cluster storage protocol: {"result": ...}, 200 when truthy, 400 otherwise', async () => {
    const u = cluster.router.url;
    expect(await call(`${u}/set`, 'POST', { key: 'k/a', value: 'v1' })).toEqual({ status: 200, json: { result: true } });
    expect(await call(`${u}/set`, 'POST', { key: 'k/a', value: 'v2' })).toEqual({ status: 400, json: { result: false } });
    expect(await call(`${u}/set`, 'POST', { key: 'k/a', value: 'v2', overwrite_if_exists: true })).toEqual({ status: 200, json: { result: true } });
    expect(await call(`${u}/get?key=k/a`, 'GET')).toEqual({ status: 200, json: { result: 'v2' } });
    expect(await call(`${u}/get?key=missing`, 'GET')).toEqual({ status: 400, json: { result: null } });
    expect(await call(`${u}/set`, 'POST', { key: 'k/b', value: 'v3', ttl: 30 })).toEqual({ status: 200, json: { result: true } });
    expect(await call(`${u}/get_prefix?key_prefix=k/`, 'GET')).toEqual({ status: 200, json: { result: { 'k/a': 'v2', 'k/b': 'v3' } } });
    expect(await call(`${u}/get_prefix?key_prefix=k/&keys_only=1`, 'GET')).toEqual({ status: 200, json: { result: { 'k/a': '', 'k/b': '' } } });
    expect(await call(`${u}/get_prefix?key_prefix=none/`, 'GET')).toEqual({ status: 400, json: { result: {} } });
    expect(await call(`${u}/expire?key=k/b&ttl=10`, 'GET')).toEqual({ status: 200, json: { result: true } });
    expect(await call(`${u}/expire?key=missing&ttl=10`, 'GET')).toEqual({ status: 400, json: { result: false } });
    expect(await call(`${u}/delete?key=k/a`, 'DELETE')).toEqual({ status: 200, json: { result: true } });
    expect(await call(`${u}/delete?key=k/a`, 'DELETE')).toEqual({ status: 400, json: { result: false } });
    expect((await call(`${u}/set`, 'POST', { value: 'no key' })).status).toBe(422);
    expect((await call(`${u}/expire?key=k/b&ttl=soon`, 'GET')).status).toBe(422);
    await call(`${u}/delete?key=k/b`, 'DELETE');
  });

  it('routes to workers once they register, refuses traffic below minimal_instances, and drops them when their heartbeats stop', async () => {
    const ctx = await new FakeWorker(contextHandler()).start();
    const gen = await new FakeWorker(generationHandler()).start();
    const registry = cluster.router.app.get(ServerRegistry);
    const regs: ClusterWorkerRegistration[] = [];
    try {
      const health = await fetch(`${cluster.router.url}/health`);
      expect(health.status).toBe(503);
      expect(((await health.json()) as { reason: string }).reason).toContain('0/1 context, 0/1 generation');
      const early = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hi' });
      expect(early.status).toBe(503);
      expect((early.json.error as { code: string }).code).toBe('cluster_not_ready');

      const opts = { clusterUri: cluster.router.url, clusterName: CLUSTER.cluster_name, host: '127.0.0.1', heartbeatIntervalS: 0.25, inactiveTimeoutS: 1.5 };
      regs.push(await ClusterWorkerRegistration.start({ ...opts, port: ctx.port, role: 'context' }));
      regs.push(await ClusterWorkerRegistration.start({ ...opts, port: gen.port, role: 'generation' }));
      await waitFor(async () => (await fetch(`${cluster.router.url}/health`)).status === 200, 10_000, 'cluster ready');

      const info = (await (await fetch(`${cluster.router.url}/cluster_info`)).json()) as Record<string, any>;
      expect(info.is_ready).toBe(true);
      expect(info.minimal_instances).toEqual({ context_servers: 1, generation_servers: 1 });
      expect(info.current_workers.context_servers).toEqual([{ worker_id: regs[0].workerId, host: '127.0.0.1', port: ctx.port, role: 0 }]);
      expect(info.current_workers.generation_servers).toEqual([{ worker_id: regs[1].workerId, host: '127.0.0.1', port: gen.port, role: 1 }]);
      expect(regs[0].key).toBe(`/trtllm-disagg/test_cluster/workers/${regs[0].workerId}`);
      expect(regs[0].workerId).toMatch(new RegExp(`^CONTEXT-127\\.0\\.0\\.1:${ctx.port}-\\d+-\\d+-\\d{3}$`));

      const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: 3 });
      expect(res.status).toBe(200);
      expect(ctx.requests('/v1/completions')).toHaveLength(1);
      expect(gen.requests('/v1/completions')).toHaveLength(1);

      // Heartbeats keep the keys past several TTLs.
      const beats = await waitForHeartbeats(cluster.router, 2);
      expect(beats).toBe(true);
      expect(registry.list().map((s) => s.source)).toEqual(['cluster', 'cluster']);

      // The generation worker stops heartbeating: its key expires and it leaves.
      regs[1].abandon();
      await waitFor(() => registry.list('generation').length === 0, 10_000, 'generation worker expired');
      expect(registry.list('context')).toHaveLength(1);
      expect((await fetch(`${cluster.router.url}/health`)).status).toBe(503);

      // A deregistration removes at once.
      await regs[0].close();
      await waitFor(() => registry.list().length === 0, 5_000, 'context worker gone');
    } finally {
      for (const r of regs) await r.close();
      await ctx.close();
      await gen.close();
    }
  });
});

/** Waits for `ttls` TTLs' worth of time to pass with the workers still registered. */
async function waitForHeartbeats(router: RunningRouter, ttls: number): Promise<boolean> {
  const registry = router.app.get(ServerRegistry);
  const until = Date.now() + ttls * CLUSTER.inactive_timeout_sec * 1000 + 500;
  await waitFor(() => Date.now() > until || registry.list().length < 2, 10_000, 'ttl passing');
  return registry.list().length === 2;
}
