import { afterEach, describe, expect, it } from '@jest/globals';
import { ConversationRouter, NoServerAvailableError } from '../../src/routing';
import { makeRouter, request, servers, tokens } from './support/policy-harness';

const TPB = 4;
const conv = (id: string | number, prompt: unknown) => ({ prompt, disaggregated_params: { conversation_id: id } });

describe('conversation', () => {
  const routers: ConversationRouter[] = [];
  const make = (args: Record<string, unknown> = {}, n = 3) => {
    const s = servers(n);
    const r = makeRouter(
      new ConversationRouter(),
      'conversation',
      { match_threshold: 0.75, tokens_per_block: TPB, use_token_ids: false, hash_skip_count: 0, max_sessions: 100, tokenizer: 'bytes', tokenizer_threads: 0, ...args },
      s,
    );
    routers.push(r);
    return { s, r };
  };
  afterEach(async () => {
    await Promise.all(routers.splice(0).map((r) => r.close()));
  });

  it('keeps a conversation_id on its server, whatever the load', async () => {
    const { s, r } = make();
    const first = await r.getNextServer(request(conv('c-1', tokens(9))));
    expect(first.info.match).toBe('fallback');
    first.server.activeRequests = 50;
    for (let turn = 0; turn < 3; turn++) {
      const next = await r.getNextServer(request(conv('c-1', tokens(9 + 8 * turn, 4000 + turn))));
      expect(next.server.url).toBe(first.server.url);
      expect(next.info.match).toBe('sticky');
    }
    // A numeric id works as the same string id.
    const numbered = await r.getNextServer(request(conv(42, 'x')));
    expect((await r.getNextServer(request(conv('42', 'y')))).server.url).toBe(numbered.server.url);
    expect(s.length).toBe(3);
  });

  it('routes an implicit continuation (long shared prefix) to the same server', async () => {
    const { r } = make();
    const turn1 = tokens(33); // 8 blocks
    const a = await r.getNextServer(request({ prompt: turn1 }));
    // Turn 2 extends turn 1: 8 of its 9 blocks match (0.89 >= 0.75).
    const turn2 = [...turn1, ...tokens(4, 100)];
    const b = await r.getNextServer(request({ prompt: turn2 }));
    expect(b.info.match).toBe('implicit');
    expect(b.server.url).toBe(a.server.url);
    expect(b.info.conversation_id).toBe(a.info.conversation_id);
    // Below the threshold (4 of 9 blocks) it is a new session on the least loaded server.
    const c = await r.getNextServer(request({ prompt: [...turn1.slice(0, 17), ...tokens(20, 300)] }));
    expect(c.info.match).toBe('fallback');
    expect(c.server.url).not.toBe(a.server.url);
  });

  it('hashes code points of text without a tokenizer, skipping hash_skip_count * 5 of them', async () => {
    const { r } = make({ hash_skip_count: 4 });
    const system = 'S'.repeat(20); // 4 "tokens" * 5 characters: skipped
    const a = await r.getNextServer(request({ prompt: system + 'user question one, about apples and pears' }));
    const b = await r.getNextServer(request({ prompt: system + 'user question one, about apples and pears, and more' }));
    expect(b.info.match).toBe('implicit');
    expect(b.server.url).toBe(a.server.url);
    // Another user behind the same system prompt is not a continuation.
    const c = await r.getNextServer(request({ prompt: system + 'completely different words here' }));
    expect(c.info.match).toBe('fallback');
  });

  it('falls back to the least estimated content load, ties round robin', async () => {
    const { s, r } = make();
    const big = request({ prompt: tokens(41) }); // 10 blocks -> 40 tokens of weight
    expect((await r.getNextServer(big)).server.url).toBe(s[0].url);
    const small = request({ prompt: tokens(5, 9000) });
    expect((await r.getNextServer(small)).server.url).toBe(s[2].url); // s[1], s[2] tie; counter 1
    const third = request({ prompt: tokens(5, 7000) });
    expect((await r.getNextServer(third)).server.url).toBe(s[1].url);
    for (const q of [big, small, third]) await r.finishRequest(q);
    expect(r.snapshot().content_load).toEqual(Object.fromEntries(s.map((x) => [x.id, 0])));
    expect(s.map((x) => x.activeRequests)).toEqual([0, 0, 0]);
  });

  it('leaves an excluded sticky server and re-homes the conversation', async () => {
    const { r } = make({}, 2);
    const a = await r.getNextServer(request(conv('c', 'hello')));
    const b = await r.getNextServer(request(conv('c', 'hello again')), { excludeServer: a.server.url });
    expect(b.server.url).not.toBe(a.server.url);
    expect(b.info.match).toBe('fallback');
    expect(r.sessionServer('c')?.url).toBe(b.server.url);
    await expect(r.getNextServer(request(conv('c', 'x')), { excludeServer: [a.server.url, b.server.url] })).rejects.toThrow(NoServerAvailableError);
  });

  it("forgets a removed server's sessions, explicit and implicit", async () => {
    const { s, r } = make({}, 3);
    const implicit = await r.getNextServer(request({ prompt: tokens(33, 20_000) }));
    const a = await r.getNextServer(request(conv('gone', tokens(33))));
    expect(a.server.url).not.toBe(implicit.server.url);
    r.removeServer(a.server);
    r.removeServer(implicit.server);
    const left = s.find((x) => x !== a.server && x !== implicit.server)!;
    expect(r.sessionServer('gone')).toBeUndefined();
    expect(r.sessionCount).toBe(0);
    const again = await r.getNextServer(request(conv('gone', tokens(33))));
    expect(again.info.match).toBe('fallback');
    expect(again.server.url).toBe(left.url);
    const cont = await r.getNextServer(request({ prompt: [...tokens(33, 20_000), 1, 2, 3, 4] }));
    expect(cont.info.match).toBe('fallback');
  });

  it('evicts the least recently used session beyond max_sessions', async () => {
    const { r } = make({ max_sessions: 2 });
    await r.getNextServer(request(conv('a', 'one')));
    await r.getNextServer(request(conv('b', 'two')));
    await r.getNextServer(request(conv('a', 'one more'))); // a is now the most recent
    await r.getNextServer(request(conv('c', 'three')));
    expect(r.sessionCount).toBe(2);
    expect(r.sessionServer('b')).toBeUndefined();
    expect(r.sessionServer('a')).toBeDefined();
    expect(r.sessionServer('c')).toBeDefined();
  });

  it('keeps a session used on every request while the others go oldest first, its bytes counted once', async () => {
    const { r } = make({ max_sessions: 10 });
    const bytesOfOne = async (): Promise<number> => {
      const { r: alone } = make();
      await alone.getNextServer(request(conv('hot', 'hot turn')));
      return alone.sessionTableBytes;
    };
    const cold = (i: number): string => `cold-${String(i).padStart(2, '0')}`;
    for (let i = 0; i < 10; i++) await r.getNextServer(request(conv(cold(i), 'c')));
    for (let i = 10; i < 40; i++) {
      await r.getNextServer(request(conv('hot', 'hot turn')));
      await r.getNextServer(request(conv(cold(i), 'c')));
    }
    expect(r.sessionCount).toBe(10);
    expect(r.sessionServer('hot')).toBeDefined();
    // The newest nine cold sessions and the hot one.
    expect(r.sessionServer(cold(30))).toBeUndefined();
    for (let i = 31; i < 40; i++) expect(r.sessionServer(cold(i))).toBeDefined();
    const { r: oneCold } = make();
    await oneCold.getNextServer(request(conv(cold(0), 'c')));
    expect(r.sessionTableBytes).toBe((await bytesOfOne()) + 9 * oneCold.sessionTableBytes);
  });

  it('evicts the least recently used sessions beyond max_table_bytes, and gives the bytes back', async () => {
    const { r, s } = make({ max_table_bytes: 20_000 });
    for (let i = 0; i < 40; i++) {
      await r.getNextServer(request(conv(`long-${i}`, tokens(33, 1_000 + i))));
      expect(r.sessionTableBytes).toBeLessThanOrEqual(20_000);
    }
    expect(r.sessionCount).toBeLessThan(40);
    expect(r.sessionServer('long-39')).toBeDefined();
    expect(r.sessionServer('long-0')).toBeUndefined();
    for (const server of s) r.removeServer(server);
    expect(r.sessionCount).toBe(0);
    expect(r.sessionTableBytes).toBe(0);
  });
});
