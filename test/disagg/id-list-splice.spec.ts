import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { startFakeCluster, type FakeCluster } from '../support/fake-cluster';
import { json, type FakeHandler } from '../support/fake-worker';
import { postJson } from '../support/router-app';

/**
 * A prompt's token-id list goes to the workers as the text the client sent (README "Worker
 * body encoding"): spliced in, not parsed and written again. The proof is whitespace that
 * JSON.stringify would never write, found byte for byte in what both workers receive; lists
 * that only look like the prompt (inside a string, a member given twice) never take its place.
 */
const ids = Array.from({ length: 2000 }, (_, i) => (i * 7919) % 151000);
/** The list with spaces after some commas: no serialiser writes this. */
const oddText = `[ ${ids.map((id, i) => (i % 3 === 0 ? `${id} ` : String(id))).join(', ')} ]`;

/** A context worker that does not echo the prompt ids, so the generation body is the router's own. */
const quietContext: FakeHandler = (req, res) => {
  json(res, 200, {
    id: 'ctx',
    object: req.path.includes('chat') ? 'chat.completion' : 'text_completion',
    choices: [
      {
        index: 0,
        ...(req.path.includes('chat') ? { message: { role: 'assistant', content: 'A' } } : { text: 'A' }),
        finish_reason: 'length',
        disaggregated_params: { request_type: 'context_only', ctx_request_id: 7, first_gen_tokens: [42], encoded_opaque_state: 'b3BhcXVl', draft_tokens: null },
      },
    ],
  });
};

describe('prompt id lists forwarded as the client wrote them', () => {
  let cluster: FakeCluster;
  beforeAll(async () => {
    cluster = await startFakeCluster({}, undefined, { ctx: quietContext });
  });
  afterAll(async () => cluster?.close());

  const last = (): { ctx: { raw: string; body: Record<string, unknown> }; gen: { raw: string; body: Record<string, unknown> } } => {
    const ctx = cluster.ctx.received.at(-1)!;
    const gen = cluster.gen.received.at(-1)!;
    return { ctx: { raw: ctx.raw.toString(), body: ctx.body! }, gen: { raw: gen.raw.toString(), body: gen.body! } };
  };

  it('splices a completion prompt into the context and the generation bodies', async () => {
    const res = await postJson(`${cluster.router.url}/v1/completions`, `{"model":"m","max_tokens":4,"prompt":${oddText}}`);
    expect(res.status).toBe(200);
    const { ctx, gen } = last();
    expect(ctx.raw).toContain(`"prompt":${oddText}`);
    expect(gen.raw).toContain(`"prompt":${oddText}`);
    expect(ctx.body.prompt).toEqual(ids);
    expect(ctx.body.disaggregated_params).toMatchObject({ request_type: 'context_only' });
    expect(ctx.body.stream).toBe(false);
    expect(gen.body.prompt).toEqual(ids);
    expect(gen.body.disaggregated_params).toMatchObject({ request_type: 'generation_only', ctx_request_id: 7 });
  });

  it("splices a chat's prompt_token_ids", async () => {
    const body = `{"model":"m","messages":[{"role":"user","content":"hi"}],"prompt_token_ids":${oddText},"max_tokens":4}`;
    const res = await postJson(`${cluster.router.url}/v1/chat/completions`, body);
    expect(res.status).toBe(200);
    const { ctx, gen } = last();
    expect(ctx.raw).toContain(`"prompt_token_ids":${oddText}`);
    expect(gen.body.prompt_token_ids).toEqual(ids);
    expect(ctx.body.messages).toEqual([{ role: 'user', content: 'hi' }]);
  });

  it('never takes a list inside a string, or a member given twice, for the prompt', async () => {
    const decoy = `[${ids.slice(0, 100).map((id) => id + 1).join(',')}]`;
    const inString = `{"model":"m","max_tokens":4,"user":"\\"prompt\\":${decoy}","prompt":${oddText}}`;
    let res = await postJson(`${cluster.router.url}/v1/completions`, inString);
    expect(res.status).toBe(200);
    expect(last().ctx.body.prompt).toEqual(ids);
    expect(last().ctx.body.user).toBe(`"prompt":${decoy}`);

    // JSON's last member wins, in the router as in the worker's parser.
    const twice = `{"model":"m","max_tokens":4,"prompt":${decoy},"prompt":${oddText}}`;
    res = await postJson(`${cluster.router.url}/v1/completions`, twice);
    expect(res.status).toBe(200);
    expect(last().ctx.body.prompt).toEqual(ids);
    expect(last().gen.body.prompt).toEqual(ids);
  });
});
