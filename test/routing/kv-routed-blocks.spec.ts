import { afterEach, describe, expect, it } from '@jest/globals';
import { blockHashChain } from '../../src/kv-cache/block-hash';
import { v2Sha256Chain } from '../../src/kv-cache/block-hash-v2';
import { cacheSaltId } from '../../src/kv-cache/cache-salt';
import { applyKvEvents, KvBlockTable } from '../../src/kv-cache';
import { KvCacheAwareRouter, kvCacheAwareArgs } from '../../src/routing';
import { kvRoom, makeRouter, request, servers, tokens } from './support/policy-harness';

const TPB = 4;

describe('kv_cache_aware: routed-block tracking, load_weight, load_cap, adopted block size', () => {
  const routers: KvCacheAwareRouter[] = [];
  const make = (args: Record<string, unknown> = {}, n = 2) => {
    const s = servers(n);
    const parsed = kvCacheAwareArgs.parse({ tokens_per_block: TPB, tokenizer: 'bytes', tokenizer_threads: 0, kv_events_timeout_s: 1, ...args });
    const r = makeRouter(new KvCacheAwareRouter(kvRoom().poller), 'kv_cache_aware', parsed, s);
    routers.push(r);
    return { s, r };
  };
  afterEach(async () => {
    await Promise.all(routers.splice(0).map((r) => r.close()));
  });

  it("has the newest TensorRT-LLM's defaults: tracking on, load_weight 0.25 on the blocks score, conversation affinity, no cap, no block size", () => {
    const args = kvCacheAwareArgs.parse({});
    expect(args.track_routed_blocks).toBe(true);
    expect(args.load_weight).toBe(0.25);
    expect(args.score).toBe('blocks');
    expect(args.conversation_affinity).toBe(true);
    expect(args.load_cap).toBeUndefined();
    expect(args.tokens_per_block).toBeUndefined();
    expect(() => kvCacheAwareArgs.parse({ load_cap: 0 })).toThrow();
    expect(() => kvCacheAwareArgs.parse({ load_weight: -1 })).toThrow();
    expect(() => kvCacheAwareArgs.parse({ score: 'tokens' })).toThrow();
  });

  it('records a finished prompt on its server at once: the same prompt follows it', async () => {
    const { s, r } = make();
    const prompt = tokens(17);
    const first = request({ prompt });
    const a = await r.getNextServer(first);
    expect(a.info.matchedTokens).toBe(0);
    // Not awaited: the record is made before finishRequest yields (the KV poll comes after).
    const finishing = r.finishRequest(first);
    const chain = blockHashChain(prompt, TPB);
    expect(a.server.kvTable().matchPrefix(chain)).toBe(4);
    const again = await r.getNextServer(request({ prompt }));
    expect(again.server).toBe(a.server);
    expect(again.info.matchedTokens).toBe(16);
    expect(a.server === s[0] ? s[1].kvTable().size + s[1].kvTable().trackedSize : s[0].kvTable().trackedSize).toBe(0);
    await finishing;
  });

  it('records nothing for a failed request or with track_routed_blocks off', async () => {
    for (const [args, success] of [[{}, false], [{ track_routed_blocks: false }, true]] as const) {
      const { s, r } = make(args);
      const q = request({ prompt: tokens(17) });
      const { server } = await r.getNextServer(q);
      await r.finishRequest(q, { success });
      expect(server.kvTable().trackedSize + server.kvTable().size).toBe(0);
      expect(s.every((x) => x.activeRequests === 0)).toBe(true);
    }
  });

  it('events stay the truth: removed drops a recorded block, stored confirms it, created clears', async () => {
    const { r } = make({ routed_blocks_ttl_s: 30 });
    const prompt = tokens(17);
    const chain = blockHashChain(prompt, TPB);
    const q = request({ prompt });
    const { server } = await r.getNextServer(q);
    await r.finishRequest(q);
    expect(server.kvTable().trackedSize).toBe(4);
    applyKvEvents(server, [{ event_id: 1, data: { type: 'stored', parent_hash: null, blocks: chain.slice(0, 2).map((h) => ({ type: 'stored_block', block_hash: h, tokens: [], lora_id: null, cache_level: 0, priority: 35 })) } }]);
    expect(server.kvTable().size).toBe(2);
    expect(server.kvTable().trackedSize).toBe(2);
    applyKvEvents(server, [{ event_id: 2, data: { type: 'removed', block_hashes: [chain[2]] } }]);
    expect(server.kvTable().matchPrefix(chain)).toBe(2);
    const next = await r.getNextServer(request({ prompt }));
    expect(next.info.matchedTokens).toBe(8);
    applyKvEvents(server, [{ event_id: 3, data: { type: 'created', num_blocks_per_cache_level: [64, 0] } }]);
    expect(server.kvTable().matchPrefix(chain)).toBe(0);
    expect(server.kvTable().trackedSize).toBe(0);
  });

  it('a recorded block no event confirms expires; a confirmed one does not', () => {
    const table = new KvBlockTable();
    table.track([1n, 2n], 1000, 0);
    table.add(2n);
    expect(table.has(1n, 999)).toBe(true);
    expect(table.has(1n, 1000)).toBe(false);
    expect(table.has(2n, 5000)).toBe(true);
    table.track([3n], 1000, 2000);
    // Tracking sweeps what expired.
    expect([...table.trackedKeys()]).toEqual([3n]);
    expect(table.matchPrefix([2n, 3n], 2500)).toBe(2);
    expect(table.matchPrefix([2n, 3n], 3000)).toBe(1);
  });

  it('without load_weight the ratio score stays; with it, matched blocks - load_weight * load', async () => {
    const prompt = tokens(17);
    const score = async (args: Record<string, unknown>) => {
      const { s, r } = make({ max_batch_size: 10, ...args }, 3);
      for (const h of blockHashChain(prompt, TPB)) s[0].kvTable().add(h);
      s[0].activeRequests = 7;
      s[1].activeRequests = 1;
      s[2].activeRequests = 1;
      const chosen = (await r.getNextServer(request({ prompt }))).server;
      return s.indexOf(chosen);
    };
    // 16/16 - 7/10 = 0.3 beats 0 - 1/10.
    expect(await score({})).toBe(0);
    // 4 blocks - 5 * 7 loses to 0 - 5 * 1; with weight 0.25: 4 - 1.75 wins.
    expect(await score({ load_weight: 5 })).not.toBe(0);
    expect(await score({ load_weight: 0.25 })).toBe(0);
  });

  it('load_cap skips servers at or over the cap, unless all are', async () => {
    const prompt = tokens(17);
    const { s, r } = make({ max_batch_size: 10, load_cap: 0.8 }, 3);
    for (const h of blockHashChain(prompt, TPB)) s[0].kvTable().add(h);
    s[0].activeRequests = 9;
    s[1].activeRequests = 9;
    s[2].activeRequests = 1;
    expect((await r.getNextServer(request({ prompt }))).server).toBe(s[2]);
    s[2].activeRequests = 8;
    s[0].activeRequests = 8;
    s[1].activeRequests = 9;
    // All at or over 0.8: the best score among all wins (the cached one).
    expect((await r.getNextServer(request({ prompt }))).server).toBe(s[0]);
  });

  it('adopts tokens_per_block from /server_info when the config leaves it out', async () => {
    const prompt = tokens(33);
    const { s, r } = make({ tokens_per_block: undefined });
    expect(r.tokensPerBlock).toBe(32);
    s[0].serverInfo = { tokens_per_block: 8 };
    s[1].serverInfo = { tokens_per_block: 16 };
    const { info } = await r.getNextServer(request({ prompt }));
    expect(info.block_hashes).toEqual([blockHashChain(prompt, 8)]);
    expect(r.snapshot()).toMatchObject({ tokens_per_block: 8, tokens_per_block_source: 'server_info' });
    const configured = make({ tokens_per_block: 4 });
    configured.s[0].serverInfo = { tokens_per_block: 8 };
    expect(configured.r.tokensPerBlock).toBe(4);
  });

  it('hashes with each server\'s algorithm and the request\'s cache salt', async () => {
    const prompt = tokens(17);
    const { s, r } = make({}, 3);
    for (const x of s) x.serverInfo = { kv_cache_hash_algo: 'v2_sha256' };
    const salted = v2Sha256Chain(prompt, TPB, cacheSaltId('tenant-a'));
    for (const h of salted) s[1].kvTable().add(h);
    for (const h of v2Sha256Chain(prompt, TPB)) s[2].kvTable().add(h);
    const a = await r.getNextServer(request({ prompt, cache_salt: 'tenant-a' }));
    expect(a.server).toBe(s[1]);
    expect(a.info).toMatchObject({ hash_algo: 'v2_sha256', matches: [0, 16, 0], block_hashes: [salted] });
    const b = await r.getNextServer(request({ prompt }));
    expect(b.server).toBe(s[2]);
    expect(b.info.matches).toEqual([0, 0, 16]);
  });
});
