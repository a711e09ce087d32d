import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RouterRegistry } from '../../src/routing';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { completionsTo, echoingContextHandler, hostPort, startCachingWorker, startThroughCli, tokenIds, TRTLLM_FLAGS, writeConfig } from './compat-support';

// TensorRT-LLM's disagg_config_conditional.yaml: a kv_cache_aware generation router and
// conditional_disagg_config.max_local_prefill_length 100.
const TPB = 32;
const P = tokenIds(8 * TPB + 1, 2000);

describe('compat: disagg_config_conditional.yaml', () => {
  let ctx: FakeWorker;
  let gen: FakeWorker;
  let router: Awaited<ReturnType<typeof startThroughCli>>;

  beforeAll(async () => {
    ctx = await new FakeWorker(echoingContextHandler()).start();
    gen = await startCachingWorker(generationHandler(), TPB);
    const file = writeConfig('disagg_config_conditional.yaml', { ctx0: hostPort(ctx), gen0: hostPort(gen) });
    router = await startThroughCli(['disaggregated', '-c', file, ...TRTLLM_FLAGS]);
  });
  afterAll(async () => {
    await router?.close();
    await ctx?.close();
    await gen?.close();
  });

  const genBlocks = (): number => router.app.get(RouterRegistry).router('generation').snapshot().servers[0]?.kv_blocks_known ?? 0;
  const complete = async (prompt: number[]) => {
    const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt, max_tokens: 2 });
    expect(res.status).toBe(200);
    return { ctxBodies: completionsTo(ctx).length, genBody: completionsTo(gen).at(-1)! };
  };

  it('prefills on the generation server when it holds all but at most 100 tokens, as TensorRT-LLM decides', async () => {
    // Nothing cached: the context phase runs.
    const cold = await complete(P);
    expect(cold.ctxBodies).toBe(1);
    expect(cold.genBody.disaggregated_params).toMatchObject({ request_type: 'generation_only' });
    await waitFor(() => genBlocks() >= 8, 10_000, 'the generation server blocks known');

    // 8 blocks (256 tokens) cached, 51 more to prefill: <= 100, the context phase is skipped and
    // the generation server gets the client's request without disaggregated_params.
    const prompt = [...P, ...tokenIds(50, 7000)];
    const local = await complete(prompt);
    expect(local.ctxBodies).toBe(1);
    expect(local.genBody).toEqual({ model: 'm', prompt, max_tokens: 2 });

    // 201 tokens left to prefill: > 100, the context server prefills.
    const remote = await complete([...P, ...tokenIds(200, 8000)]);
    expect(remote.ctxBodies).toBe(2);
    expect(remote.genBody.disaggregated_params).toMatchObject({ request_type: 'generation_only', ctx_request_id: 777 });
  });
});
