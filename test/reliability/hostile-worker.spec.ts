import { afterEach, describe, expect, it } from '@jest/globals';
import type { ServerResponse } from 'node:http';
import type { AppConfigInput } from '../../src/config';
import { startFakeCluster, type FakeCluster } from '../support/fake-cluster';
import { contextHandler, generationHandler, json, type FakeHandler, type ReceivedRequest } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { postStream, readSse } from '../support/sse';
import { expectSettled } from './support/leaks';
import { endless } from '../support/endless-answer';

/**
 * Workers that misbehave on purpose: answers without end, too large, dripping, never
 * answering, or of the wrong shape. Every case ends with a clear OpenAI-style error, the
 * worker's connection closed, and nothing left held in the router. Limits are small so the
 * mechanism shows without large payloads (test/bench/hostile measures RSS at full size).
 */
const body = { model: 'm', prompt: 'hello', max_tokens: 4 };
const QUIET_HEALTH = { startup_wait_s: 5, interval_s: 600 };


/** Sends `piece` every 50 ms, forever (until the router closes the connection). */
function drip(head: Record<string, string>, piece: (i: number) => string): FakeHandler {
  return (_req, res) => {
    res.writeHead(200, head);
    res.flushHeaders();
    let i = 0;
    const timer = setInterval(() => {
      if (res.destroyed) return clearInterval(timer);
      res.write(piece(i++));
    }, 50);
    res.once('close', () => clearInterval(timer));
  };
}

const hang: FakeHandler = (_req: ReceivedRequest, res: ServerResponse) => {
  res.once('close', () => undefined);
};

