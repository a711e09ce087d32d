import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient } from '../../src/discovery';
import { startEtcd, type EtcdServer } from '../support/etcd-server';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson } from '../support/router-app';
import { completionsTo, echoingContextHandler, startThroughCli, writeConfig } from './compat-support';

/** A worker's key as trtllm-serve workers write it. */
function trtllmValue(url: string, role: string): string {
  return JSON.stringify({ model: 'm', version: '1.0', timestamp: new Date().toISOString(), server_role: role, url });
}

// `trtllm-serve disaggregated -c disagg.yaml -m metadata.yaml`: the server lists come from etcd.
describe('compat: -m metadata server config file (etcd)', () => {
  let etcd: EtcdServer;
  let client: Etcd3;
  let ctx: FakeWorker;
  let gen: FakeWorker;
  let router: Awaited<ReturnType<typeof startThroughCli>>;

  beforeAll(async () => {
    etcd = await startEtcd();
    client = createEtcdClient({ hosts: etcd.endpoint });
    ctx = await new FakeWorker(echoingContextHandler()).start();
    gen = await new FakeWorker(generationHandler()).start();
    await client.put('trtllm/ctx-0').value(trtllmValue(ctx.url, 'CONTEXT'));
    await client.put('trtllm/gen-0').value(trtllmValue(gen.url, 'GENERATION'));
    // The url lists of the file are replaced by what etcd holds.
    const file = writeConfig('disagg_config.yaml', { ctx0: '127.0.0.1:9', gen0: '127.0.0.1:9' });
    const meta = writeConfig('metadata_server.yaml', { etcdPort: etcd.port });
    router = await startThroughCli(['disaggregated', '-c', file, '-m', meta, '-t', '60', '-r', '120', '-l', 'error']);
  }, 60_000);
  afterAll(async () => {
    await router?.close();
    client?.close();
    await etcd?.close();
    await ctx?.close();
    await gen?.close();
  });

  it('reads the metadata file as TensorRT-LLM does; its health_check_timeout times the checks', () => {
    expect(router.config.metadata_server_config).toMatchObject({ server_type: 'etcd', hostname: '127.0.0.1', port: etcd.port, refresh_interval: 1 });
    expect(router.config.health.timeout_s).toBe(3);
  });

  it('routes to the workers registered in etcd', async () => {
    const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: [5, 6, 7], max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(completionsTo(ctx).at(-1)).toMatchObject({ disaggregated_params: { request_type: 'context_only' } });
    expect(completionsTo(gen).at(-1)).toMatchObject({ prompt: [5, 6, 7], disaggregated_params: { request_type: 'generation_only' } });
  });
});
