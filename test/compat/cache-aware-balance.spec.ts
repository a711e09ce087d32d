import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { RouterRegistry } from '../../src/routing';
import { generationHandler, type FakeWorker } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { completionsTo, echoingContextHandler, hostPort, startCachingWorker, startThroughCli, tokenIds, TRTLLM_FLAGS, writeConfig } from './compat-support';

// TensorRT-LLM's disagg_config_cache_aware_balance.yaml: two servers per pool, kv_cache_aware
// routers whose max_batch_size comes from the pool, block size TensorRT-LLM's default (32).
const TPB = 32;
const P = tokenIds(8 * TPB + 1, 1000);
const Q = tokenIds(8 * TPB + 1, 5000);

describe('compat: disagg_config_cache_aware_balance.yaml', () => {
  let ctx: FakeWorker[];
  let gen: FakeWorker[];
  let router: Awaited<ReturnType<typeof startThroughCli>>;

  beforeAll(async () => {
    ctx = [await startCachingWorker(echoingContextHandler(), TPB), await startCachingWorker(echoingContextHandler(), TPB)];
    gen = [await startCachingWorker(generationHandler(), TPB), await startCachingWorker(generationHandler(), TPB)];
    const file = writeConfig('disagg_config_cache_aware_balance.yaml', {
      ctx0: hostPort(ctx[0]), ctx1: hostPort(ctx[1]), gen0: hostPort(gen[0]), gen1: hostPort(gen[1]),
    });
    router = await startThroughCli(['disaggregated', '-c', file, ...TRTLLM_FLAGS]);
  });
  afterAll(async () => {
    await router?.close();
    for (const w of [...(ctx ?? []), ...(gen ?? [])]) await w.close();
  });

  const snapshot = (role: 'context' | 'generation') => router.app.get(RouterRegistry).router(role).snapshot();
  const counts = (workers: FakeWorker[]): number[] => workers.map((w) => completionsTo(w).length);
  /** The one worker of the pool whose request count went up. */
  const grown = (before: number[], after: number[]): number => {
    const changed = after.flatMap((n, i) => (n !== before[i] ? [i] : []));
    expect(changed).toHaveLength(1);
    return changed[0];
  };
  const send = async (prompt: number[]): Promise<{ ctx: number; gen: number }> => {
    const [c, g] = [counts(ctx), counts(gen)];
    const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt, max_tokens: 2 });
    expect(res.status).toBe(200);
    return { ctx: grown(c, counts(ctx)), gen: grown(g, counts(gen)) };
  };
  const blocksKnown = (role: 'context' | 'generation', worker: FakeWorker): boolean =>
    (snapshot(role).servers.find((s) => s.url.endsWith(hostPort(worker)))?.kv_blocks_known ?? 0) >= 8;

  it('gives each pool its router with the pool-level max_batch_size and the default block size', () => {
    // No tokens_per_block anywhere in the file and none in the workers' /server_info: the default.
    expect(snapshot('context')).toMatchObject({ policy: 'kv_cache_aware', args: { max_batch_size: 16, use_tokens: false }, tokens_per_block: TPB });
    expect(snapshot('generation')).toMatchObject({ policy: 'kv_cache_aware', args: { max_batch_size: 256 }, tokens_per_block: TPB });
  });

  it('sends a prompt back to the servers whose KV events report its blocks, in both pools', async () => {
    const first = await send(P);
    await waitFor(() => blocksKnown('context', ctx[first.ctx]) && blocksKnown('generation', gen[first.gen]), 10_000, 'P blocks known');
    const second = await send(Q);
    await waitFor(() => blocksKnown('context', ctx[second.ctx]) && blocksKnown('generation', gen[second.gen]), 10_000, 'Q blocks known');
    // Idle scores tie at 0 and go round robin: the two prompts land on different servers.
    expect(second.ctx).not.toBe(first.ctx);
    expect(second.gen).not.toBe(first.gen);
    // An order round robin would get wrong: Q, P, P, Q.
    expect(await send([...Q, ...tokenIds(3, 9500)])).toEqual(second);
    expect(await send([...P, ...tokenIds(3, 9000)])).toEqual(first);
    expect(await send([...P, ...tokenIds(3, 9010)])).toEqual(first);
    expect(await send([...Q, ...tokenIds(3, 9510)])).toEqual(second);
    // The generation request carries the context worker's token ids and its disaggregated_params.
    const genBody = completionsTo(gen[second.gen]).at(-1)!;
    expect(genBody.disaggregated_params).toMatchObject({ request_type: 'generation_only', ctx_request_id: 777 });
    expect((genBody.prompt as number[]).slice(0, Q.length)).toEqual(Q);
  });
});
