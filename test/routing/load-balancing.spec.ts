import { afterEach, describe, expect, it } from '@jest/globals';
import { LoadBalancingRouter, NoServerAvailableError } from '../../src/routing';
import { getTokenizer } from '../../src/tokenizer';
import { makeRouter, request, servers, tokens } from './support/policy-harness';

describe('load_balancing', () => {
  const routers: LoadBalancingRouter[] = [];
  const make = (args: Record<string, unknown>, n = 3) => {
    const s = servers(n);
    const r = makeRouter(new LoadBalancingRouter(), 'load_balancing', { use_tokens: false, tokenizer: 'bytes', tokenizer_threads: 0, ...args }, s);
    routers.push(r);
    return { s, r };
  };
  afterEach(async () => {
    await Promise.all(routers.splice(0).map((r) => r.close()));
  });

  it('picks the server with the fewest active requests', async () => {
    const { s, r } = make({});
    s[0].activeRequests = 2;
    s[1].activeRequests = 1;
    s[2].activeRequests = 3;
    expect((await r.getNextServer(request({ prompt: 'a' }))).server.url).toBe(s[1].url);
    // Now s[0] and s[1] tie at 2; the counter (1 after one pick) takes tied[1].
    expect((await r.getNextServer(request({ prompt: 'a' }))).server.url).toBe(s[1].url);
  });

  it('breaks ties round robin (TensorRT-LLM: the counter advances on every pick)', async () => {
    const { s, r } = make({});
    const picks = [];
    for (let i = 0; i < 3; i++) {
      const q = request({ prompt: 'a' });
      picks.push((await r.getNextServer(q)).server);
      await r.finishRequest(q);
    }
    // All tied at 0 each time: tied[counter % 3] with counter 0, 1, 2.
    expect(picks.map((x) => x.url)).toEqual([s[0].url, s[1].url, s[2].url]);
  });

  it('balances prompt tokens with use_tokens (token ids as given, text tokenized)', async () => {
    const { s, r } = make({ use_tokens: true });
    const big = request({ prompt: tokens(100) });
    const first = await r.getNextServer(big);
    expect(first.server.url).toBe(s[0].url);
    expect(s[0].activeTokens).toBe(100);
    expect(first.info.promptTokens).toBe(100);
    // s[1] and s[2] tie at 0 tokens; the round-robin counter (now 1) picks tied[1] = s[2].
    const text = request({ prompt: 'hello world' });
    const second = await r.getNextServer(text);
    expect(second.server.url).toBe(s[2].url);
    expect(s[2].activeTokens).toBe(getTokenizer('bytes').encode('hello world').length);
    const chat = request({ messages: [{ role: 'user', content: 'hi there' }] }, 'chat');
    const third = await r.getNextServer(chat);
    expect(third.server.url).toBe(s[1].url);
    const chatTokens = getTokenizer('bytes').encodeChat([{ role: 'user', content: 'hi there' }]).length;
    expect(s[1].activeTokens).toBe(chatTokens);
    // Fewest tokens: the 11-byte prompt's server, not the 100-token or the chat one.
    expect((await r.getNextServer(request({ prompt: tokens(5) }))).server.url).toBe(s[2].url);
    for (const q of [big, text, chat]) await r.finishRequest(q, { success: false });
    expect(s.map((x) => x.activeTokens)).toEqual([0, 0, 5]);
    expect(third.info.tokenIds).toHaveLength(chatTokens);
  });

  it('skips excluded servers and fails when none is left', async () => {
    const { s, r } = make({}, 2);
    s[1].activeRequests = 5;
    expect((await r.getNextServer(request({ prompt: 'a' }), { excludeServer: s[0].url })).server.url).toBe(s[1].url);
    await expect(r.getNextServer(request({ prompt: 'a' }), { excludeServer: [s[0].url, s[1].url] })).rejects.toThrow(NoServerAvailableError);
  });

  it('sees servers added and removed mid-traffic; load returns to zero', async () => {
    const { s, r } = make({}, 2);
    const inFlight = [request({ prompt: 'a' }), request({ prompt: 'b' })];
    for (const q of inFlight) await r.getNextServer(q);
    const [extra] = servers(1);
    r.addServer(extra);
    const q3 = request({ prompt: 'c' });
    expect((await r.getNextServer(q3)).server.url).toBe(extra.url);
    r.removeServer(s[0]);
    const q4 = request({ prompt: 'd' });
    expect((await r.getNextServer(q4)).server.url).not.toBe(s[0].url);
    for (const q of [...inFlight, q3, q4]) await r.finishRequest(q);
    expect([...s, extra].map((x) => x.activeRequests)).toEqual([0, 0, 0]);
    expect(r.inFlight).toBe(0);
  });
});
