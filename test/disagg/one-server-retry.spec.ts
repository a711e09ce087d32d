import { afterEach, describe, expect, it } from '@jest/globals';
import type { ServerResponse } from 'node:http';
import { ServerRegistry } from '../../src/servers';
import { startFakeCluster, type FakeCluster } from '../support/fake-cluster';
import { contextHandler, generationHandler, json, type FakeHandler } from '../support/fake-worker';
import { postJson } from '../support/router-app';

/** Resets the connection of the first `times` inference calls, then behaves as `then`. */
function resetting(times: number, then: FakeHandler): FakeHandler {
  let left = times;
  return (req, res, worker) => {
    if (left > 0) {
      left -= 1;
      return void res.socket?.destroy();
    }
    return then(req, res, worker);
  };
}

const completions = (worker: FakeCluster['gen']): number => worker.requests('/v1/completions').length;
const HEALTH = { interval_s: 60, timeout_s: 2, startup_wait_s: 0 };

describe('one server per pool: the failed server is retried after a backoff', () => {
  let cluster: FakeCluster | undefined;
  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });

  it('answers 200 when the only generation server resets the connection once, and keeps it in rotation', async () => {
    cluster = await startFakeCluster({ max_retries: 1, health: HEALTH }, undefined, { gen: resetting(1, generationHandler()) });
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', max_tokens: 3 });
    expect(res.status).toBe(200);
    expect(res.json.choices).toHaveLength(1);
    expect(completions(cluster.gen)).toBe(2);
    // Both calls carried the same generation_only request, the retry under a fresh disagg_request_id (as TensorRT-LLM issues one).
    const [first, second] = cluster.gen.requests('/v1/completions');
    const idOf = (body: Record<string, unknown> | undefined): unknown => (body?.disaggregated_params as Record<string, unknown>).disagg_request_id;
    expect(typeof idOf(second.body)).toBe('number');
    expect(idOf(second.body)).not.toBe(idOf(first.body));
    const withoutId = (body: Record<string, unknown> | undefined): unknown => ({ ...body, disaggregated_params: { ...(body?.disaggregated_params as object), disagg_request_id: 0 } });
    expect(withoutId(second.body)).toEqual(withoutId(first.body));
    const registry = cluster.router.app.get(ServerRegistry);
    expect(registry.findByUrl('generation', cluster.gen.url)?.status).toBe('ready');
    for (const s of registry.list()) expect(s.activeRequests).toBe(0);
  });

  it('answers a streaming request after a reset of the only generation server', async () => {
    cluster = await startFakeCluster({ max_retries: 1, health: HEALTH }, undefined, { gen: resetting(1, generationHandler({ chunks: 2 })) });
    const res = await fetch(`${cluster.router.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'hello', max_tokens: 2, stream: true }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
    expect(completions(cluster.gen)).toBe(2);
  });

  it('retries the only context server the same way', async () => {
    cluster = await startFakeCluster({ max_retries: 2, health: HEALTH }, undefined, { ctx: resetting(2, contextHandler()) });
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', max_tokens: 3 });
    expect(res.status).toBe(200);
    expect(cluster.ctx.requests('/v1/completions')).toHaveLength(3);
    expect(completions(cluster.gen)).toBe(1);
    // A fresh disagg_request_id on every attempt.
    const ids = cluster.ctx.requests('/v1/completions').map((r) => (r.body?.disaggregated_params as Record<string, unknown>).disagg_request_id);
    expect(new Set(ids).size).toBe(3);
  });

  it('gives up after max_retries with a 502 naming every attempt', async () => {
    cluster = await startFakeCluster({ max_retries: 2, health: HEALTH }, undefined, { gen: resetting(100, generationHandler()) });
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', max_tokens: 3 });
    expect(res.status).toBe(502);
    expect((res.json.error as { message: string }).message).toMatch(/failed after 3 attempt/);
    expect(completions(cluster.gen)).toBe(3);
    for (const s of cluster.router.app.get(ServerRegistry).list()) expect(s.activeRequests).toBe(0);
  });

  it('never retries a 4xx answer', async () => {
    const badRequest: FakeHandler = (_req, res: ServerResponse) => json(res, 400, { error: { message: 'bad prompt', type: 'invalid_request_error' } });
    cluster = await startFakeCluster({ max_retries: 3, health: HEALTH }, undefined, { gen: badRequest });
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', max_tokens: 3 });
    expect(res.status).toBe(400);
    expect(completions(cluster.gen)).toBe(1);
  });

  it('does not retry with max_retries 0', async () => {
    cluster = await startFakeCluster({ max_retries: 0, health: HEALTH }, undefined, { gen: resetting(1, generationHandler()) });
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', max_tokens: 3 });
    expect(res.status).toBe(502);
    expect(completions(cluster.gen)).toBe(1);
  });
});

describe('a worker without /server_info', () => {
  it('is made ready with the default info and serves', async () => {
    const cluster = await startFakeCluster({ health: HEALTH }, undefined, {});
    try {
      // A second generation pool member that answers 404 to /server_info, added at run time.
      const registry = cluster.router.app.get(ServerRegistry);
      cluster.gen.serverInfoStatus = 404;
      const gen = registry.findByUrl('generation', cluster.gen.url)!;
      registry.setStatus(gen, 'preparing');
      const deadline = Date.now() + 10_000;
      while (gen.status !== 'ready' && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
      expect(gen.status).toBe('ready');
      expect(gen.serverInfoMissing).toBe(true);
      expect(gen.kvHashAlgo).toBe('v1_block_key');
      const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', max_tokens: 3 });
      expect(res.status).toBe(200);
    } finally {
      await cluster.close();
    }
  });
});