describe('hostile workers', () => {
  let cluster: FakeCluster | undefined;
  afterEach(async () => {
    await cluster?.close();
    cluster = undefined;
  });
  const start = async (config: AppConfigInput, handlers: { ctx?: FakeHandler; gen?: FakeHandler }): Promise<FakeCluster> =>
    (cluster = await startFakeCluster({ health: QUIET_HEALTH, max_retries: 0, ...config }, undefined, handlers));

  const huge: FakeHandler = (_req, res) => {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(4 * 1024 ** 3) });
    res.write('{"choices":[');
  };
  it.each([
    {
      what: 'aborts an endless context answer at limits.max_answer_bytes with 502',
      config: { limits: { max_answer_bytes: 256 * 1024 } },
      handlers: { ctx: endless },
      status: 502,
      error: { code: 'answer_too_large' },
      closed: 'ctx' as const,
    },
    {
      what: 'refuses an answer whose content-length is over the limit without reading it',
      config: {},
      handlers: { gen: huge },
      status: 502,
      error: { code: 'answer_too_large' },
      closed: 'gen' as const,
    },
    {
      what: 'bounds a non-streamed answer that drips a byte at a time by timeouts.request_s (504)',
      config: { timeouts: { request_s: 0.6 } },
      handlers: { gen: drip({ 'content-type': 'application/json' }, () => ' ') },
      status: 504,
      error: { message: expect.stringContaining('timeouts.request_s') },
      closed: 'gen' as const,
    },
  ])('$what', async ({ config, handlers, status, error, closed }) => {
    const c = await start(config, handlers);
    const res = await postJson(`${c.router.url}/v1/completions`, body);
    expect(res.status).toBe(status);
    expect(res.json.error).toMatchObject(error);
    await waitFor(() => c[closed].aborted === 1, 5_000, `the ${closed} connection closed`);
    await expectSettled(c.router);
  });

  it('sizes the default answer limit from what the request can produce: 8 MiB of text is too large without logprobs, taken with them', async () => {
    // A valid completion of 8 MiB: under the 2 KiB a token may take with its logprobs, over the 256 bytes of plain text.
    const big: FakeHandler = (_req, res) =>
      json(res, 200, { id: 'x', object: 'text_completion', model: 'm', choices: [{ index: 0, text: 'a'.repeat(8 * 1024 * 1024), finish_reason: 'length' }], usage: { prompt_tokens: 1, completion_tokens: 16_384, total_tokens: 16_385 } });
    const c = await start({}, { gen: big });
    const plain = await postJson(`${c.router.url}/v1/completions`, { model: 'm', prompt: 'hello' });
    expect(plain.status).toBe(502);
    expect(plain.json.error).toMatchObject({ code: 'answer_too_large' });
    const scored = await postJson(`${c.router.url}/v1/completions`, { model: 'm', prompt: 'hello', logprobs: 1 });
    expect(scored.status).toBe(200);
    expect((scored.json as { choices: { text: string }[] }).choices[0].text).toHaveLength(8 * 1024 * 1024);
    await expectSettled(c.router);
  });

  it('ends a stream that never ends at timeouts.request_s with a final SSE error event', async () => {
    const event = (i: number): string => `data: ${JSON.stringify({ id: 'x', object: 'text_completion', choices: [{ index: 0, text: String(i), finish_reason: null }] })}\n\n`;
    const c = await start({ timeouts: { request_s: 2 } }, { gen: drip({ 'content-type': 'text/event-stream' }, event) });
    const res = await postStream(`${c.router.url}/v1/completions`, { ...body, stream: true });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events.length).toBeGreaterThan(1);
    expect(events).not.toContain('[DONE]');
    const last = JSON.parse(events.at(-1)!) as { error: { type: string; code: string } };
    expect(last.error).toMatchObject({ type: 'timeout_error', code: 'upstream_timeout' });
    await waitFor(() => c.gen.aborted === 1, 5_000, 'the generation connection closed');
    await expectSettled(c.router);
  });

  it('ends a stream whose first event never completes at timeouts.generation_first_byte_s', async () => {
    const c = await start({ timeouts: { request_s: 60, generation_first_byte_s: 0.5 } }, { gen: drip({ 'content-type': 'text/event-stream' }, () => 'd') });
    const res = await postStream(`${c.router.url}/v1/completions`, { ...body, stream: true });
    const events = await readSse(res);
    const last = JSON.parse(events.at(-1)!) as { error: { message: string; code: string } };
    expect(last.error.code).toBe('upstream_timeout');
    expect(last.error.message).toContain('generation_first_byte_s');
    await waitFor(() => c.gen.aborted === 1, 5_000, 'the generation connection closed');
    await expectSettled(c.router);
  });

  it('answers 504 when a worker never answers (no head, streamed or not)', async () => {
    const c = await start({ timeouts: { request_s: 0.5 } }, { gen: hang });
    expect((await postJson(`${c.router.url}/v1/completions`, body)).status).toBe(504);
    expect((await postStream(`${c.router.url}/v1/completions`, { ...body, stream: true })).status).toBe(504);
    await waitFor(() => c.gen.aborted === 2, 5_000, 'both generation calls aborted');
    await expectSettled(c.router);
  });

  const choice = { index: 0, text: 'A', disaggregated_params: { request_type: 'context_only', ctx_request_id: 1, first_gen_tokens: [1] } };
  const shapes: Array<[string, unknown]> = [
    ['a choice without finish_reason nor params', { choices: [{ index: 0, text: 'A' }] }],
    ['choices: ["x"]', { choices: ['x'] }],
    ['two choices', { choices: [{ ...choice, finish_reason: 'length' }, { ...choice, index: 1, finish_reason: 'length' }] }],
    ['no choices', { choices: [] }],
    ['a JSON array', [1, 2]],
  ];
  it.each(shapes)('answers 502 to a context answer with %s', async (_what, answer) => {
    const c = await start({}, { ctx: (_req, res) => json(res, 200, answer) });
    const res = await postJson(`${c.router.url}/v1/completions`, body);
    expect(res.status).toBe(502);
    expect((res.json.error as Record<string, string>).code).toBe('bad_upstream_response');
    expect(c.gen.requests('/v1/completions')).toHaveLength(0);
    await expectSettled(c.router);
  });

  it('still relays a context answer finished in the context phase', async () => {
    const c = await start({}, { ctx: contextHandler({ finishReason: 'stop' }) });
    const res = await postJson(`${c.router.url}/v1/completions`, body);
    expect(res.status).toBe(200);
    expect(c.gen.requests('/v1/completions')).toHaveLength(0);
  });

  it('wraps a worker 4xx that is not JSON in an OpenAI-style error', async () => {
    const html: FakeHandler = (_req, res) => {
      res.writeHead(400, { 'content-type': 'text/html' });
      res.end('<html><body>Bad Request</body></html>');
    };
    const c = await start({}, { gen: html });
    const res = await postJson(`${c.router.url}/v1/completions`, body);
    expect(res.status).toBe(400);
    expect(res.headers.get('content-type')).toContain('application/json');
    expect(res.json.error).toMatchObject({ type: 'invalid_request_error', code: 'upstream_rejected' });
    expect(res.text).not.toContain('<html>');
  });

  it('relays a worker JSON 4xx as it is', async () => {
    const trtllm = { object: 'error', message: 'prompt too long', type: 'BadRequestError', param: null, code: 400 };
    const c = await start({}, { gen: (_req, res) => json(res, 400, trtllm) });
    const res = await postJson(`${c.router.url}/v1/completions`, body);
    expect(res.status).toBe(400);
    expect(res.json).toEqual(trtllm);
  });

  it('answers 502 (not an empty 302) to a worker redirect', async () => {
    const redirect: FakeHandler = (_req, res) => {
      res.writeHead(302, { location: 'http://169.254.169.254/' });
      res.end();
    };
    const c = await start({}, { ctx: redirect, gen: generationHandler() });
    const res = await postJson(`${c.router.url}/v1/completions`, body);
    expect(res.status).toBe(502);
    expect(res.json.error).toMatchObject({ type: 'upstream_error' });
    expect(res.headers.get('location')).toBeNull();
    await expectSettled(c.router);
  });
});
