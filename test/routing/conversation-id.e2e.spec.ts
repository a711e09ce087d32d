import { describe, expect, it } from '@jest/globals';
import type { SimWorker } from '../../src/simulator';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { allIdle, totalServed } from './support/sim-helpers';

describe('conversation ids the way clients send them, through the app', () => {
  const cluster = useRouterCluster({
    sim: { context: 0, generation: 3, tokenizer: 'bytes' },
    config: (cluster) => ({ generation_servers: { urls: cluster.sim.generationUrls, router: { type: 'conversation', tokens_per_block: 16 } } }),
  });

  async function servedBy(body: Record<string, unknown>, headers: Record<string, string> = {}): Promise<SimWorker> {
    const before = cluster.sim.generationWorkers.map(totalServed);
    const res = await postJson(`${cluster.router.url}/v1/chat/completions`, { model: 'm', max_tokens: 1, ...body }, headers);
    expect(res.status).toBe(200);
    const changed = cluster.sim.generationWorkers.filter((w, i) => totalServed(w) !== before[i]);
    expect(changed).toHaveLength(1);
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'idle');
    return changed[0];
  }
  // Unrelated short turns: nothing but the id can tie them together.
  const turn = (n: number) => ({ messages: [{ role: 'user', content: `unrelated question number ${n} ${'x'.repeat(n)}` }] });

  const sources: [string, (id: string) => { body?: Record<string, unknown>; headers?: Record<string, string> }][] = [
    ['x-session-id', (id) => ({ headers: { 'x-session-id': id } })],
    ['x-correlation-id', (id) => ({ headers: { 'X-Correlation-ID': id } })],
    ['x-session-affinity', (id) => ({ headers: { 'x-session-affinity': id } })],
    ['x-multi-turn-session-id', (id) => ({ headers: { 'x-multi-turn-session-id': id } })],
    ['conversation_params', (id) => ({ body: { conversation_params: { conversation_id: id } } })],
    ['prompt_cache_key', (id) => ({ body: { prompt_cache_key: id } })],
  ];

  it.each(sources)('keeps the turns of an id given as %s on one server', async (name, carry) => {
    let n = 0;
    const homes = new Set<SimWorker>();
    // Two conversations interleaved: each stays home while the other takes another server.
    const ids = [`${name}-a`, `${name}-b`];
    const home: SimWorker[] = [];
    for (const id of ids) {
      const c = carry(id);
      home.push(await servedBy({ ...turn(++n), ...c.body }, c.headers));
    }
    expect(home[0]).not.toBe(home[1]);
    for (let round = 0; round < 3; round++) {
      for (const [i, id] of ids.entries()) {
        const c = carry(id);
        const w = await servedBy({ ...turn(++n), ...c.body }, c.headers);
        homes.add(w);
        expect(w).toBe(home[i]);
      }
    }
    expect(homes.size).toBe(2);
  });

  it('the body id wins over a header id', async () => {
    const a = await servedBy({ ...turn(100), conversation_params: { conversation_id: 'body-wins' } });
    const b = await servedBy({ ...turn(101) }, { 'x-session-id': 'header-loses' });
    expect(b).not.toBe(a);
    const both = await servedBy({ ...turn(102), conversation_params: { conversation_id: 'body-wins' } }, { 'x-session-id': 'header-loses' });
    expect(both).toBe(a);
  });
});
