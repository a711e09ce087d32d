import { afterEach, describe, expect, it } from '@jest/globals';
import { blockHashChain } from '../../src/kv-cache/block-hash';
import { BlockHashCache } from '../../src/kv-cache/block-hash-cache';
import { KvCacheAwareRouter, NoServerAvailableError } from '../../src/routing';
import { kvCacheAwareArgs } from '../../src/routing/policies/kv-cache-aware.policy';
import { getTokenizer } from '../../src/tokenizer';
import { cacheBlocks, kvRoom, makeRouter, request, servers, tokens } from './support/policy-harness';

const TPB = 4;

describe('kv_cache_aware scoring', () => {
  const routers: KvCacheAwareRouter[] = [];
  const make = (args: Record<string, unknown> = {}, n = 3) => {
    const s = servers(n);
    const r = makeRouter(
      new KvCacheAwareRouter(kvRoom().poller),
      'kv_cache_aware',
      kvCacheAwareArgs.parse({ max_batch_size: 4, tokens_per_block: TPB, tokenizer: 'bytes', tokenizer_threads: 0, kv_events_timeout_s: 1, ...args }),
      s,
    );
    routers.push(r);
    return { s, r };
  };
  afterEach(async () => {
    await Promise.all(routers.splice(0).map((r) => r.close()));
  });

  it('sends a prompt to the server holding its longest cached prefix and reports the match', async () => {
    const { s, r } = make();
    const prompt = tokens(17); // 16 hashed tokens: 4 blocks of 4
    cacheBlocks(s[1], prompt, TPB, 1);
    cacheBlocks(s[2], prompt, TPB, 3);
    const q = request({ prompt });
    const { server, info } = await r.getNextServer(q);
    expect(server.url).toBe(s[2].url);
    expect(info.matchedTokens).toBe(12);
    expect(info.promptTokens).toBe(17);
    expect(info.matches).toEqual([0, 4, 12]);
    expect(info.hash_algo).toBe('v1_block_key');
    expect(info.token_lists).toEqual([prompt]);
    expect(info.block_hashes).toEqual([blockHashChain(prompt, TPB)]);
  });

  it("reuses the other pool's block keys for the same request, and hashes anew for other lists or another scope", async () => {
    const cache = new BlockHashCache();
    const args = kvCacheAwareArgs.parse({ tokens_per_block: TPB, tokenizer: 'bytes', tokenizer_threads: 0 });
    const [ctxServers, genServers] = [servers(2, 'context'), servers(2)];
    const ctx = makeRouter(new KvCacheAwareRouter(kvRoom().poller, cache), 'kv_cache_aware', args, ctxServers, 'context');
    const gen = makeRouter(new KvCacheAwareRouter(kvRoom().poller, cache), 'kv_cache_aware', args, genServers);
    routers.push(ctx, gen);
    const prompt = tokens(17);
    cacheBlocks(genServers[1], prompt, TPB, 3);
    const first = request({ prompt });
    const picked = await ctx.getNextServer(first);
    expect(picked.info.blockChains?.chains).toEqual([blockHashChain(prompt, TPB)]);
    const lookups = (): number => cache.hits + cache.misses;
    const before = lookups();
    const { server, info } = await gen.getNextServer({ ...first, blockChains: picked.info.blockChains });
    expect(lookups()).toBe(before);
    expect(server.url).toBe(genServers[1].url);
    expect(info.matches).toEqual([0, 12]);
    // Equal ids in another list, or another cache salt: computed, with the same result.
    await gen.getNextServer({ ...request({ prompt: [...prompt] }), blockChains: picked.info.blockChains });
    expect(lookups()).toBe(before + 1);
    const salted = await gen.getNextServer({ ...request({ prompt, cache_salt: 'tenant-a' }), blockChains: picked.info.blockChains });
    expect(lookups()).toBe(before + 2);
    expect(salted.info.matches).toEqual([0, 0]);
  });

  it('only counts leading blocks: a gap stops the match', async () => {
    const { s, r } = make({}, 2);
    const prompt = tokens(17);
    const chain = blockHashChain(prompt, TPB);
    s[0].kvTable().add(chain[1]);
    s[0].kvTable().add(chain[2]);
    s[1].kvTable().add(chain[0]);
    const { server, info } = await r.getNextServer(request({ prompt }));
    expect(server.url).toBe(s[1].url);
    expect(info.matches).toEqual([0, 4]);
  });

  it('weighs the match against load: matched blocks - load_weight * active (0.25 by default)', async () => {
    const { s, r } = make({}, 2);
    const prompt = tokens(17);
    cacheBlocks(s[0], prompt, TPB, 2); // 2 blocks
    s[0].activeRequests = 9; // 2 - 9/4 = -0.25 < 0 - 0
    expect((await r.getNextServer(request({ prompt }))).server.url).toBe(s[1].url);
    s[0].activeRequests = 7; // 2 - 7/4 = 0.25 > 0 - 1/4 (s[1] now holds one)
    expect((await r.getNextServer(request({ prompt }))).server.url).toBe(s[0].url);
    const weighted = make({ load_weight: 1 }, 2);
    cacheBlocks(weighted.s[0], prompt, TPB, 2);
    weighted.s[0].activeRequests = 3; // 2 - 3 < 0
    expect((await weighted.r.getNextServer(request({ prompt }))).server.url).toBe(weighted.s[1].url);
  });

  it('with score ratio, as releases before load_weight: matched/padded - active/max_batch_size', async () => {
    const { s, r } = make({ score: 'ratio' }, 2);
    const prompt = tokens(17);
    cacheBlocks(s[0], prompt, TPB, 2); // 8/16 = 0.5
    s[0].activeRequests = 3; // 0.5 - 3/4 = -0.25 < 0 - 0/4
    expect((await r.getNextServer(request({ prompt }))).server.url).toBe(s[1].url);
    s[0].activeRequests = 1; // 0.5 - 0.25 = 0.25 > 0 - 1/4 (s[1] now holds one)
    expect((await r.getNextServer(request({ prompt }))).server.url).toBe(s[0].url);
  });

  it('breaks equal scores round robin, the counter advancing on every pick', async () => {
    const { s, r } = make({ max_batch_size: 64 });
    const picks: string[] = [];
    for (let i = 0; i < 4; i++) {
      const q = request({ prompt: tokens(9, 5000 + i) });
      picks.push((await r.getNextServer(q)).server.url);
      await r.finishRequest(q);
    }
    expect(picks).toEqual([s[0].url, s[1].url, s[2].url, s[0].url]);
  });

  it("keeps a chat's later turns on its conversation's server while it is under load_cap", async () => {
    const { s, r } = make({ load_cap: 1 }, 2);
    // Longer than the 256 leading ids the key folds in, as a real system prompt: every turn repeats them.
    const system = { role: 'system', content: 'you are terse. '.repeat(20) };
    const turn = (n: number, question = 'first question') =>
      request({ messages: [system, { role: 'user', content: question }, ...Array.from({ length: n }, (_, i) => ({ role: 'user', content: `more ${i}` }))] }, 'chat');
    const first = await r.getNextServer(turn(0));
    const home = first.server;
    const other = s.find((x) => x !== home)!;
    // The score alone would now pick the other server: it holds the whole prompt, home is busy.
    cacheBlocks(other, getTokenizer('bytes').encodeChat(turn(1).body.messages as never), TPB);
    home.activeRequests = 3;
    expect((await r.getNextServer(turn(1))).server).toBe(home);
    // Another conversation (another first question) is scored as usual.
    expect((await r.getNextServer(turn(1, 'second question'))).server).toBe(other);
    // At the load cap (4 in flight of max_batch_size 4), the pin gives way and moves.
    home.activeRequests = 4;
    expect((await r.getNextServer(turn(2))).server).toBe(other);
    home.activeRequests = 0;
    expect((await r.getNextServer(turn(3))).server).toBe(other);
    expect(r.snapshot()).toMatchObject({ conversation_pins: 2 });
    // Off, as releases before it: the score decides every turn.
    const off = make({ conversation_affinity: false }, 2);
    const a = await off.r.getNextServer(turn(0));
    const elsewhere = off.s.find((x) => x !== a.server)!;
    cacheBlocks(elsewhere, getTokenizer('bytes').encodeChat(turn(1).body.messages as never), TPB);
    expect((await off.r.getNextServer(turn(1))).server).toBe(elsewhere);
  });

  it('never picks an excluded server, even with the best match, and fails when none is left', async () => {
    const { s, r } = make({}, 2);
    const prompt = tokens(17);
    cacheBlocks(s[0], prompt, TPB);
    const { server, info } = await r.getNextServer(request({ prompt }), { excludeServer: s[0].url });
    expect(server.url).toBe(s[1].url);
    expect(info.matchedTokens).toBe(0);
    await expect(r.getNextServer(request({ prompt }), { excludeServer: [s[0].url, s[1].url] })).rejects.toThrow(NoServerAvailableError);
  });

  it('tokenizes text and chat with the configured tokenizer and keeps the ids for forwarding', async () => {
    const { s, r } = make({}, 1);
    const text = request({ prompt: 'the quick brown fox jumps' });
    const a = await r.getNextServer(text);
    expect(a.info.tokenIds).toEqual(getTokenizer('bytes').encode('the quick brown fox jumps'));
    expect(a.info.promptTokens).toBe(a.info.tokenIds!.length);
    expect(text.tokenIds).toBeUndefined();
    const messages = [{ role: 'user', content: 'hello' }];
    const chat = request({ messages }, 'chat');
    expect((await r.getNextServer(chat)).info.tokenIds).toEqual(getTokenizer('bytes').encodeChat(messages));
    const given = request({ messages, prompt_token_ids: [7, 8, 9] }, 'chat');
    expect((await r.getNextServer(given)).info.token_lists).toEqual([[7, 8, 9]]);
    for (const q of [text, chat, given]) await r.finishRequest(q);
    expect(s[0].activeRequests).toBe(0);
  });

  it('does not forward ids of a chat it cannot render exactly (tools, images, template options)', async () => {
    const { r } = make({}, 1);
    const messages = [{ role: 'user', content: 'weather?' }];
    const bodies = [
      { messages, tools: [{ type: 'function', function: { name: 'get_weather', parameters: {} } }] },
      { messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this' }, { type: 'image_url', image_url: { url: 'data:,' } }] }] },
      { messages, add_generation_prompt: false },
      { messages, chat_template_kwargs: { enable_thinking: false } },
    ];
    for (const body of bodies) {
      const q = request(body, 'chat');
      const { info } = await r.getNextServer(q);
      expect(info.promptTokens).toBeGreaterThan(0);
      expect(info.tokenIds).toBeUndefined();
      await r.finishRequest(q);
    }
  });

  it('counts prompt tokens as load with use_tokens; load returns to zero on success and failure', async () => {
    const { s, r } = make({ use_tokens: true }, 2);
    const a = request({ prompt: tokens(10) });
    const b = request({ prompt: tokens(20, 9000) });
    const ra = await r.getNextServer(a);
    const rb = await r.getNextServer(b);
    expect(ra.server.activeTokens + rb.server.activeTokens).toBe(30);
    await r.finishRequest(a, { success: true });
    await r.finishRequest(b, { success: false });
    await r.finishRequest(b, { success: false }); // a second finish is a no-op
    expect(s.map((x) => [x.activeRequests, x.activeTokens])).toEqual([[0, 0], [0, 0]]);
  });

  it('backfills the routed blocks on success when asked (workers without events)', async () => {
    const { s, r } = make({ backfill_block_hashes_on_finish: true }, 2);
    const prompt = tokens(17);
    const ok = request({ prompt });
    const { server } = await r.getNextServer(ok);
    await r.finishRequest(ok, { success: true });
    expect(server.kvTable().size).toBe(4);
    const other = s.find((x) => x !== server)!;
    const failed = request({ prompt: tokens(17, 7000) });
    const routed = await r.getNextServer(failed, { excludeServer: server.url });
    expect(routed.server).toBe(other);
    await r.finishRequest(failed, { success: false });
    expect(other.kvTable().size).toBe(0);
    // The next request with that prompt follows the backfilled blocks.
    expect((await r.getNextServer(request({ prompt }))).server).toBe(server);
  });

  it('follows servers added and removed mid-traffic; a removed server still releases its load', async () => {
    const { s, r } = make({}, 2);
    const prompt = tokens(17);
    cacheBlocks(s[0], prompt, TPB);
    const held = request({ prompt });
    expect((await r.getNextServer(held)).server.url).toBe(s[0].url);
    const [late] = servers(1);
    r.addServer(late);
    cacheBlocks(late, prompt, TPB);
    // Same full match; the newcomer has no load, so it wins.
    const next = request({ prompt });
    expect((await r.getNextServer(next)).server.url).toBe(late.url);
    r.removeServer(s[0]);
    const after = request({ prompt });
    expect((await r.getNextServer(after)).server.url).not.toBe(s[0].url);
    for (const q of [held, next, after]) await r.finishRequest(q);
    expect([...s, late].map((x) => x.activeRequests)).toEqual([0, 0, 0]);
    expect(r.snapshot().in_flight).toBe(0);
  });

  it('gives no match on a server whose hash algorithm it cannot compute', async () => {
    const { s, r } = make({}, 2);
    const prompt = tokens(17);
    s[0].serverInfo = { kv_cache_hash_algo: 'v2_sha256' };
    for (const h of blockHashChain(prompt, TPB)) s[0].kvTable('v2_sha256').add(h);
    cacheBlocks(s[1], prompt, TPB, 1);
    const { server, info } = await r.getNextServer(request({ prompt }));
    expect(server.url).toBe(s[1].url);
    expect(info.matches).toEqual([0, 4]);
  });
});
