import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { parseRegisterArgs } from '../../src/discovery/register-cli';
import { ServerRegistry } from '../../src/servers';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { buildRegisterCli, runRegisterCli, type CliProcess } from './support/register-cli-process';
import { hasExited } from '../support/child-exit';

describe('register CLI, disagg_cluster mode', () => {
  let router: RunningRouter;
  let worker: FakeWorker;
  let cli: ReturnType<typeof buildRegisterCli>;
  const running: CliProcess[] = [];

  beforeAll(async () => {
    router = await startRouter({
      disagg_cluster: { cluster_uri: 'http://localhost:8000', cluster_name: 'cli', minimal_instances: { context_servers: 0, generation_servers: 1 }, heartbeat_interval_sec: 0.5, inactive_timeout_sec: 2 },
      health: { interval_s: 60, startup_wait_s: 0 },
    });
    worker = await new FakeWorker(generationHandler()).start();
    cli = buildRegisterCli();
  });
  afterAll(async () => {
    for (const p of running) if (!hasExited(p.child)) p.child.kill('SIGKILL');
    await Promise.all(running.map((p) => p.exited));
    await router?.close();
    await worker?.close();
    cli?.cleanup();
  });

  const args = () => ['--disagg-cluster', router.url, '--cluster-name', 'cli', '--url', worker.url, '--role', 'generation', '--heartbeat', '0.5', '--inactive-timeout', '2'];

  it('registers and heartbeats the worker, which gets traffic; SIGTERM removes it at once', async () => {
    const registry = router.app.get(ServerRegistry);
    const p = runRegisterCli(cli.script, args());
    running.push(p);
    await waitFor(() => registry.ready('generation').length === 1, 20_000, 'worker ready');
    const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(worker.requests('/v1/completions')).toHaveLength(1);
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(registry.list()).toHaveLength(0);
    expect(p.output()).toMatch(/SIGTERM: removing \/trtllm-disagg\/cli\/workers\/GENERATION-127\.0\.0\.1:/);
  });

  it('a helper killed without cleanup is dropped once its heartbeats stop', async () => {
    const registry = router.app.get(ServerRegistry);
    const p = runRegisterCli(cli.script, args());
    running.push(p);
    await waitFor(() => registry.list().length === 1, 20_000, 'worker registered');
    p.child.kill('SIGKILL');
    await p.exited;
    await waitFor(() => registry.list().length === 0, 20_000, 'worker expired');
  });

  it('refuses mixed or incomplete modes', () => {
    expect(() => parseRegisterArgs(['--etcd', 'h:1', '--disagg-cluster', 'http://h:2', '--url', 'http://w:1', '--role', 'context'])).toThrow(/exclude each other/);
    expect(() => parseRegisterArgs(['--disagg-cluster', 'ftp://h', '--url', 'http://w:1', '--role', 'context'])).toThrow(/http:\/\/, https:\/\/ or etcd:\/\//);
    expect(() => parseRegisterArgs(['--disagg-cluster', 'http://h:2', '--url', 'http://w:1', '--role', 'context', '--ttl', '3'])).toThrow(/--ttl needs --etcd/);
    expect(() => parseRegisterArgs(['--disagg-cluster', 'http://h:2', '--url', 'http://w:1', '--role', 'context', '--heartbeat', '10'])).toThrow(/longer than --heartbeat/);
    expect(parseRegisterArgs(['--disagg-cluster', 'etcd://h:2379', '--url', 'http://w:1', '--role', 'generation'])).toEqual({
      mode: 'cluster', clusterUri: 'etcd://h:2379', url: 'http://w:1', role: 'generation', clusterName: '', heartbeat: 5, inactiveTimeout: 10,
    });
  });
});
