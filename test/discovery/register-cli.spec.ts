import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient, parseEtcdEntry } from '../../src/discovery';
import { startEtcd, type EtcdServer } from '../support/etcd-server';
import { waitFor } from '../support/router-app';
import { buildRegisterCli, runRegisterCli, type CliProcess } from './support/register-cli-process';
import { hasExited } from '../support/child-exit';

describe('register CLI', () => {
  let etcd: EtcdServer;
  let client: Etcd3;
  let cli: ReturnType<typeof buildRegisterCli>;
  const running: CliProcess[] = [];

  beforeAll(async () => {
    etcd = await startEtcd();
    client = createEtcdClient({ hosts: etcd.endpoint });
    cli = buildRegisterCli();
  });
  afterAll(async () => {
    for (const p of running) if (!hasExited(p.child)) p.child.kill('SIGKILL');
    await Promise.all(running.map((p) => p.exited));
    client?.close();
    await etcd?.close();
    cli?.cleanup();
  });

  const keyOf = async (key: string) => (await client.get(key).exec()).kvs[0];

  it('puts the key with a lease while running and removes it on SIGTERM', async () => {
    const p = runRegisterCli(cli.script, ['--etcd', etcd.endpoint, '--url', 'http://127.0.0.1:8001', '--role', 'context', '--key', 'trtllm/ctx-1', '--ttl', '5']);
    running.push(p);
    await waitFor(async () => (await keyOf('trtllm/ctx-1')) !== undefined, 20_000, 'key registered');
    const kv = (await keyOf('trtllm/ctx-1'))!;
    expect(kv.lease).not.toBe('0');
    expect(parseEtcdEntry('trtllm/ctx-1', kv.value.toString())).toEqual({ ok: true, entry: { key: 'trtllm/ctx-1', url: 'http://127.0.0.1:8001', role: 'context' } });
    p.child.kill('SIGTERM');
    expect(await p.exited).toBe(0);
    expect(await keyOf('trtllm/ctx-1')).toBeUndefined();
    expect(p.output()).toMatch(/SIGTERM: removing trtllm\/ctx-1/);
  });

  it('a signal during registration waits for it; a second one quits at once', async () => {
    // A port nothing listens on: the registration keeps retrying.
    const p = runRegisterCli(cli.script, ['--etcd', '127.0.0.1:9', '--url', 'http://127.0.0.1:8003', '--role', 'context']);
    running.push(p);
    await waitFor(async () => /retrying/.test(p.output()), 20_000, 'first failed attempt');
    p.child.kill('SIGTERM');
    await waitFor(async () => /SIGTERM: removing the registration once etcd has it/.test(p.output()), 20_000, 'signal handled');
    expect(p.child.exitCode).toBeNull();
    p.child.kill('SIGTERM');
    expect(await p.exited).toBeNull();
    expect(p.child.signalCode).toBe('SIGTERM');
  });

  it('a helper killed without cleanup loses its key when the lease expires', async () => {
    const p = runRegisterCli(cli.script, ['--etcd', etcd.endpoint, '--url', 'http://127.0.0.1:8002', '--role', 'generation', '--ttl', '2']);
    running.push(p);
    const key = 'trtllm/generation-127.0.0.1-8002';
    await waitFor(async () => (await keyOf(key)) !== undefined, 20_000, 'key registered');
    p.child.kill('SIGKILL');
    await p.exited;
    await waitFor(async () => (await keyOf(key)) === undefined, 30_000, 'key expired with its lease');
  });

  it('refuses bad arguments with the usage', async () => {
    const p = runRegisterCli(cli.script, ['--etcd', etcd.endpoint, '--role', 'encoder', '--url', 'http://x:1']);
    running.push(p);
    expect(await p.exited).toBe(2);
    expect(p.output()).toMatch(/--role must be context or generation[\s\S]*usage: register/);
  });
});
