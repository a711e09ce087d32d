import { beforeEach, describe, expect, it } from '@jest/globals';
import { ServerRegistry } from '../../src/servers';
import { contextHandler, generationHandler } from '../support/fake-worker';
import { unusedPort } from '../support/free-port';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { postStream as stream, readSse } from '../support/sse';

describe('the disaggregated flow over real sockets', () => {
  const cluster = useRouterCluster({
    workers: { ctx: contextHandler({ promptTokenIds: [11, 12, 13, 14, 15, 16, 17] }), gen: generationHandler({ chunks: 4 }) },
    config: (cluster) => ({ context_servers: { urls: [cluster.ctx.url] }, generation_servers: { urls: [cluster.gen.url] } }),
  });
  beforeEach(() => {
    cluster.ctx.received.length = 0;
    cluster.gen.received.length = 0;
    cluster.ctx.handler = contextHandler({ promptTokenIds: [11, 12, 13, 14, 15, 16, 17] });
  });

  const loadIsZero = (): boolean => cluster.router.app.get(ServerRegistry).list().every((s) => s.activeRequests === 0 && s.activeTokens === 0);

  it('sends context_only to the context server with stream off', async () => {
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', stream: false, max_tokens: 4, extra_field: { keep: true } });
    expect(res.status).toBe(200);
    const ctxBody = cluster.ctx.requests('/v1/completions')[0].body!;
    expect(ctxBody).toMatchObject({ model: 'm', prompt: 'hello', stream: false, stream_options: null, extra_field: { keep: true } });
    expect(ctxBody.disaggregated_params).toEqual({ request_type: 'context_only', disagg_request_id: expect.any(Number) });
  });

  it('hands the generation server exactly the context disaggregated_params, as generation_only, with prompt_token_ids', async () => {
    await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', max_tokens: 4 });
    const ctxId = (cluster.ctx.requests('/v1/completions')[0].body!.disaggregated_params as Record<string, unknown>).disagg_request_id;
    const genBody = cluster.gen.requests('/v1/completions')[0].body!;
    expect(genBody.disaggregated_params).toEqual({
      request_type: 'generation_only',
      ctx_request_id: 777,
      first_gen_tokens: [42],
      encoded_opaque_state: 'b3BhcXVl',
      draft_tokens: null,
      disagg_request_id: ctxId,
    });
    expect(genBody.prompt).toEqual([11, 12, 13, 14, 15, 16, 17]);
    expect(genBody.max_tokens).toBe(4);
  });

  it('rewrites usage from the context phase (non-streaming)', async () => {
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello' });
    expect(res.json.usage).toEqual({ prompt_tokens: 7, completion_tokens: 4, total_tokens: 11, prompt_tokens_details: { cached_tokens: 2 } });
    expect((res.json.choices as Record<string, unknown>[])[0].text).toBe('AAAA');
    expect(res.headers.get('x-request-id')).toBeTruthy();
  });

  it('streams a completion and rewrites the usage chunk', async () => {
    const res = await stream(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', stream: true, stream_options: { include_usage: true } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('text/event-stream');
    const events = await readSse(res);
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.slice(0, -1).map((e) => JSON.parse(e) as Record<string, unknown>);
    expect(chunks.filter((c) => (c.choices as unknown[]).length > 0)).toHaveLength(4);
    expect(chunks.at(-1)!.usage).toEqual({ prompt_tokens: 7, completion_tokens: 4, total_tokens: 11, prompt_tokens_details: { cached_tokens: 2 } });
    expect(cluster.gen.requests('/v1/completions')[0].body!.stream).toBe(true);
    expect(cluster.ctx.requests('/v1/completions')[0].body!.stream).toBe(false);
  });

  it('serves chat, non-streaming and streaming, with prompt_token_ids for the generation server', async () => {
    const res = await postJson(`${cluster.router.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    expect(res.status).toBe(200);
    expect((res.json.choices as Record<string, Record<string, unknown>>[])[0].message.content).toBe('AAAA');
    const genBody = cluster.gen.requests('/v1/chat/completions')[0].body!;
    expect(genBody.prompt_token_ids).toEqual([11, 12, 13, 14, 15, 16, 17]);
    expect(genBody.messages).toEqual([{ role: 'user', content: 'hi' }]);
    const streamed = await readSse(await stream(`${cluster.router.url}/v1/chat/completions`, { model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }));
    const text = streamed.slice(0, -1).map((e) => ((JSON.parse(e) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '')).join('');
    expect(text).toBe('AAAA');
  });

  it('passes the conversation id to both phases', async () => {
    await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', disaggregated_params: { conversation_id: 'conv-1' } });
    expect((cluster.ctx.requests('/v1/completions')[0].body!.disaggregated_params as Record<string, unknown>).conversation_id).toBe('conv-1');
    expect((cluster.gen.requests('/v1/completions')[0].body!.disaggregated_params as Record<string, unknown>).conversation_id).toBe('conv-1');
  });

  it('finishes early when the context phase already completed the request', async () => {
    cluster.ctx.handler = contextHandler({ finishReason: 'stop' });
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello' });
    expect(res.status).toBe(200);
    const choice = (res.json.choices as Record<string, unknown>[])[0];
    expect(choice.finish_reason).toBe('stop');
    expect(choice.disaggregated_params).toBeUndefined();
    const streamed = await readSse(await stream(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', stream: true }));
    expect(streamed).toHaveLength(2);
    expect(streamed[1]).toBe('[DONE]');
    expect(cluster.gen.requests('/v1/completions')).toHaveLength(0);
  });

  it('returns a worker 4xx as is', async () => {
    cluster.ctx.handler = (_req, res) => {
      res.writeHead(400, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'bad temperature', type: 'invalid_request_error', param: 'temperature', code: null } }));
    };
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello' });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ error: { message: 'bad temperature', type: 'invalid_request_error', param: 'temperature', code: null } });
    expect(cluster.gen.requests('/v1/completions')).toHaveLength(0);
  });

  it('answers 502 naming the server when the context answer has no disaggregated_params', async () => {
    cluster.ctx.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ choices: [{ index: 0, text: 'A', finish_reason: 'length' }] }));
    };
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello' });
    expect(res.status).toBe(502);
    expect((res.json.error as Record<string, string>).message).toContain(cluster.ctx.url);
    expect((res.json.error as Record<string, string>).message).toContain('disaggregated_params');
  });

  it('leaves no load behind', async () => {
    await waitFor(loadIsZero, 5000, 'load back to zero');
    expect(loadIsZero()).toBe(true);
  });
});

describe('aggregated mode (no context servers)', () => {
  const cluster = useRouterCluster({
    workers: { gen: generationHandler({ chunks: 2 }) },
    config: (cluster) => ({ generation_servers: { urls: [cluster.gen.url] } }),
  });

  it('sends the client request straight to the generation pool', async () => {
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello', custom: 1 });
    expect(res.status).toBe(200);
    const body = cluster.gen.requests('/v1/completions')[0].body!;
    expect(body).toEqual({ model: 'm', prompt: 'hello', custom: 1 });
    expect(res.json.usage).toMatchObject({ prompt_tokens: 999 });
  });

  it('stays aggregated while an added context server is still being prepared', async () => {
    const registry = cluster.router.app.get(ServerRegistry);
    const pending = registry.add({ url: `http://127.0.0.1:${await unusedPort()}`, role: 'context', source: 'admin' });
    expect(pending.status).toBe('preparing');
    const res = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'still aggregated' });
    expect(res.status).toBe(200);
    expect(cluster.gen.requests('/v1/completions').at(-1)!.body!.disaggregated_params).toBeUndefined();
    expect((await fetch(`${cluster.router.url}/health`)).status).toBe(200);
    registry.remove(pending);
  });
});
