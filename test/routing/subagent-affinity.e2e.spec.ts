import { afterEach, describe, expect, it } from '@jest/globals';
import { contextHandler, FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, startRouter, type RunningRouter } from '../support/router-app';

const PARENT = 'X-Dynamo-Parent-Session-ID';

/** Which of the context workers served each inference call, in order of arrival. */
function ctxTargets(workers: FakeWorker[]): string[] {
  return workers.flatMap((w) => w.requests('/v1/completions').map(() => w.url));
}

// TensorRT-LLM's sub-agent routing: sub-agents carrying their parent's session id in the
// configured gateway header are placed on the parent's context server by a conversation router.
describe('sub-agent affinity over two context servers', () => {
  const workers: FakeWorker[] = [];
  let router: RunningRouter | undefined;
  afterEach(async () => {
    await router?.close();
    router = undefined;
    for (const w of workers.splice(0)) await w.close();
  });

  async function start(scope: 'context' | 'both'): Promise<{ ctx: FakeWorker[]; gen: FakeWorker[] }> {
    const ctx = [await new FakeWorker(contextHandler()).start(), await new FakeWorker(contextHandler()).start()];
    const gen = [await new FakeWorker(generationHandler()).start(), await new FakeWorker(generationHandler()).start()];
    workers.push(...ctx, ...gen);
    router = await startRouter({
      internal_request_auth_key: 'k',
      conversation_affinity_header_for_subagents: PARENT,
      subagent_affinity_scope: scope,
      context_servers: { urls: ctx.map((w) => w.url), router: { type: 'conversation' } },
      generation_servers: { urls: gen.map((w) => w.url), router: { type: 'conversation' } },
    });
    return { ctx, gen };
  }

  async function turn(session: string, parent?: string): Promise<void> {
    const res = await postJson(`${router!.url}/v1/completions`, { model: 'm', prompt: [1, 2, 3], max_tokens: 2 }, { 'x-session-id': session, ...(parent ? { [PARENT]: parent } : {}) });
    expect(res.status).toBe(200);
  }

  it('scope context: every sub-agent of a parent on its context server; generation places each by its own id', async () => {
    const { ctx, gen } = await start('context');
    await turn('parent-1');
    for (const child of ['child-a', 'child-b', 'child-c', 'child-d']) await turn(child, 'parent-1');
    const targets = ctxTargets(ctx);
    expect(targets).toHaveLength(5);
    expect(new Set(targets).size).toBe(1);
    // Five conversations of their own on the generation pool: spread over both servers.
    expect(gen.every((w) => w.requests('/v1/completions').length > 0)).toBe(true);
    // Only the context calls carry the hint.
    for (const w of gen) for (const r of w.requests('/v1/completions')) expect(r.headers['x-trtllm-subagent-affinity-id']).toBeUndefined();
  });

  it('scope both: the generation pool places sub-agents by the parent id too', async () => {
    const { gen } = await start('both');
    await turn('parent-1');
    for (const child of ['child-a', 'child-b', 'child-c']) await turn(child, 'parent-1');
    const served = gen.map((w) => w.requests('/v1/completions'));
    expect(served.map((s) => s.length).sort()).toEqual([0, 4]);
    const children = served.flat().filter((r) => r.headers['x-trtllm-subagent-affinity-id'] !== undefined);
    expect(children).toHaveLength(3);
    for (const r of children) expect(r.headers['x-trtllm-subagent-affinity-auth']).toMatch(/^sha256=[0-9a-f]{64}$/);
  });
});
