import { afterEach, beforeEach, describe, expect, it } from '@jest/globals';
import type { ServerResponse } from 'node:http';
import { contextHandler, FakeWorker, generationHandler, json, type FakeHandler } from '../support/fake-worker';
import { postJson } from '../support/router-app';
import { useFakeCluster } from '../support/router-cluster';
import { postStream, readSse } from '../support/sse';
import { COUNTING, CountingPolicyModule, ledger } from './support/counting-policy';
import { expectSettled } from './support/leaks';

const body = { model: 'm', prompt: 'hello' };

const raw = (status: number, contentType: string, text: string): FakeHandler => (_req, res: ServerResponse) => {
  res.writeHead(status, { 'content-type': contentType, 'content-length': Buffer.byteLength(text) });
  res.end(text);
};

const HTML = '<html><body><h1>502 Bad Gateway</h1></body></html>';

describe('garbage from workers becomes a 502 naming the server, never a crash', () => {
  const cluster = useFakeCluster(
    {
      context_servers: COUNTING,
      generation_servers: COUNTING,
      // A bad answer is not retried: one server each keeps the culprit obvious.
      health: { circuit_breaker: { enabled: false } },
    },
    { imports: [CountingPolicyModule] },
  );
  beforeEach(() => ledger.reset());
  afterEach(async () => {
    cluster.ctx.handler = contextHandler();
    cluster.gen.handler = generationHandler();
    await expectSettled(cluster.router);
    // Whatever came before, the next request is served.
    expect((await postJson(`${cluster.router.url}/v1/completions`, body)).status).toBe(200);
    await expectSettled(cluster.router);
  });

  async function expect502(from: FakeWorker, stream = false): Promise<string> {
    const res = await postJson(`${cluster.router.url}/v1/completions`, { ...body, stream });
    expect(res.status).toBe(502);
    expect(res.headers.get('content-type')).toContain('application/json');
    const error = res.json.error as { type: string; message: string };
    expect(error.type).toBe('upstream_error');
    expect(error.message).toContain(from.url);
    return error.message;
  }

  it('context answer that is not JSON', async () => {
    cluster.ctx.handler = raw(200, 'application/json', '{"id": "ctx", "choices": [');
    const before = cluster.gen.requests('/v1/completions').length;
    await expect502(cluster.ctx);
    expect(cluster.gen.requests('/v1/completions')).toHaveLength(before);
  });

  it('context answer that is an HTML page with status 200', async () => {
    cluster.ctx.handler = raw(200, 'text/html', HTML);
    await expect502(cluster.ctx);
  });

  it('context answer without choices', async () => {
    cluster.ctx.handler = (_req, res) => json(res, 200, { id: 'ctx', choices: [] });
    await expect502(cluster.ctx);
  });

  it('context answer without disaggregated_params', async () => {
    cluster.ctx.handler = (_req, res) =>
      json(res, 200, {
        id: 'ctx',
        object: 'text_completion',
        choices: [{ index: 0, text: 'A', finish_reason: 'length' }],
        usage: { prompt_tokens: 5, completion_tokens: 1, total_tokens: 6 },
      });
    const before = cluster.gen.requests('/v1/completions').length;
    const message = await expect502(cluster.ctx);
    expect(message).toContain('disaggregated_params');
    expect(cluster.gen.requests('/v1/completions')).toHaveLength(before);
  });

  it('generation answer that is an HTML page with status 200', async () => {
    cluster.gen.handler = raw(200, 'text/html', HTML);
    await expect502(cluster.gen);
  });

  it('generation stream answered with an HTML page', async () => {
    cluster.gen.handler = raw(200, 'text/html', HTML);
    await expect502(cluster.gen, true);
  });

  it('generation answer cut off mid-body (connection closed)', async () => {
    cluster.gen.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': 1000 });
      res.write('{"id":"g","choices":[');
      setImmediate(() => res.socket?.destroy());
    };
    await expect502(cluster.gen);
  });

  it('a truncated stream (no [DONE]) ends with a final SSE error event naming the server', async () => {
    cluster.gen.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end(`data: ${JSON.stringify({ id: 'g', object: 'text_completion', choices: [{ index: 0, text: 'A', finish_reason: null }] })}\n\n`);
    };
    const res = await postStream(`${cluster.router.url}/v1/completions`, { ...body, stream: true });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events).toHaveLength(2);
    const last = JSON.parse(events[1]) as { error: { type: string; message: string } };
    expect(last.error.type).toBe('upstream_error');
    expect(last.error.message).toContain(cluster.gen.url);
  });

  it('a stream broken by the worker mid-way ends with a final SSE error event', async () => {
    cluster.gen.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'g', object: 'text_completion', choices: [{ index: 0, text: 'A', finish_reason: null }] })}\n\n`);
      setImmediate(() => res.socket?.destroy());
    };
    const res = await postStream(`${cluster.router.url}/v1/completions`, { ...body, stream: true });
    const events = await readSse(res);
    const last = JSON.parse(events[events.length - 1]) as { error: { type: string; message: string } };
    expect(last.error.type).toBe('upstream_error');
    expect(last.error.message).toContain(cluster.gen.url);
  });

  it('garbage SSE data lines are passed through, and the stream still needs its [DONE]', async () => {
    cluster.gen.handler = (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.end('data: {not json\n\ndata: [DONE]\n\n');
    };
    const res = await postStream(`${cluster.router.url}/v1/completions`, { ...body, stream: true });
    expect(await readSse(res)).toEqual(['{not json', '[DONE]']);
  });
});
