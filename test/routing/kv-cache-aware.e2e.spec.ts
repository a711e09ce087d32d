import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { DEFAULT_HTTP_SESSION_OPTIONS, HttpSessionProvider } from '../../src/http-session';
import { blockHashChain } from '../../src/kv-cache/block-hash';
import { KvCacheAwareRouter, kvCacheAwareArgs } from '../../src/routing';
import { ServerState } from '../../src/servers';
import { startSimCluster, type SimCluster } from '../../src/simulator';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { admin, TOKEN } from '../admin/admin-support';
import { kvRoom, request, tokens } from './support/policy-harness';
import { allIdle, confirmsPrefix, holdsPrefix, served, stateOf, totalServed } from './support/sim-helpers';

const TPB = 32;
const KV_BLOCKS = 12;
const P = tokens(8 * TPB + 1, 1000); // 8 blocks
const chainP = blockHashChain(P, TPB);
const kvRouter = (extra: Record<string, unknown> = {}) => ({ type: 'kv_cache_aware', tokens_per_block: TPB, tokenizer: 'bytes', ...extra });

describe('kv_cache_aware against simulated workers', () => {
  let cluster: SimCluster;
  let router: RunningRouter | undefined;

  beforeAll(async () => {
    cluster = await startSimCluster({ context: 0, generation: 2, kvBlocks: KV_BLOCKS, tokensPerBlock: TPB, tokenizer: 'bytes' });
  });
  afterEach(async () => {
    await router?.close();
    router = undefined;
  });
  afterAll(async () => {
    await cluster?.close();
  });

  it('fills a server block table from its real events on finish and follows the cached prefix', async () => {
    router = await startRouter({ generation_servers: { urls: cluster.generationUrls, router: kvRouter() } });
    const [w0, w1] = cluster.generationWorkers;
    const s0 = stateOf(router.app, 'generation', w0.url);
    const first = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: P, max_tokens: 2 });
    expect(first.status).toBe(200);
    // All scores tie at 0: the round-robin counter starts at the first server.
    expect(totalServed(w0)).toBe(1);
    await waitFor(() => confirmsPrefix(s0, chainP), 10_000, 'the router to apply the stored events');
    expect(new Set(w0.kv.hashes())).toEqual(new Set([...s0.kvTable().keys()]));
    // The blocks recorded on finish were confirmed by the events: nothing left to expire.
    expect(s0.kvTable().trackedSize).toBe(0);

    for (let turn = 0; turn < 3; turn++) {
      await waitFor(() => allIdle(router!.app), 10_000, 'idle');
      const res = await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: [...P, ...tokens(5, 7000 + turn * 10)], max_tokens: 2 });
      expect(res.status).toBe(200);
      expect((res.json.usage as Record<string, unknown>).prompt_tokens_details).toMatchObject({ cached_tokens: 8 * TPB });
    }
    expect(totalServed(w0)).toBe(4);
    expect(totalServed(w1)).toBe(0);
    await waitFor(() => allIdle(router!.app), 10_000, 'load back to zero');
  });

  it("keeps each chat conversation on one server and shows its pins in the admin view", async () => {
    router = await startRouter({ generation_servers: { urls: cluster.generationUrls, router: kvRouter() }, admin: { token: TOKEN } });
    const before = cluster.generationWorkers.map(totalServed);
    // A system prompt past the 256 leading ids every turn's key folds in.
    const system = { role: 'system', content: 'Answer in one short sentence, please. '.repeat(8) };
    const homes: number[][] = [[], []];
    for (let turn = 0; turn < 3; turn++) {
      for (const c of [0, 1]) {
        await waitFor(() => allIdle(router!.app), 10_000, 'idle');
        const counts = cluster.generationWorkers.map(totalServed);
        const messages = [system, { role: 'user', content: `conversation ${c} opens` }, ...Array.from({ length: turn }, (_, t) => ({ role: 'user', content: `turn ${t}` }))];
        const res = await postJson(`${router.url}/v1/chat/completions`, { model: 'm', messages, max_tokens: 2 });
        expect(res.status).toBe(200);
        homes[c].push(cluster.generationWorkers.findIndex((w, i) => totalServed(w) > counts[i]));
      }
    }
    for (const h of homes) expect(new Set(h).size).toBe(1);
    expect(cluster.generationWorkers.map(totalServed).reduce((a, b) => a + b) - before.reduce((a, b) => a + b)).toBe(6);
    const view = await admin(router.url, 'GET', 'routers/generation');
    expect(view.status).toBe(200);
    expect(view.body.state).toMatchObject({ score: 'blocks', conversation_pins: 2 });
  });

  it('moves a prefix away once the server evicts it (periodic polling, removed events)', async () => {
    router = await startRouter({ generation_servers: { urls: cluster.generationUrls, router: kvRouter({ kv_events_poll_interval_s: 0.05 }) } });
    const [w0, w1] = cluster.generationWorkers;
    const s0 = stateOf(router.app, 'generation', w0.url);
    const s1 = stateOf(router.app, 'generation', w1.url);
    w0.kv.clear();
    w1.kv.clear();
    w0.kv.admit(P);
    await waitFor(() => holdsPrefix(s0, chainP), 10_000, 'periodic poll of stored events');
    const before = served(w0).plain;
    expect((await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: P, max_tokens: 1 })).status).toBe(200);
    expect(served(w0).plain).toBe(before + 1);

    // The worker fills up with other prompts (LRU eviction), and the other one gets P.
    w0.kv.admit(tokens(KV_BLOCKS * TPB + 1, 50_000));
    w1.kv.admit(P);
    await waitFor(() => !s0.kvTable().has(chainP[0]) && holdsPrefix(s1, chainP), 10_000, 'removed and stored events applied');
    await waitFor(() => allIdle(router!.app), 10_000, 'idle');
    const w1Before = served(w1).plain;
    expect((await postJson(`${router.url}/v1/completions`, { model: 'm', prompt: P, max_tokens: 1 })).status).toBe(200);
    expect(served(w1).plain).toBe(w1Before + 1);
  });

  it('a router built before the session opened polls once it is open', async () => {
    const w = cluster.generationWorkers[0];
    w.kv.clear();
    const session = new HttpSessionProvider(DEFAULT_HTTP_SESSION_OPTIONS);
    const state = new ServerState({ url: w.url, role: 'generation', source: 'config' });
    const room = kvRoom(session);
    room.workers.attach(state);
    const kv = new KvCacheAwareRouter(room.poller);
    kv.init({ policy: 'kv_cache_aware', role: 'generation', args: kvCacheAwareArgs.parse({ tokens_per_block: TPB, tokenizer: 'bytes', tokenizer_threads: 0, track_routed_blocks: false, kv_events_poll_interval_s: 0.05 }) });
    kv.addServer(state);
    try {
      const early = request({ prompt: P });
      await kv.getNextServer(early);
      await kv.finishRequest(early);
      expect(state.kvTable().size).toBe(0);
      expect(state.activeRequests).toBe(0);

      session.onModuleInit();
      w.kv.admit(P);
      await waitFor(() => holdsPrefix(state, chainP), 10_000, 'the periodic poll after the session opened');
      const Q = tokens(4 * TPB + 1, 90_000);
      w.kv.admit(Q);
      const late = request({ prompt: Q });
      await kv.getNextServer(late);
      await kv.finishRequest(late);
      // finishRequest waited for a poll that ran after Q was stored.
      expect(holdsPrefix(state, blockHashChain(Q, TPB))).toBe(true);
    } finally {
      await kv.close();
      await session.onModuleDestroy();
    }
  });
});
