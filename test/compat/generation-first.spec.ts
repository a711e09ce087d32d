import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { appendFileSync } from 'node:fs';
import { RouterRegistry } from '../../src/routing';
import { FakeWorker, generationHandler, json, type FakeHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { completionsTo, echoingContextHandler, hostPort, startThroughCli, TRTLLM_FLAGS, writeConfig } from './compat-support';

const CTX_INFO = { disaggregated_params: { ctx_info_endpoint: ['tcp://10.0.0.1:5555', 'tcp://10.0.0.1:5556'], ctx_dp_rank: 0 } };

/** disagg_request_ids whose context call succeeded: their KV cache "was transferred". */
const transferred = new Set<number>();
const idOf = (body: Record<string, unknown> | undefined): number | undefined =>
  (body?.disaggregated_params as { disagg_request_id?: number } | undefined)?.disagg_request_id;

/**
 * A generation worker of the generation_first protocol: it answers only once the context
 * call it names succeeded (its KV cache arrived). The context worker in turn waits for the
 * generation request, so a router sending them one after the other would never be answered.
 */
function waitsForKvCache(): FakeHandler {
  const inner = generationHandler({ chunks: 2 });
  return async (req, res, worker) => {
    const id = idOf(req.body)!;
    await waitFor(() => transferred.has(id) || res.destroyed, 10_000, 'the KV cache').catch(() => undefined);
    if (res.destroyed) return;
    return inner(req, res, worker);
  };
}

describe('compat: schedule_style generation_first', () => {
  let ctx: FakeWorker;
  let gen: FakeWorker;
  let router: Awaited<ReturnType<typeof startThroughCli>>;
  let ctxAnswer: FakeHandler = echoingContextHandler();

  beforeAll(async () => {
    // The context worker answers only after the generation request arrived, like the real one.
    ctx = await new FakeWorker(async (req, res, w) => {
      await waitFor(() => completionsTo(gen).some((b) => idOf(b) === idOf(req.body)), 10_000, 'the generation request').catch(() => undefined);
      await ctxAnswer(req, res, w);
      if (res.statusCode === 200) transferred.add(idOf(req.body)!);
    }).start();
    ctx.serverInfo = CTX_INFO;
    gen = await new FakeWorker(waitsForKvCache()).start();
    const file = writeConfig('disagg_config.yaml', { ctx0: hostPort(ctx), gen0: hostPort(gen) });
    appendFileSync(file, 'schedule_style: generation_first\nnode_id: 9\n');
    router = await startThroughCli(['disaggregated', '-c', file, ...TRTLLM_FLAGS]);
  });
  afterAll(async () => {
    await router?.close();
    await ctx?.close();
    await gen?.close();
  });

  it('sends both requests together, the generation one naming the context request and carrying its server_info', async () => {
    const body = { model: 'm', prompt: 'The capital of France is', max_tokens: 2 };
    const res = await postJson(`${router.url}/v1/completions`, body);
    expect(res.status).toBe(200);
    expect(res.json.choices).toEqual([expect.objectContaining({ text: 'AA' })]);
    const ctxBody = completionsTo(ctx).at(-1)!;
    const genBody = completionsTo(gen).at(-1)!;
    const id = (ctxBody.disaggregated_params as { disagg_request_id: number }).disagg_request_id;
    expect(ctxBody).toEqual({ ...body, stream: false, stream_options: null, disaggregated_params: { request_type: 'context_only', disagg_request_id: id, schedule_style: 1 } });
    expect(genBody).toEqual({
      ...body,
      disaggregated_params: {
        request_type: 'generation_only',
        ctx_request_id: id,
        disagg_request_id: id,
        schedule_style: 1,
        ctx_info_endpoint: 'tcp://10.0.0.1:5555',
        ctx_dp_rank: 0,
      },
    });
    expect(Math.floor(id / 2 ** 16) % 256).toBe(9);
  });

  it('streams the generation answer', async () => {
    const res = await fetch(`${router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true }),
    });
    expect(res.status).toBe(200);
    expect((await res.text()).trim().endsWith('data: [DONE]')).toBe(true);
    expect(completionsTo(gen).at(-1)).toMatchObject({ stream: true, messages: [{ role: 'user', content: 'Hi' }], disaggregated_params: { request_type: 'generation_only', schedule_style: 1 } });
  });

  it('answers a failed context call and aborts the waiting generation call', async () => {
    ctxAnswer = (_req, res) => json(res, 400, { object: 'error', message: 'prompt too long', type: 'BadRequestError', code: 400 });
    const abortedBefore = gen.aborted;
    const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: 'x', max_tokens: 2 });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ message: 'prompt too long' });
    await waitFor(() => gen.aborted === abortedBefore + 1, 10_000, 'the generation call aborted');
    const routers = router.app.get(RouterRegistry);
    await waitFor(() => routers.router('context').snapshot().in_flight === 0 && routers.router('generation').snapshot().in_flight === 0, 10_000, 'no reservation left');
    ctxAnswer = echoingContextHandler();
  });
});
