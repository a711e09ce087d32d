import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { createRouterApp } from '../../src/app.factory';
import { loadConfigFile } from '../../src/config';
import { ClusterWorkerRegistration } from '../../src/discovery/cluster/cluster-worker-registration';
import { ServerRegistry } from '../../src/servers';
import { contextHandler, FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';

/**
 * TensorRT-LLM's disagg_config_conversation.yaml as its harness runs it: the router serves the
 * disagg_cluster storage, two context workers and one generation worker register themselves,
 * and the conversation router keeps each conversation on one context server.
 */
describe('compat: disagg_config_conversation.yaml (disagg_cluster)', () => {
  let app: NestFastifyApplication;
  let url: string;
  const ctx: FakeWorker[] = [];
  let gen: FakeWorker;
  const regs: ClusterWorkerRegistration[] = [];

  beforeAll(async () => {
    const config = loadConfigFile('test/compat/disagg_config_conversation.yaml', {});
    app = await createRouterApp({ ...config, logging: { ...config.logging, level: 'error' } }, { logger: ['error'] });
    await app.listen(0, '127.0.0.1');
    url = `http://127.0.0.1:${(app.getHttpServer().address() as { port: number }).port}`;
    for (let i = 0; i < 2; i++) ctx.push(await new FakeWorker(contextHandler()).start());
    gen = await new FakeWorker(generationHandler()).start();
  });
  afterAll(async () => {
    for (const r of regs) await r.close();
    await app?.close();
    for (const w of [...ctx, gen]) await w?.close();
  });

  const cluster = { clusterName: 'test_cluster', host: '127.0.0.1', heartbeatIntervalS: 1, inactiveTimeoutS: 2 };
  const turn = (conversationId: string, prompt: string) =>
    postJson(`${url}/v1/completions`, { model: 'TinyLlama/TinyLlama-1.1B-Chat-v1.0', prompt, max_tokens: 3, disaggregated_params: { request_type: 'context_only', conversation_id: conversationId } });
  const ctxServerOf = (conversationId: string): number[] =>
    ctx.flatMap((w, i) => w.requests('/v1/completions').filter((r) => (r.body?.disaggregated_params as Record<string, unknown>)?.conversation_id === conversationId).map(() => i));

  it('is not ready until minimal_instances have registered', async () => {
    regs.push(await ClusterWorkerRegistration.start({ ...cluster, clusterUri: url, port: ctx[0].port, role: 'context' }));
    regs.push(await ClusterWorkerRegistration.start({ ...cluster, clusterUri: url, port: gen.port, role: 'generation' }));
    await waitFor(() => app.get(ServerRegistry).ready('generation').length === 1, 10_000, 'generation worker ready');
    const health = await fetch(`${url}/health`);
    expect(health.status).toBe(503);
    expect((await turn('c0', 'hello')).status).toBe(503);
    regs.push(await ClusterWorkerRegistration.start({ ...cluster, clusterUri: url, port: ctx[1].port, role: 'context' }));
    await waitFor(async () => (await fetch(`${url}/health`)).status === 200, 10_000, 'cluster ready');
    const info = (await (await fetch(`${url}/cluster_info`)).json()) as { current_workers: Record<string, unknown[]>; minimal_instances: unknown };
    expect(info.current_workers.context_servers).toHaveLength(2);
    expect(info.current_workers.generation_servers).toHaveLength(1);
    expect(info.minimal_instances).toEqual({ context_servers: 2, generation_servers: 1 });
  });

  it('keeps each conversation on one context server, with the ids TensorRT-LLM sends', async () => {
    for (const id of ['conv-a', 'conv-b']) {
      for (const prompt of ['turn one', 'turn one, then turn two']) expect((await turn(id, prompt)).status).toBe(200);
    }
    const a = ctxServerOf('conv-a');
    const b = ctxServerOf('conv-b');
    expect(a).toHaveLength(2);
    expect(new Set(a).size).toBe(1);
    expect(new Set(b).size).toBe(1);
    // Two new conversations on an idle pool spread over both context servers.
    expect(a[0]).not.toBe(b[0]);
    const ctxParams = ctx[a[0]].requests('/v1/completions')[0].body!.disaggregated_params as Record<string, unknown>;
    expect(ctxParams).toMatchObject({ request_type: 'context_only', conversation_id: 'conv-a' });
    expect(typeof ctxParams.disagg_request_id).toBe('number');
    const genParams = gen.requests('/v1/completions')[0].body!.disaggregated_params as Record<string, unknown>;
    expect(genParams).toMatchObject({ request_type: 'generation_only', conversation_id: 'conv-a', ctx_request_id: 777, disagg_request_id: ctxParams.disagg_request_id });
  });

  it('drops a context worker whose heartbeats stop, and refuses requests below minimal_instances', async () => {
    regs[2].abandon();
    const registry = app.get(ServerRegistry);
    await waitFor(() => registry.list('context').length === 1, 15_000, 'context worker expired');
    expect((await fetch(`${url}/health`)).status).toBe(503);
    const refused = await turn('conv-c', 'hello');
    expect(refused.status).toBe(503);
    expect((refused.json.error as { code: string }).code).toBe('cluster_not_ready');
  });
});
