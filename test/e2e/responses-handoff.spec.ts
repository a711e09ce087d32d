import { beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import OpenAI from 'openai';
import { LogCapture } from '../observability/log-capture';
import { sampleValue, scrape } from '../observability/prom-text';
import { allIdle } from '../routing/support/sim-helpers';
import { postJson, waitFor } from '../support/router-app';
import { useFakeCluster } from '../support/router-cluster';
import { readSse, postStream } from '../support/sse';
import { CTX_PARAMS, responsesContext, responsesGeneration } from '../support/responses-workers';

type Body = Record<string, unknown>;
const PATH = '/v1/responses';

describe('the Responses handoff between the context and generation workers (scripted workers recording bodies)', () => {
  const logs = new LogCapture();
  const cluster = useFakeCluster({ max_retries: 0, logging: { level: 'warn' } }, { ctx: responsesContext(), gen: responsesGeneration(), logDestination: logs });
  let client: OpenAI;
  beforeAll(() => {
    client = new OpenAI({ baseURL: `${cluster.url}/v1`, apiKey: 'sk-client-secret', maxRetries: 0 });
  });
  beforeEach(() => {
    cluster.ctx.handler = responsesContext();
    cluster.gen.handler = responsesGeneration();
    cluster.ctx.received.length = 0;
    cluster.gen.received.length = 0;
  });
  const last = (path: string, w: typeof cluster.ctx): { body: Body; headers: Record<string, unknown> } => {
    const r = w.requests(path).at(-1)!;
    return { body: r.body!, headers: r.headers };
  };

  it('sends a context_only and a generation_only request to /v1/responses with the handoff carried at the top level', async () => {
    const input = [{ role: 'user' as const, content: 'Hi' }];
    const response = await client.responses.create({ model: 'm', input, instructions: 'Be brief.', max_output_tokens: 7 }, { headers: { 'x-api-key': 'client-key' } });
    expect(response.output_text).toBe('Hello there');
    const ctx = last(PATH, cluster.ctx);
    const gen = last(PATH, cluster.gen);
    const disaggId = (ctx.body.disaggregated_params as Body).disagg_request_id;
    expect(ctx.body).toMatchObject({ model: 'm', input, instructions: 'Be brief.', max_output_tokens: 7, stream: false, store: false });
    expect(ctx.body.disaggregated_params).toEqual({ request_type: 'context_only', disagg_request_id: expect.any(Number) });
    // The router's own tokenization of the chat it routed by never replaces the worker's rendering.
    expect(ctx.body).not.toHaveProperty('prompt_token_ids');
    expect(gen.body).toMatchObject({ model: 'm', input, instructions: 'Be brief.', store: false, prompt_token_ids: [1, 2, 3, 4, 5] });
    expect(gen.body.disaggregated_params).toEqual({ ...CTX_PARAMS, request_type: 'generation_only', disagg_request_id: disaggId });
    // Client credentials stay at the router.
    for (const sent of [ctx, gen]) {
      expect(sent.headers.authorization).toBeUndefined();
      expect(sent.headers['x-api-key']).toBeUndefined();
    }
    // Prompt accounting from the context phase, total kept consistent.
    expect(response.usage).toMatchObject({ input_tokens: 5, input_tokens_details: { cached_tokens: 2 }, output_tokens: 3, total_tokens: 8 });
  });

  it('counts in the request metrics under its own endpoint, streamed or not', async () => {
    const NS = 'disagg_router_';
    const endpoint = { endpoint: PATH };
    const before = await scrape(cluster.url);
    expect((await postJson(`${cluster.url}${PATH}`, { model: 'm', input: 'Hi' })).status).toBe(200);
    await readSse(await postStream(`${cluster.url}${PATH}`, { model: 'm', input: 'Hi', stream: true }));
    await waitFor(async () => sampleValue(await scrape(cluster.url), `${NS}requests_total`, { ...endpoint, status: '200' }) === sampleValue(before, `${NS}requests_total`, { ...endpoint, status: '200' }) + 2, 10_000, 'two requests counted');
    const after = await scrape(cluster.url);
    const delta = (name: string, labels: Record<string, string>): number => sampleValue(after, name, labels) - sampleValue(before, name, labels);
    expect(delta(`${NS}request_duration_seconds_count`, { ...endpoint, stream: 'false' })).toBe(1);
    expect(delta(`${NS}request_duration_seconds_count`, { ...endpoint, stream: 'true' })).toBe(1);
    expect(delta(`${NS}time_to_first_token_seconds_count`, endpoint)).toBe(1);
    expect(delta(`${NS}http_requests_total`, { method: 'POST', route: PATH, status: '200' })).toBe(2);
  });

  it("counts in TensorRT-LLM's request counters, a refused body as a validation exception", async () => {
    const trtllm = (m: Awaited<ReturnType<typeof scrape>>, name: string): number => sampleValue(m, `${name}_total`);
    const before = await scrape(cluster.url, '/prometheus/metrics');
    expect((await postJson(`${cluster.url}${PATH}`, { model: 'm', input: 'Hi' })).status).toBe(200);
    expect((await postJson(`${cluster.url}${PATH}`, { model: 'm', input: [] })).status).toBe(400);
    const after = await scrape(cluster.url, '/prometheus/metrics');
    const delta = (name: string): number => trtllm(after, name) - trtllm(before, name);
    expect({ total: delta('total_requests'), nonstream: delta('nonstream_requests'), refused: delta('validation_exceptions') }).toEqual({ total: 1, nonstream: 1, refused: 1 });
  });

  it("writes a Codex prompt_cache_key into both bodies as the request's conversation id", async () => {
    const res = await postJson(`${cluster.url}${PATH}`, { model: 'm', input: 'Hi', prompt_cache_key: 'codex-thread-1' });
    expect(res.status).toBe(200);
    for (const w of [cluster.ctx, cluster.gen]) {
      const body = last(PATH, w).body;
      expect(body.conversation_params).toEqual({ conversation_id: 'codex-thread-1' });
      expect((body.disaggregated_params as Body).conversation_id).toBe('codex-thread-1');
    }
  });

  it('relays prompt_token_ids_b64 as it came', async () => {
    cluster.ctx.handler = responsesContext({ b64: 'AQAAAAIAAAA=' });
    const res = await postJson(`${cluster.url}${PATH}`, { model: 'm', input: 'Hi' });
    expect(res.status).toBe(200);
    const gen = last(PATH, cluster.gen).body;
    expect(gen.prompt_token_ids_b64).toBe('AQAAAAIAAAA=');
    expect(gen).not.toHaveProperty('prompt_token_ids');
  });

  it('streams the generation worker events through, usage of the terminal event rewritten, no [DONE]', async () => {
    const res = await postStream(`${cluster.url}${PATH}`, { model: 'm', input: 'Hi', stream: true });
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = await readSse(res);
    expect(events).not.toContain('[DONE]');
    const parsed = events.map((e) => JSON.parse(e) as Body);
    expect(parsed.map((e) => e.type)).toEqual(['response.created', 'response.in_progress', 'response.output_text.delta', 'response.output_text.delta', 'response.completed']);
    expect((parsed[4].response as Body).usage).toMatchObject({ input_tokens: 5, input_tokens_details: { cached_tokens: 2 }, total_tokens: 8 });
    expect(last(PATH, cluster.gen).body.stream).toBe(true);
    expect(last(PATH, cluster.ctx).body.stream).toBe(false);
  });

  it('replays a context-finished answer as the whole event sequence, without the handoff, and calls no generation worker', async () => {
    cluster.ctx.handler = responsesContext({ finishReason: 'stop' });
    const plain = await postJson(`${cluster.url}${PATH}`, { model: 'm', input: 'Hi' });
    expect(plain.status).toBe(200);
    for (const key of ['disaggregated_params', 'finish_reason', 'prompt_token_ids', 'prompt_token_ids_b64']) expect(plain.json).not.toHaveProperty(key);
    expect(plain.json.status).toBe('completed');
    const events = (await readSse(await postStream(`${cluster.url}${PATH}`, { model: 'm', input: 'Hi', stream: true }))).map((e) => JSON.parse(e) as Body);
    expect(events.map((e) => e.type)).toEqual([
      'response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added',
      'response.output_text.delta', 'response.output_text.done', 'response.content_part.done', 'response.output_item.done', 'response.completed',
    ]);
    expect(events.map((e) => e.sequence_number)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8]);
    expect(events[4].delta).toBe('Hello there');
    const final = events[8].response as Body;
    expect(final.status).toBe('completed');
    expect(final).not.toHaveProperty('disaggregated_params');
    expect(cluster.gen.requests(PATH)).toHaveLength(0);
  });

  it('replays reasoning, text and a tool call so that the client stream helper rebuilds the same response', async () => {
    const output = [
      { id: 'rs_1', type: 'reasoning', summary: [], content: [{ type: 'reasoning_text', text: 'The user wants the weather.' }] },
      { id: 'msg_1', type: 'message', role: 'assistant', status: 'completed', content: [{ type: 'output_text', text: 'Checking.', annotations: [] }] },
      { id: 'fc_1', type: 'function_call', call_id: 'call_1', name: 'get_weather', arguments: '{"city":"Paris"}', status: 'completed' },
    ];
    cluster.ctx.handler = responsesContext({ finishReason: 'stop', output });
    const stream = client.responses.stream({ model: 'm', input: 'Weather in Paris?' });
    // What the helper accumulated from the events, before the terminal event replaces it.
    const rebuilt: Record<string, unknown> = {};
    stream.on('response.output_text.delta', (e) => (rebuilt[e.type] = e.snapshot));
    stream.on('response.function_call_arguments.delta', (e) => (rebuilt[e.type] = e.snapshot));
    const final = await stream.finalResponse();
    expect(rebuilt).toEqual({ 'response.output_text.delta': 'Checking.', 'response.function_call_arguments.delta': '{"city":"Paris"}' });
    expect(final.output).toMatchObject(output);
    expect(final.output_text).toBe('Checking.');
    expect(final.status).toBe('completed');
  });

  it('ends a stream the worker cut before its terminal event as a worker would: error, then response.failed', async () => {
    cluster.gen.handler = responsesGeneration({ noEnd: true });
    const events = (await readSse(await postStream(`${cluster.url}${PATH}`, { model: 'm', input: 'Hi', stream: true }))).map((e) => JSON.parse(e) as Body);
    expect(events.map((e) => e.type)).toEqual(['response.created', 'response.in_progress', 'response.output_text.delta', 'response.output_text.delta', 'error', 'response.failed']);
    // Numbered after the four events relayed; the failed response is the opening snapshot.
    expect(events.map((e) => e.sequence_number)).toEqual([0, 1, 2, 3, 4, 5]);
    expect(events[4]).toMatchObject({ code: 'upstream_error', message: expect.stringContaining('without its end event') });
    expect(events[5].response).toMatchObject({ id: 'resp_w', status: 'failed', error: { code: 'upstream_error' } });
  });

  it('accepts an explicit store: true with one warning, not one per request, and sends store: false', async () => {
    const warned = (): number => logs.lines.filter((l) => String(l.msg).includes("'store' is ignored")).length;
    for (let i = 0; i < 3; i++) {
      const res = await postJson(`${cluster.url}${PATH}`, { model: 'm', input: 'Hi', store: true });
      expect(res.status).toBe(200);
      expect(last(PATH, cluster.ctx).body.store).toBe(false);
    }
    expect(warned()).toBe(1);
  });

  it('leaves no load behind when the client disconnects mid-stream', async () => {
    cluster.gen.handler = responsesGeneration({ hang: true });
    const abort = new AbortController();
    const res = await fetch(`${cluster.url}${PATH}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'm', input: 'Hi', stream: true }), signal: abort.signal });
    const reader = res.body!.getReader();
    let seen = '';
    while (!seen.includes('response.output_text.delta')) seen += new TextDecoder().decode((await reader.read()).value);
    const abortedBefore = cluster.gen.aborted;
    abort.abort();
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'load back to zero');
    await waitFor(() => cluster.gen.aborted > abortedBefore, 10_000, 'the generation call aborted');
  });
});
