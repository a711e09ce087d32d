import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { nodeIdOf } from '../../src/disagg/disagg-request-id';
import { generationHandler, FakeWorker } from '../support/fake-worker';
import { postJson } from '../support/router-app';
import { completionsTo, echoingContextHandler, hostPort, startThroughCli, TRTLLM_FLAGS, writeConfig } from './compat-support';

// TensorRT-LLM's examples/disaggregated/disagg_config.yaml: one context and one generation
// server, the default round_robin routers, worker-only keys at both levels.
describe('compat: disagg_config.yaml (the example)', () => {
  let ctx: FakeWorker;
  let gen: FakeWorker;
  let router: Awaited<ReturnType<typeof startThroughCli>>;

  beforeAll(async () => {
    ctx = await new FakeWorker(echoingContextHandler()).start();
    gen = await new FakeWorker(generationHandler({ chunks: 2 })).start();
    const file = writeConfig('disagg_config.yaml', { ctx0: hostPort(ctx), gen0: hostPort(gen) });
    router = await startThroughCli(['disaggregated', '-c', file, ...TRTLLM_FLAGS]);
  });
  afterAll(async () => {
    await router?.close();
    await ctx?.close();
    await gen?.close();
  });

  it('reads the flags and the file as trtllm-serve does', () => {
    expect(router.config.timeouts.request_s).toBe(120);
    expect(router.config.health.startup_wait_s).toBe(60);
    expect(router.config.logging.level).toBe('error');
    // Top-level worker keys reach both pools; the pool's own keys stay.
    expect(router.config.context_servers).toMatchObject({ model: 'TinyLlama/TinyLlama-1.1B-Chat-v1.0', backend: 'pytorch', free_gpu_memory_fraction: 0.25 });
    expect(router.config.generation_servers).toMatchObject({ disable_overlap_scheduler: true, tensor_parallel_size: 1 });
  });

  it('sends the context_only then generation_only requests TensorRT-LLM sends', async () => {
    const body = { model: 'TinyLlama/TinyLlama-1.1B-Chat-v1.0', prompt: [11, 12, 13, 14], max_tokens: 4, stream: false };
    const res = await postJson(`${router.url}/v1/completions`, body);
    expect(res.status).toBe(200);
    const [ctxBody] = completionsTo(ctx);
    const [genBody] = completionsTo(gen);
    expect(ctxBody).toEqual({
      ...body,
      stream: false,
      stream_options: null,
      disaggregated_params: { request_type: 'context_only', disagg_request_id: expect.any(Number) },
    });
    const id = (ctxBody.disaggregated_params as { disagg_request_id: number }).disagg_request_id;
    // A global id in TensorRT-LLM's id space, exact as a JSON number.
    expect(id).toBeGreaterThanOrEqual(2 ** 40);
    expect(Number.isSafeInteger(id)).toBe(true);
    expect(genBody).toEqual({
      ...body,
      prompt: [11, 12, 13, 14],
      disaggregated_params: {
        request_type: 'generation_only',
        ctx_request_id: 777,
        first_gen_tokens: [42],
        encoded_opaque_state: 'b3BhcXVl',
        draft_tokens: null,
        disagg_request_id: id,
      },
    });
    expect(res.json.choices).toEqual([expect.objectContaining({ text: 'AA', finish_reason: 'length' })]);
    // Usage: prompt tokens from the context phase, as TensorRT-LLM rewrites them.
    expect(res.json.usage).toMatchObject({ prompt_tokens: 4, completion_tokens: 2, total_tokens: 6, prompt_tokens_details: { cached_tokens: 2 } });
  });

  it('streams the generation answer of a chat request', async () => {
    const res = await fetch(`${router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'Hi' }], stream: true }),
    });
    expect(res.status).toBe(200);
    const text = await res.text();
    expect(text.trim().endsWith('data: [DONE]')).toBe(true);
    const ctxBody = completionsTo(ctx).at(-1)!;
    const genBody = completionsTo(gen).at(-1)!;
    expect(ctxBody).toMatchObject({ stream: false, stream_options: null, disaggregated_params: { request_type: 'context_only' } });
    expect(genBody).toMatchObject({ stream: true, prompt_token_ids: [1, 2, 3, 4, 5], disaggregated_params: { request_type: 'generation_only' } });
  });

  it('answers GET /version', async () => {
    const res = await fetch(`${router.url}/version`);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ version: expect.stringMatching(/^\d+\.\d+\.\d+/) });
  });

  it('puts node_id into every disagg_request_id', () => {
    const ids = completionsTo(ctx).map((b) => (b.disaggregated_params as { disagg_request_id: number }).disagg_request_id);
    expect(new Set(ids.map(nodeIdOf)).size).toBe(1);
    expect(new Set(ids).size).toBe(ids.length);
  });
});
