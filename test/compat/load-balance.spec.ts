import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RouterRegistry } from '../../src/routing';
import { FakeWorker, generationHandler, type FakeHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { completionsTo, echoingContextHandler, hostPort, startThroughCli, tokenIds, TRTLLM_FLAGS, writeConfig } from './compat-support';

// TensorRT-LLM's disagg_config_load_balance.yaml: load_balancing in both pools, by tokens in
// flight for the context pool, by requests in flight for the generation pool.
const CTX_HOLD = 4242;
const GEN_HOLD = 4343;

/** Answers once released when the prompt starts with `mark`, at once otherwise. */
function holding(inner: FakeHandler, mark: number, gate: { release?: () => void }): FakeHandler {
  return async (req, res, worker) => {
    const prompt = (req.body?.prompt ?? req.body?.prompt_token_ids) as number[] | undefined;
    if (prompt?.[0] === mark) await new Promise<void>((resolve) => (gate.release = resolve));
    return inner(req, res, worker);
  };
}

describe('compat: disagg_config_load_balance.yaml', () => {
  const ctxGate: { release?: () => void } = {};
  const genGate: { release?: () => void } = {};
  let ctx: FakeWorker[];
  let gen: FakeWorker[];
  let router: Awaited<ReturnType<typeof startThroughCli>>;

  beforeAll(async () => {
    ctx = [await new FakeWorker(holding(echoingContextHandler(), CTX_HOLD, ctxGate)).start(), await new FakeWorker(holding(echoingContextHandler(), CTX_HOLD, ctxGate)).start()];
    gen = [await new FakeWorker(holding(generationHandler(), GEN_HOLD, genGate)).start(), await new FakeWorker(holding(generationHandler(), GEN_HOLD, genGate)).start()];
    const file = writeConfig('disagg_config_load_balance.yaml', {
      ctx0: hostPort(ctx[0]), ctx1: hostPort(ctx[1]), gen0: hostPort(gen[0]), gen1: hostPort(gen[1]),
    });
    router = await startThroughCli(['disaggregated', '-c', file, ...TRTLLM_FLAGS]);
  });
  afterAll(async () => {
    ctxGate.release?.();
    genGate.release?.();
    await router?.close();
    for (const w of [...(ctx ?? []), ...(gen ?? [])]) await w.close();
  });

  const snapshot = (role: 'context' | 'generation') => router.app.get(RouterRegistry).router(role).snapshot();
  const holder = (workers: FakeWorker[], mark: number): number =>
    workers.findIndex((w) => completionsTo(w).some((b) => ((b.prompt ?? b.prompt_token_ids) as number[])[0] === mark));

  it('takes use_tokens per pool; the pool keys the policy does not take stay out of its args', () => {
    expect(snapshot('context')).toMatchObject({ policy: 'load_balancing', args: { use_tokens: true } });
    expect(snapshot('generation')).toMatchObject({ policy: 'load_balancing', args: { use_tokens: false } });
    expect(snapshot('context').args).not.toHaveProperty('max_batch_size');
  });

  it('sends the next request to the context server with fewer tokens in flight', async () => {
    const held = postJson(`${router.url}/v1/completions`, { model: 'm', prompt: [CTX_HOLD, ...tokenIds(500, 1)], max_tokens: 2 });
    await waitFor(() => holder(ctx, CTX_HOLD) >= 0 && ctxGate.release !== undefined, 10_000, 'the held context request');
    const busy = holder(ctx, CTX_HOLD);
    for (let i = 0; i < 3; i++) {
      const before = completionsTo(ctx[1 - busy]).length;
      expect((await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: tokenIds(5, 100 + i), max_tokens: 2 })).status).toBe(200);
      expect(completionsTo(ctx[1 - busy]).length).toBe(before + 1);
    }
    ctxGate.release!();
    expect((await held).status).toBe(200);
  });

  it('sends the next request to the generation server with fewer requests in flight', async () => {
    // The context worker echoes the prompt as token ids: the generation request starts with GEN_HOLD too.
    const held = postJson(`${router.url}/v1/completions`, { model: 'm', prompt: [GEN_HOLD, 1, 2], max_tokens: 2 });
    await waitFor(() => holder(gen, GEN_HOLD) >= 0 && genGate.release !== undefined, 10_000, 'the held generation request');
    const busy = holder(gen, GEN_HOLD);
    for (let i = 0; i < 3; i++) {
      const before = completionsTo(gen[1 - busy]).length;
      expect((await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: tokenIds(5, 200 + i), max_tokens: 2 })).status).toBe(200);
      expect(completionsTo(gen[1 - busy]).length).toBe(before + 1);
    }
    genGate.release!();
    expect((await held).status).toBe(200);
  });
});
