import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { SimCluster, startSimCluster } from '../../src/simulator';
import { postJson, postSse } from './sim-test-helpers';

describe('simulated worker: POST /v1/responses with the disaggregated semantics of TensorRT-LLM', () => {
  let cluster: SimCluster;
  let ctxUrl: string;
  let genUrl: string;

  beforeAll(async () => {
    cluster = await startSimCluster({ context: 1, generation: 1, tokenizer: 'bytes' });
    ctxUrl = cluster.contextUrls[0];
    genUrl = cluster.generationUrls[0];
  });
  afterAll(async () => {
    await cluster.close();
  });

  const body = { model: 'm', instructions: 'Be brief.', input: [{ role: 'user', content: 'hello there' }], max_output_tokens: 6 };

  it('answers context_only with the handoff at the top level and no output, then generation_only continues it', async () => {
    const ctx = await postJson(`${ctxUrl}/v1/responses`, { ...body, stream: false, disaggregated_params: { request_type: 'context_only', disagg_request_id: 4242 } });
    expect(ctx.status).toBe(200);
    expect(ctx.body).toMatchObject({ object: 'response', status: 'incomplete', output: [], finish_reason: 'length' });
    expect(ctx.body.disaggregated_params).toMatchObject({ request_type: 'context_only', disagg_request_id: 4242 });
    expect(ctx.body.prompt_token_ids.length).toBe(ctx.body.usage.input_tokens);
    const whole = await postJson(`${genUrl}/v1/responses`, body);
    const gen = await postJson(`${genUrl}/v1/responses`, {
      ...body,
      prompt_token_ids: ctx.body.prompt_token_ids,
      disaggregated_params: { ...ctx.body.disaggregated_params, request_type: 'generation_only' },
    });
    expect(gen.status).toBe(200);
    expect(gen.body).not.toHaveProperty('disaggregated_params');
    // The continuation is the text the whole request makes.
    expect(gen.body.output[0].content[0].text).toBe(whole.body.output[0].content[0].text);
    expect(gen.body.usage.output_tokens).toBe(6);
  });

  it('reads relayed prompt ids as base64 int32 too', async () => {
    const ids = [104, 105];
    const b64 = Buffer.from(new Int32Array(ids).buffer).toString('base64');
    const a = await postJson(`${genUrl}/v1/responses`, { model: 'm', input: 'ignored', prompt_token_ids_b64: b64, max_output_tokens: 3 });
    const b = await postJson(`${genUrl}/v1/responses`, { model: 'm', input: 'ignored too', prompt_token_ids: ids, max_output_tokens: 3 });
    expect(a.body.usage.input_tokens).toBe(2);
    expect(a.body.output[0].content[0].text).toBe(b.body.output[0].content[0].text);
  });

  it('streams the event sequence, ending with response.incomplete at the token budget', async () => {
    const res = await postSse(`${genUrl}/v1/responses`, { ...body, stream: true });
    expect(res.contentType).toContain('text/event-stream');
    const events = res.events.map((e) => JSON.parse(e) as { type: string; sequence_number: number });
    expect(events[0].type).toBe('response.created');
    expect(events.at(-1)!.type).toBe('response.incomplete');
    expect(events.map((e) => e.sequence_number)).toEqual(events.map((_e, i) => i));
    expect(res.events).not.toContain('[DONE]');
  });
});
