import { afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import Anthropic from '@anthropic-ai/sdk';
import type { ServerResponse } from 'node:http';
import { AdmissionService } from '../../src/admission';
import { contextHandler, generationHandler, json, type FakeHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { useFakeCluster, useRouterCluster } from '../support/router-cluster';
import { readSse } from '../support/sse';
import { allIdle } from '../routing/support/sim-helpers';
import { gate, type Gate } from '../reliability/support/gate';

const ask = { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] };

/** Anthropic's error envelope, and nothing of OpenAI's. */
function expectEnvelope(res: { status: number; json: Record<string, unknown> }, status: number, type: string, message?: RegExp): void {
  expect(res.status).toBe(status);
  expect(res.json.type).toBe('error');
  const error = res.json.error as Record<string, unknown>;
  expect(error.type).toBe(type);
  expect(typeof error.message).toBe('string');
  if (message) expect(error.message).toMatch(message);
  expect(Object.keys(error).sort()).toEqual(['message', 'type']);
}

/** One streamed chat chunk, then the worker holds the stream open (or breaks it). */
function firstChunkThen(after: 'hold' | 'break'): FakeHandler {
  return (req, res: ServerResponse) => {
    if (!req.body?.stream) return json(res, 500, { error: { message: 'stream only' } });
    res.writeHead(200, { 'content-type': 'text/event-stream' });
    res.write(`data: ${JSON.stringify({ id: 'g', object: 'chat.completion.chunk', model: 'm', choices: [{ index: 0, delta: { role: 'assistant', content: 'Hel' }, finish_reason: null }] })}\n\n`);
    if (after === 'break') setImmediate(() => res.socket?.destroy());
  };
}

describe('Messages API errors in Anthropic\'s envelope', () => {
  const cluster = useFakeCluster({ limits: { max_body_bytes: 64 * 1024 } });
  const url = (path = '/v1/messages') => `${cluster.url}${path}`;
  afterEach(async () => {
    cluster.ctx.handler = contextHandler();
    cluster.gen.handler = generationHandler();
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'load back to zero');
  });

  it('refuses bad input on each route with 400 invalid_request_error', async () => {
    const bad: [string, unknown, RegExp][] = [
      ['/v1/messages', { ...ask, max_tokens: undefined }, /max_tokens/],
      ['/v1/messages', { ...ask, model: '' }, /model/],
      ['/v1/messages', { ...ask, messages: 'hi' }, /messages/],
      ['/v1/messages', { ...ask, messages: [] }, /at least one message/],
      ['/v1/messages', { ...ask, messages: [{ role: 'tool', content: 'x' }] }, /role/],
      ['/v1/messages', { ...ask, messages: [{ role: 'user', content: [{ type: 'document', source: {} }] }] }, /'document' is not supported/],
      ['/v1/messages', { ...ask, messages: [{ role: 'user', content: [{ type: 'tool_use', id: 't', name: 'n', input: {} }] }] }, /only valid in assistant/],
      ['/v1/messages', { ...ask, tools: [{ name: 't', input_schema: { type: 'object' } }], tool_choice: { type: 'any' } }, /'any' is not supported/],
      ['/v1/messages', { ...ask, tools: [{ type: 'web_search_20250305', name: 'web_search' }] }, /server tools/],
      ['/v1/messages', { ...ask, thinking: { type: 'enabled', budget_tokens: 4096 } }, /less than max_tokens/],
      ['/v1/messages', { ...ask, temperature: 'hot' }, /temperature/],
      ['/v1/messages', [1, 2], /JSON object/],
      ['/v1/messages/count_tokens', { messages: ask.messages }, /model/],
      ['/v1/messages/count_tokens', { model: 'm', messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64' } }] }] }, /image/],
    ];
    for (const [path, body, message] of bad) expectEnvelope(await postJson(url(path), body), 400, 'invalid_request_error', message);
    expect(cluster.ctx.received.filter((r) => r.method === 'POST')).toHaveLength(0);
    expect(cluster.gen.received.filter((r) => r.method === 'POST')).toHaveLength(0);
  });

  it('answers framework errors in the same envelope: bad JSON, 415, 413, 404', async () => {
    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      expectEnvelope(await postJson(url(path), '{"model": ', {}), 400, 'invalid_request_error', /JSON/);
      expectEnvelope(await postJson(url(path), JSON.stringify(ask), { 'content-type': 'text/plain' }), 415, 'invalid_request_error');
      expectEnvelope(await postJson(url(path), { ...ask, pad: 'x'.repeat(70 * 1024) }), 413, 'request_too_large');
    }
    expectEnvelope(await postJson(url('/v1/messages/batches'), ask), 404, 'not_found_error');
    const get = await fetch(url());
    expectEnvelope({ status: get.status, json: (await get.json()) as Record<string, unknown> }, 404, 'not_found_error');
    // The OpenAI routes keep their own shape.
    const openai = await postJson(url('/v1/chat/completions'), '{"model": ');
    expect(openai.json.error).toMatchObject({ code: 'invalid_json' });
    expect(openai.json.type).toBeUndefined();
  });

  it('relays a worker\'s refusal with its status and message, and a failed cluster as 502 api_error', async () => {
    cluster.gen.handler = (_req, res) => json(res, 400, { object: 'error', message: 'max_tokens exceeds the model limit', type: 'BadRequestError', code: 400 });
    expectEnvelope(await postJson(url(), ask), 400, 'invalid_request_error', /^max_tokens exceeds the model limit$/);
    cluster.ctx.handler = (_req, res) => json(res, 503, { detail: 'busy' });
    const failed = await postJson(url(), ask);
    expectEnvelope(failed, 502, 'api_error', /context server failed/);
  });

  it('ends a stream the worker breaks with an error event, never message_stop', async () => {
    cluster.gen.handler = firstChunkThen('break');
    const res = await fetch(url(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...ask, stream: true }) });
    expect(res.status).toBe(200);
    const events = (await readSse(res)).map((d) => JSON.parse(d) as Record<string, unknown>);
    const types = events.map((e) => e.type);
    expect(types.slice(0, 4)).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta']);
    expect(types).not.toContain('message_stop');
    expect(types.slice(-2)).toEqual(['content_block_stop', 'error']);
    expect(events.at(-1)).toMatchObject({ type: 'error', error: { type: 'api_error', message: expect.stringMatching(/broke the stream/) as unknown } });
    // The SDK surfaces it as an error.
    cluster.gen.handler = firstChunkThen('break');
    const client = new Anthropic({ baseURL: cluster.url, apiKey: 'k', maxRetries: 0 });
    await expect(client.messages.stream(ask as Anthropic.MessageCreateParams).finalMessage()).rejects.toThrow(/broke the stream/);
  });

  it('a client that leaves mid-stream aborts the upstream call and leaves no load behind', async () => {
    cluster.gen.handler = firstChunkThen('hold');
    cluster.gen.aborted = 0;
    const client = new AbortController();
    const res = await fetch(url(), { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...ask, stream: true }), signal: client.signal });
    const reader = (res.body as ReadableStream<Uint8Array>).getReader();
    let seen = '';
    while (!seen.includes('content_block_delta')) seen += new TextDecoder().decode((await reader.read()).value);
    client.abort();
    await waitFor(() => cluster.gen.aborted === 1, 10_000, 'generation call aborted');
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'idle after the client left');
  });
});

