import { describe, expect, it } from '@jest/globals';
import { blockHashChain } from '../../src/kv-cache/block-hash';
import { getTokenizer } from '../../src/tokenizer';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { allIdle, holdsPrefix, served, stateOf } from './support/sim-helpers';

const TPB = 32;

describe('conditional disaggregation with a kv_cache_aware generation router', () => {
  const cluster = useRouterCluster({
    sim: { context: 1, generation: 2, kvBlocks: 64, tokensPerBlock: TPB, tokenizer: 'bytes' },
    config: (cluster) => ({
      context_servers: { urls: cluster.sim.contextUrls, router: { type: 'round_robin' } },
      generation_servers: { urls: cluster.sim.generationUrls, router: { type: 'kv_cache_aware', tokens_per_block: TPB, tokenizer: 'bytes' } },
      conditional_disagg_config: { max_local_prefill_length: 64 },
    }),
  });
  const bytes = getTokenizer('bytes');
  const T = 'The cached document. '.repeat(20); // 420 byte tokens

  it('runs the context phase for an uncached prompt, forwarding the token ids the router computed', async () => {
    const [ctx] = cluster.sim.contextWorkers;
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: T, max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(served(ctx).context_only).toBe(1);
    const gen = cluster.sim.generationWorkers.find((w) => served(w).generation_only === 1)!;
    expect(gen).toBeDefined();
    const ctxBody = ctx.received.at(-1) as Record<string, unknown>;
    expect(ctxBody.prompt).toEqual(bytes.encode(T));
    await waitFor(() => holdsPrefix(stateOf(cluster.router.app, 'generation', gen.url), blockHashChain(bytes.encode(T), TPB)), 10_000, 'generation server events');
  });

  it('skips the context phase when the generation server holds all but a short tail', async () => {
    const [ctx] = cluster.sim.contextWorkers;
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'idle');
    const gen = cluster.sim.generationWorkers.find((w) => served(w).generation_only === 1)!;
    const ctxBefore = served(ctx).context_only;
    const plainBefore = served(gen).plain;
    const prompt = T + 'And one short question?'; // 23 new tokens <= 64
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt, max_tokens: 2 });
    expect(res.status).toBe(200);
    expect(served(ctx).context_only).toBe(ctxBefore);
    expect(served(gen).plain).toBe(plainBefore + 1);
    const body = gen.received.at(-1) as Record<string, unknown>;
    expect(body.disaggregated_params).toBeUndefined();
    expect(body.prompt).toEqual(bytes.encode(prompt));
  });

  it('does not skip it for a prompt with a cached prefix but a long uncached tail, nor for chat with nothing cached', async () => {
    const [ctx] = cluster.sim.contextWorkers;
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'idle');
    const before = served(ctx).context_only;
    const long = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: T + 'x'.repeat(200), max_tokens: 2 });
    expect(long.status).toBe(200);
    expect(served(ctx).context_only).toBe(before + 1);
    const messages = [{ role: 'user', content: 'Nothing of this is cached anywhere yet.' }];
    const chat = await postJson(`${cluster.router.url}/v1/chat/completions`, { model: 'm', messages, max_tokens: 2 });
    expect(chat.status).toBe(200);
    expect(served(ctx).context_only).toBe(before + 2);
    expect((ctx.received.at(-1) as Record<string, unknown>).prompt_token_ids).toEqual(bytes.encodeChat(messages));
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'load back to zero');
  });
});
