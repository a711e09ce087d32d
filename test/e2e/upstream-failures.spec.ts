import { afterEach, describe, expect, it } from '@jest/globals';
import { ServerRegistry } from '../../src/servers';
import { contextHandler, FakeWorker, generationHandler, json } from '../support/fake-worker';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';

describe('upstream failures', () => {
  const cleanup: (() => Promise<void>)[] = [];
  afterEach(async () => {
    while (cleanup.length) await cleanup.pop()!();
  });
  async function worker(handler: ConstructorParameters<typeof FakeWorker>[0]): Promise<FakeWorker> {
    const w = await new FakeWorker(handler).start();
    cleanup.push(() => w.close());
    return w;
  }
  async function router(config: Parameters<typeof startRouter>[0]): Promise<RunningRouter> {
    const r = await startRouter(config);
    cleanup.push(() => r.close());
    return r;
  }
  const loadIsZero = (r: RunningRouter) => (): boolean => r.app.get(ServerRegistry).list().every((s) => s.activeRequests === 0 && s.activeTokens === 0);

  it('retries on the other context server when one drops connections', async () => {
    // Healthy by its /health, but every completion connection is cut.
    const dropping = await worker((_req, res) => void res.socket?.destroy());
    const ctx = await worker(contextHandler());
    const gen = await worker(generationHandler());
    const r = await router({ max_retries: 1, context_servers: { urls: [dropping.url, ctx.url] }, generation_servers: { urls: [gen.url] } });
    for (let i = 0; i < 4; i++) {
      const res = await postJson(`${r.url}/v1/completions`, { model: 'm', prompt: 'x' });
      expect(res.status).toBe(200);
    }
    expect(ctx.requests('/v1/completions')).toHaveLength(4);
    expect(dropping.requests('/v1/completions').length).toBeGreaterThan(0);
    await waitFor(loadIsZero(r), 5000, 'load back to zero');
  });

  it('answers 502 naming the server once max_retries is used up on 5xx', async () => {
    const ctx = await worker(contextHandler());
    const gen = await worker((_req, res) => json(res, 500, { error: 'boom' }));
    const r = await router({ max_retries: 2, context_servers: { urls: [ctx.url] }, generation_servers: { urls: [gen.url] } });
    const res = await postJson(`${r.url}/v1/completions`, { model: 'm', prompt: 'x' });
    expect(res.status).toBe(502);
    const error = res.json.error as Record<string, string>;
    expect(error.type).toBe('upstream_error');
    expect(error.message).toContain(gen.url);
    // One server only: it is tried again after a backoff, max_retries times.
    expect(gen.requests('/v1/completions')).toHaveLength(3);
    expect(error.message).toContain('after 3 attempt(s)');
    await waitFor(loadIsZero(r), 5000, 'load back to zero');
  });

  it('retries a 5xx on another generation server, excluding the failed one', async () => {
    const ctx = await worker(contextHandler());
    const bad = await worker((_req, res) => json(res, 503, { error: 'overloaded' }));
    const good = await worker(generationHandler());
    const r = await router({ max_retries: 1, context_servers: { urls: [ctx.url] }, generation_servers: { urls: [bad.url, good.url] } });
    for (let i = 0; i < 3; i++) expect((await postJson(`${r.url}/v1/completions`, { model: 'm', prompt: 'x' })).status).toBe(200);
    expect(good.requests('/v1/completions')).toHaveLength(3);
  });

  it('answers 504 when an upstream does not answer in time', async () => {
    const ctx = await worker(() => undefined);
    const gen = await worker(generationHandler());
    const r = await router({ timeouts: { request_s: 0.3 }, context_servers: { urls: [ctx.url] }, generation_servers: { urls: [gen.url] } });
    const res = await postJson(`${r.url}/v1/completions`, { model: 'm', prompt: 'x' });
    expect(res.status).toBe(504);
    expect((res.json.error as Record<string, string>).message).toContain(ctx.url);
    await waitFor(loadIsZero(r), 5000, 'load back to zero');
  });

  it('a client leaving mid-stream aborts the upstream request at once and leaves load at zero', async () => {
    const ctx = await worker(contextHandler());
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const gen = await worker(async (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ choices: [{ index: 0, text: 'A', finish_reason: null }] })}\n\n`);
      await held;
    });
    const r = await router({ context_servers: { urls: [ctx.url] }, generation_servers: { urls: [gen.url] } });
    const controller = new AbortController();
    const res = await fetch(`${r.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'x', stream: true }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    await reader.read();
    controller.abort();
    await waitFor(() => gen.aborted === 1, 5000, 'the generation server to see the abort');
    await waitFor(loadIsZero(r), 5000, 'load back to zero');
    release();
  });
});