describe('Messages API: admission, API keys and missing servers in Anthropic\'s envelope', () => {
  let hold: Gate = gate();
  const held: FakeHandler = async (req, res, w) => {
    await hold.wait;
    await generationHandler()(req, res, w);
  };
  const cluster = useFakeCluster(
    { limits: { max_in_flight: 1, queue_size: 0, api_keys: [{ key: 'sk-good', requests_per_second: 1000 }], reject_unknown_keys: true } },
    { gen: held },
  );
  beforeAll(() => hold.open());

  it('takes the key from x-api-key: an unknown key gets 401 authentication_error, a listed one is served', async () => {
    const good = new Anthropic({ baseURL: cluster.url, apiKey: 'sk-good', maxRetries: 0 });
    const bad = new Anthropic({ baseURL: cluster.url, apiKey: 'sk-bad', maxRetries: 0 });
    const refused = await bad.messages.create(ask as Anthropic.MessageCreateParamsNonStreaming).catch((e: unknown) => e);
    expect(refused).toBeInstanceOf(Anthropic.AuthenticationError);
    expect((refused as InstanceType<typeof Anthropic.AuthenticationError>).error).toMatchObject({ type: 'error', error: { type: 'authentication_error' } });
    expect((await good.messages.create(ask as Anthropic.MessageCreateParamsNonStreaming)).type).toBe('message');
    // The scripted context worker does not count tokens: its chat answer is no count (502).
    expect((await good.messages.countTokens({ model: 'm', messages: ask.messages as Anthropic.MessageParam[] }).catch((e: { status: number }) => e.status))).toBe(502);
  });

  it('refuses past the in-flight limit with 429 rate_limit_error and Retry-After', async () => {
    hold = gate();
    const admission = cluster.router.app.get(AdmissionService);
    const running = postJson(`${cluster.url}/v1/messages`, ask, { 'x-api-key': 'sk-good' });
    await waitFor(() => admission.snapshot().router.in_flight === 1, 5_000, 'one request in flight');
    for (const path of ['/v1/messages', '/v1/messages/count_tokens']) {
      const refused = await postJson(`${cluster.url}${path}`, ask, { 'x-api-key': 'sk-good' });
      expectEnvelope(refused, 429, 'rate_limit_error');
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
    }
    hold.open();
    expect((await running).status).toBe(200);
  });
});

