import { describe, expect, it } from '@jest/globals';
import { ConversationRouter, MAX_CONVERSATION_ID_CHARS, RouterRegistry } from '../../src/routing';
import { useFakeCluster, type FakeClusterHandle } from '../support/router-cluster';
import { postJson } from '../support/router-app';
import type { ReceivedRequest } from '../support/fake-worker';

/**
 * A conversation id found anywhere in the request (body or header) reaches both workers the
 * way TensorRT-LLM's service writes it: `conversation_params.conversation_id` and
 * `disaggregated_params.conversation_id` of the context and the generation bodies. Client
 * credentials never do.
 */
type Body = Record<string, unknown>;
const chat = (extra: Body = {}): Body => ({ model: 'm', max_tokens: 2, messages: [{ role: 'user', content: 'hi' }], ...extra });

async function exchange(cluster: FakeClusterHandle, body: Body, headers: Record<string, string> = {}): Promise<{ ctx: ReceivedRequest; gen: ReceivedRequest }> {
  const [c, g] = [cluster.ctx.received.length, cluster.gen.received.length];
  const res = await postJson(`${cluster.url}/v1/chat/completions`, body, headers);
  expect(res.status).toBe(200);
  const pick = (list: ReceivedRequest[]) => list.filter((r) => r.path === '/v1/chat/completions');
  const [ctx] = pick(cluster.ctx.received.slice(c));
  const [gen] = pick(cluster.gen.received.slice(g));
  return { ctx, gen };
}

function idsIn(r: ReceivedRequest): { params: unknown; disagg: unknown } {
  return {
    params: (r.body?.conversation_params as Body | undefined)?.conversation_id,
    disagg: (r.body?.disaggregated_params as Body | undefined)?.conversation_id,
  };
}

describe('conversation ids in the worker bodies', () => {
  const cluster = useFakeCluster({ generation_servers: { router: { type: 'conversation', max_table_bytes: 64 * 1024 } } });

  it('a Claude Code session header wins over the generic ones and is written into both bodies', async () => {
    const { ctx, gen } = await exchange(cluster, chat(), { 'x-session-id': 'generic', 'x-claude-session-id': 'claude', 'x-claude-code-session-id': 'claude-code' });
    expect(idsIn(ctx)).toEqual({ params: 'claude-code', disagg: 'claude-code' });
    expect(idsIn(gen)).toEqual({ params: 'claude-code', disagg: 'claude-code' });
    expect((ctx.body?.disaggregated_params as Body).request_type).toBe('context_only');
    expect((gen.body?.disaggregated_params as Body).request_type).toBe('generation_only');
    const second = await exchange(cluster, chat(), { 'x-session-id': 'generic', 'x-claude-session-id': 'claude' });
    expect(idsIn(second.gen)).toEqual({ params: 'claude', disagg: 'claude' });
  });

  it('ids from the body are written too, and the client\'s other conversation_params keys kept', async () => {
    const fromParams = await exchange(cluster, chat({ conversation_params: { conversation_id: ' body-id ', subagent_affinity_id: 'parent' } }), { 'x-session-id': 'loses' });
    expect(fromParams.ctx.body?.conversation_params).toEqual({ conversation_id: 'body-id', subagent_affinity_id: 'parent' });
    expect(idsIn(fromParams.gen)).toEqual({ params: 'body-id', disagg: 'body-id' });
    const fromDisagg = await exchange(cluster, chat({ disaggregated_params: { conversation_id: 7 } }));
    expect(idsIn(fromDisagg.ctx)).toEqual({ params: '7', disagg: '7' });
    const fromCacheKey = await exchange(cluster, chat({ prompt_cache_key: 'codex-thread' }));
    expect(idsIn(fromCacheKey.gen)).toEqual({ params: 'codex-thread', disagg: 'codex-thread' });
  });

  it('a request without an id gets none', async () => {
    const { ctx, gen } = await exchange(cluster, chat());
    expect(ctx.body).not.toHaveProperty('conversation_params');
    expect(gen.body).not.toHaveProperty('conversation_params');
    expect(idsIn(gen).disagg).toBeUndefined();
  });

  it('client credentials and the Anthropic version header never reach a worker', async () => {
    const secrets = { authorization: 'Bearer client-secret', 'x-api-key': 'sk-client-secret', 'anthropic-version': '2023-06-01', 'x-session-id': 's' };
    const { ctx, gen } = await exchange(cluster, chat(), secrets);
    for (const r of [ctx, gen]) {
      expect(r.headers).not.toHaveProperty('authorization');
      expect(r.headers).not.toHaveProperty('x-api-key');
      expect(r.headers).not.toHaveProperty('anthropic-version');
      expect(JSON.stringify(r)).not.toContain('client-secret');
    }
  });

  it('megabyte ids travel and are kept as their digest, in a table bounded in bytes', async () => {
    const table = cluster.router.app.get(RouterRegistry).router('generation') as ConversationRouter;
    const digests = new Set<unknown>();
    for (let i = 0; i < 12; i++) {
      const id = `${i}-${'k'.repeat(1024 * 1024)}`;
      const { ctx, gen } = await exchange(cluster, chat({ prompt_cache_key: id }));
      const got = idsIn(gen);
      expect(got.params).toMatch(/^sha256:[0-9a-f]{64}$/);
      expect(idsIn(ctx)).toEqual(got);
      expect(got.disagg).toBe(got.params);
      digests.add(got.params);
      expect(table.sessionTableBytes).toBeLessThanOrEqual(64 * 1024);
    }
    expect(digests.size).toBe(12);
    // The same long id is the same conversation.
    const again = await exchange(cluster, chat({ prompt_cache_key: `3-${'k'.repeat(1024 * 1024)}` }));
    expect(digests.has(idsIn(again.gen).params)).toBe(true);
    expect(MAX_CONVERSATION_ID_CHARS).toBeLessThan(1024);
  }, 60_000);
});

describe('forward_conversation_id: false (workers whose protocol predates the fields)', () => {
  const cluster = useFakeCluster({ forward_conversation_id: false });

  it('passes only a client\'s own disaggregated_params.conversation_id on', async () => {
    const fromHeader = await exchange(cluster, chat(), { 'x-claude-code-session-id': 'claude-code' });
    expect(idsIn(fromHeader.ctx)).toEqual({ params: undefined, disagg: undefined });
    expect(idsIn(fromHeader.gen)).toEqual({ params: undefined, disagg: undefined });
    const own = await exchange(cluster, chat({ disaggregated_params: { conversation_id: 'own' } }));
    expect(idsIn(own.ctx).disagg).toBe('own');
    expect(idsIn(own.gen).disagg).toBe('own');
  });
});
