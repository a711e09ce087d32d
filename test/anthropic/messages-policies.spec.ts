import { beforeAll, describe, expect, it } from '@jest/globals';
import Anthropic from '@anthropic-ai/sdk';
import { waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { allIdle, served } from '../routing/support/sim-helpers';

const POLICIES: [string, Record<string, unknown>][] = [
  ['round_robin', {}],
  ['load_balancing', { use_tokens: true, tokenizer: 'bytes' }],
  ['kv_cache_aware', { tokens_per_block: 4, tokenizer: 'bytes' }],
  ['conversation', { tokens_per_block: 4, tokenizer: 'bytes' }],
];

describe.each(POLICIES)('%s routes Messages API requests as the chats they are', (type, args) => {
  const cluster = useRouterCluster({
    sim: { context: 1, generation: 2, tokenizer: 'bytes' },
    config: (c) => ({
      context_servers: { urls: c.sim.contextUrls, router: { type, ...args } },
      generation_servers: { urls: c.sim.generationUrls, router: { type, ...args } },
    }),
  });
  let client: Anthropic;
  beforeAll(() => {
    client = new Anthropic({ baseURL: cluster.url, apiKey: 'k', maxRetries: 0, defaultHeaders: { 'x-session-id': `s-${type}` } });
  });

  it('plain and streamed, through both phases, load back to zero', async () => {
    const gens = cluster.sim.generationWorkers;
    const before = gens.map((w) => served(w).generation_only);
    const messages: Anthropic.MessageParam[] = [{ role: 'user', content: `A question routed by ${type} about disaggregated serving.` }];
    const plain = await client.messages.create({ model: 'sim-model', max_tokens: 4, system: 'Be brief.', messages });
    const streamed = await client.messages.stream({ model: 'sim-model', max_tokens: 4, system: 'Be brief.', messages }).finalMessage();
    expect(streamed.content).toEqual(plain.content);
    expect(plain.usage.output_tokens).toBe(4);
    expect(streamed.usage.output_tokens).toBe(4);
    const delta = gens.map((w, i) => served(w).generation_only - before[i]);
    expect(delta[0] + delta[1]).toBe(2);
    // The prompt's KV cache (kv_cache_aware) and the session (conversation) keep the repeat on one server.
    if (type === 'kv_cache_aware' || type === 'conversation') expect(delta.sort()).toEqual([0, 2]);
    if (type === 'round_robin') expect(delta).toEqual([1, 1]);
    expect(served(cluster.sim.contextWorkers[0]).context_only).toBeGreaterThanOrEqual(2);
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'idle');
  });
});
