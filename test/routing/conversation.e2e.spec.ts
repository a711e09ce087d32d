import { describe, expect, it } from '@jest/globals';
import { ConversationRouter } from '../../src/routing';
import { ServerRegistry } from '../../src/servers';
import type { SimWorker } from '../../src/simulator';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { allIdle, routerOf, stateOf, totalServed } from './support/sim-helpers';

describe('conversation routing through the app', () => {
  const cluster = useRouterCluster({
    sim: { context: 0, generation: 3, tokenizer: 'bytes' },
    config: (cluster) => ({ generation_servers: { urls: cluster.sim.generationUrls, router: { type: 'conversation', tokens_per_block: 16 } } }),
  });
  const system = 'You are a careful assistant who answers in full sentences. '.repeat(4);

  const chat = (messages: { role: string; content: string }[], conversationId?: string) =>
    postJson(`${cluster.router.url}/v1/chat/completions`, {
      model: 'm',
      messages,
      max_tokens: 2,
      ...(conversationId ? { disaggregated_params: { request_type: 'context_and_generation', conversation_id: conversationId } } : {}),
    });

  /** Which worker served the request just made (exactly one count went up). */
  async function servedBy(run: () => Promise<{ status: number }>): Promise<SimWorker> {
    const before = cluster.sim.generationWorkers.map(totalServed);
    expect((await run()).status).toBe(200);
    const changed = cluster.sim.generationWorkers.filter((w, i) => totalServed(w) !== before[i]);
    expect(changed).toHaveLength(1);
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'idle');
    return changed[0];
  }

  it('keeps a conversation_id on one server across turns', async () => {
    const first = await servedBy(() => chat([{ role: 'user', content: 'hello' }], 'conv-A'));
    for (let turn = 0; turn < 3; turn++) {
      expect(await servedBy(() => chat([{ role: 'user', content: `turn ${turn}` }], 'conv-A'))).toBe(first);
    }
  });

  it('recognises an implicit continuation by its shared prefix', async () => {
    const history = [
      { role: 'system', content: system },
      { role: 'user', content: 'Tell me about the history of the printing press in Europe, in detail.' },
    ];
    const first = await servedBy(() => chat(history));
    const longer = [...history, { role: 'assistant', content: 'It began in Mainz.' }, { role: 'user', content: 'And then?' }];
    expect(await servedBy(() => chat(longer))).toBe(first);
  });

  it("forgets a removed server's conversations", async () => {
    const home = await servedBy(() => chat([{ role: 'user', content: 'remember me' }], 'conv-B'));
    const registry = cluster.router.app.get(ServerRegistry);
    registry.remove(stateOf(cluster.router.app, 'generation', home.url));
    const conv = routerOf(cluster.router.app) as ConversationRouter;
    expect(conv.sessionServer('conv-B')).toBeUndefined();
    const next = await servedBy(() => chat([{ role: 'user', content: 'still there?' }], 'conv-B'));
    expect(next).not.toBe(home);
    expect(conv.sessionServer('conv-B')?.url).toBe(next.url);
  });
});