describe('Messages API stream past its deadline', () => {
  const cluster = useFakeCluster({ timeouts: { request_s: 1 } }, { gen: firstChunkThen('hold') });

  it('closes the open block and ends with a timeout_error event', async () => {
    const res = await fetch(`${cluster.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...ask, stream: true }) });
    expect(res.status).toBe(200);
    const events = (await readSse(res)).map((d) => JSON.parse(d) as Record<string, unknown>);
    expect(events.map((e) => e.type)).toEqual(['message_start', 'ping', 'content_block_start', 'content_block_delta', 'content_block_stop', 'error']);
    expect(events.at(-1)).toMatchObject({ error: { type: 'timeout_error', message: expect.stringMatching(/timeouts.request_s/) as unknown } });
    await waitFor(() => cluster.gen.aborted === 1, 10_000, 'generation call aborted');
    await waitFor(() => allIdle(cluster.router.app), 10_000, 'idle');
  });
});

describe('count_tokens and /v1/models with no context server ready', () => {
  const cluster = useRouterCluster({
    waitReady: false,
    workers: { gen: generationHandler() },
    // A context pool whose only server does not answer: side requests go nowhere else.
    config: (c) => ({ context_servers: { urls: ['http://127.0.0.1:9'] }, generation_servers: { urls: [c.gen.url] } }),
  });

  it('answers 503: overloaded_error on count_tokens, the {"object": "error"} shape on /v1/models', async () => {
    const counted = await postJson(`${cluster.url}/v1/messages/count_tokens`, { model: 'm', messages: ask.messages });
    expectEnvelope(counted, 503, 'overloaded_error', /no context server is ready/);
    const res = await fetch(`${cluster.url}/v1/models`);
    expect(res.status).toBe(503);
    expect(await res.json()).toEqual({ object: 'error', message: 'no context server is ready to list the models', type: 'api_error', code: 503 });
    expect(cluster.gen.requests('/v1/models')).toHaveLength(0);
    expect(cluster.gen.requests('/v1/messages/count_tokens')).toHaveLength(0);
  });
});
