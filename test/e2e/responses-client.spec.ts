import { describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { postStream } from '../support/sse';
import { useSimulatedOpenAi } from '../support/simulated-openai';

const INPUT = 'Tell me about disaggregated serving.';

describe('the official openai client: responses.create through the router, against simulated workers', () => {
  const sim = useSimulatedOpenAi();
  const cluster = sim.cluster;
  const stats = (): { ctx: number; gen: number } => ({
    ctx: cluster.sim.contextWorkers[0].stats.requests.byType.context_only,
    gen: cluster.sim.generationWorkers[0].stats.requests.byType.generation_only,
  });

  it('answers a plain request through both phases, with the prompt accounting of the context phase', async () => {
    const before = stats();
    const response = await sim.client.responses.create({ model: 'sim-model', instructions: 'Be brief.', input: INPUT, max_output_tokens: 8 });
    expect(response.object).toBe('response');
    expect(response.output_text.length).toBeGreaterThan(0);
    // Cut at its token budget: incomplete, as TensorRT-LLM maps `length`.
    expect(response.status).toBe('incomplete');
    expect(response.usage?.output_tokens).toBe(8);
    expect(response.usage?.input_tokens).toBeGreaterThan(INPUT.length);
    expect(response.usage?.total_tokens).toBe(response.usage!.input_tokens + 8);
    // The handoff stays between the router and the workers.
    for (const key of ['disaggregated_params', 'prompt_token_ids', 'finish_reason']) expect(response).not.toHaveProperty(key);
    expect(stats()).toEqual({ ctx: before.ctx + 1, gen: before.gen + 1 });
  });

  it('streams the Responses event sequence, the same text as the plain answer, and no [DONE]', async () => {
    const plain = await sim.client.responses.create({ model: 'sim-model', input: [{ role: 'user', content: INPUT }], max_output_tokens: 6 });
    const stream = await sim.client.responses.create({ model: 'sim-model', input: [{ role: 'user', content: INPUT }], max_output_tokens: 6, stream: true });
    const types: string[] = [];
    let text = '';
    let final: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.incomplete' || event.type === 'response.completed') final = event.response;
    }
    expect(types.slice(0, 4)).toEqual(['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
    expect(types.slice(-4)).toEqual(['response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.incomplete']);
    expect(text).toBe(plain.output_text);
    expect(final?.usage?.input_tokens).toBe(plain.usage?.input_tokens);
    const raw = await (await postStream(`${cluster.router.url}/v1/responses`, { model: 'sim-model', input: INPUT, max_output_tokens: 3, stream: true })).text();
    expect(raw).toContain('event: response.incomplete\n');
    expect(raw).not.toContain('[DONE]');
  });

  it('works with the client stream helper, which rebuilds the response from the events', async () => {
    const stream = sim.client.responses.stream({ model: 'sim-model', input: INPUT, max_output_tokens: 5 });
    const final = await stream.finalResponse();
    expect(final.output_text.length).toBeGreaterThan(0);
    expect(final.usage?.output_tokens).toBe(5);
  });

  it('replays the sequence when the context phase finished the answer (a stop string in the first token)', async () => {
    const plain = await sim.client.responses.create({ model: 'sim-model', input: INPUT, max_output_tokens: 6 });
    // The context phase makes one token, a byte with this tokenizer: stopping at it finishes there.
    const first = plain.output_text[0];
    const before = stats();
    // `stop` is a TensorRT-LLM extension the Responses types do not list.
    const params = { model: 'sim-model', input: INPUT, max_output_tokens: 6, stop: [first], stream: true as const };
    const stream = await sim.client.responses.create(params as OpenAI.Responses.ResponseCreateParamsStreaming);
    const types: string[] = [];
    let final: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.completed') final = event.response;
    }
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.output_text.delta');
    expect(types[types.length - 1]).toBe('response.completed');
    expect(final?.status).toBe('completed');
    expect(final).not.toHaveProperty('disaggregated_params');
    // The context worker answered it all: no generation call.
    expect(stats()).toEqual({ ctx: before.ctx + 1, gen: before.gen });
  });

  it('refuses previous_response_id with an API error the client surfaces', async () => {
    await expect(sim.client.responses.create({ model: 'sim-model', input: 'hi', previous_response_id: 'resp_1' })).rejects.toMatchObject({
      status: 400,
      error: expect.objectContaining({ param: 'previous_response_id', code: 'unsupported_parameter' }),
    });
  });
});
