import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import type { ServerResponse } from 'node:http';
import { ServerRegistry } from '../../src/servers';
import { contextHandler, FakeWorker, generationHandler } from '../support/fake-worker';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { postStream, readSse } from '../support/sse';
import { COUNTING, CountingPolicyModule, ledger } from './support/counting-policy';
import { expectSettled, timerCount } from './support/leaks';
import { startSilentListener, type SilentListener } from './support/silent-listener';
import { RequestEvents, type UpstreamFailureEvent } from '../../src/request-events';

const body = { model: 'm', prompt: 'hello' };

/** Never answers; the response is left open until the router gives up on it. */
const hang = (_req: unknown, res: ServerResponse): void => {
  res.once('close', () => undefined);
};

/** Puts a server that health checks cannot reach into rotation anyway (checks are far apart). */
async function forceReady(router: RunningRouter, role: 'context' | 'generation', url: string): Promise<void> {
  const registry = router.app.get(ServerRegistry);
  await waitFor(() => registry.findByUrl(role, url) !== undefined, 5_000, 'server registered');
  registry.setStatus(registry.findByUrl(role, url)!, 'ready');
}

const QUIET_HEALTH = { startup_wait_s: 0, interval_s: 600 };

function failures(router: RunningRouter): UpstreamFailureEvent[] {
  const seen: UpstreamFailureEvent[] = [];
  router.app.get(RequestEvents).on('upstreamFailure', (e) => seen.push(e));
  return seen;
}

describe('timeouts', () => {
  const workers: FakeWorker[] = [];
  let router: RunningRouter | undefined;
  let timersBefore = 0;
  const worker = async (handler: ConstructorParameters<typeof FakeWorker>[0]): Promise<FakeWorker> => {
    const w = await new FakeWorker(handler).start();
    workers.push(w);
    return w;
  };
  beforeEach(() => {
    ledger.reset();
    timersBefore = timerCount();
  });
  afterEach(async () => {
    await router?.close();
    router = undefined;
    for (const w of workers.splice(0)) await w.close();
    // No timer of the router (timeouts, queue deadlines, undici's) outlives the app.
    await waitFor(() => timerCount() <= timersBefore, 5_000, 'timers released');
  });

  describe('connect timeout', () => {
    let silent: SilentListener;
    beforeAll(async () => {
      silent = await startSilentListener();
    });
    afterAll(() => silent.close());

    it('gives up connecting after http_session.connect_timeout_ms and retries on another server', async () => {
      const good = await worker(contextHandler());
      const gen = await worker(generationHandler());
      router = await startRouter(
        {
          context_servers: { urls: [silent.url, good.url], ...COUNTING },
          generation_servers: { urls: [gen.url], ...COUNTING },
          http_session: { connect_timeout_ms: 300 },
          health: QUIET_HEALTH,
          max_retries: 1,
        },
        [CountingPolicyModule],
      );
      await forceReady(router, 'context', silent.url);
      await waitFor(() => router!.app.get(ServerRegistry).ready('context').length === 2, 5_000, 'both context servers ready');
      const seen = failures(router);
      // Round robin: one of two consecutive requests tries the silent server first.
      for (let i = 0; i < 2; i++) expect((await postJson(`${router.url}/v1/completions`, body)).status).toBe(200);
      expect(seen).toHaveLength(1);
      expect(seen[0]).toMatchObject({ role: 'context', kind: 'connect' });
      expect(seen[0].server.url).toBe(silent.url);
      expect(good.requests('/v1/completions')).toHaveLength(2);
      await expectSettled(router);
    });

    it('answers 502 naming the server when no other server is left', async () => {
      const gen = await worker(generationHandler());
      router = await startRouter(
        { context_servers: { urls: [silent.url], ...COUNTING }, generation_servers: { urls: [gen.url], ...COUNTING }, http_session: { connect_timeout_ms: 300 }, health: QUIET_HEALTH },
        [CountingPolicyModule],
      );
      await forceReady(router, 'context', silent.url);
      await waitFor(() => router!.app.get(ServerRegistry).ready('generation').length === 1, 5_000, 'generation server ready');
      const res = await postJson(`${router.url}/v1/completions`, body);
      expect(res.status).toBe(502);
      expect(res.json.error).toMatchObject({ type: 'upstream_error', code: 'upstream_error' });
      expect(String((res.json.error as { message: string }).message)).toContain(silent.url);
      expect(gen.requests('/v1/completions')).toHaveLength(0);
      await expectSettled(router);
    });
  });

  it('504 when the context server does not answer within timeouts.context_first_byte_s; the call is aborted', async () => {
    const ctx = await worker(hang);
    const gen = await worker(generationHandler());
    router = await startRouter(
      { context_servers: { urls: [ctx.url], ...COUNTING }, generation_servers: { urls: [gen.url], ...COUNTING }, timeouts: { context_first_byte_s: 0.3 } },
      [CountingPolicyModule],
    );
    const res = await postJson(`${router.url}/v1/completions`, body);
    expect(res.status).toBe(504);
    expect(res.json.error).toMatchObject({ type: 'timeout_error', code: 'upstream_timeout' });
    expect(String((res.json.error as { message: string }).message)).toContain(ctx.url);
    await waitFor(() => ctx.aborted === 1, 5_000, 'the context call aborted upstream');
    expect(gen.requests('/v1/completions')).toHaveLength(0);
    await expectSettled(router);
  });

  it('504 before any byte when the generation server does not start its stream within timeouts.generation_first_byte_s', async () => {
    const ctx = await worker(contextHandler());
    const gen = await worker(hang);
    router = await startRouter(
      {
        context_servers: { urls: [ctx.url], ...COUNTING },
        generation_servers: { urls: [gen.url], ...COUNTING },
        timeouts: { context_first_byte_s: 10, generation_first_byte_s: 0.3 },
      },
      [CountingPolicyModule],
    );
    const res = await postStream(`${router.url}/v1/completions`, { ...body, stream: true });
    expect(res.status).toBe(504);
    expect(res.headers.get('content-type')).toContain('application/json');
    const json = (await res.json()) as { error: { code: string; message: string } };
    expect(json.error.code).toBe('upstream_timeout');
    expect(json.error.message).toContain(gen.url);
    await waitFor(() => gen.aborted === 1, 5_000, 'the generation call aborted upstream');
    await expectSettled(router);
  });

  it('a stream that stalls longer than timeouts.stream_idle_s ends with a final SSE error event; upstream aborted, no retry', async () => {
    const ctx = await worker(contextHandler());
    const stall = async (_req: unknown, res: ServerResponse): Promise<void> => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write(`data: ${JSON.stringify({ id: 'g', object: 'text_completion', choices: [{ index: 0, text: 'A', finish_reason: null }] })}\n\n`);
    };
    const gen = await worker(stall);
    const spare = await worker(generationHandler());
    router = await startRouter(
      {
        context_servers: { urls: [ctx.url], ...COUNTING },
        generation_servers: { urls: [gen.url, spare.url], ...COUNTING },
        timeouts: { stream_idle_s: 0.3 },
        max_retries: 1,
      },
      [CountingPolicyModule],
    );
    const res = await postStream(`${router.url}/v1/completions`, { ...body, stream: true });
    expect(res.status).toBe(200);
    const events = await readSse(res);
    expect(events).toHaveLength(2);
    expect(JSON.parse(events[0]).choices[0].text).toBe('A');
    const last = JSON.parse(events[1]) as { error: { type: string; message: string } };
    expect(last.error.type).toBe('timeout_error');
    expect(last.error.message).toContain(gen.url);
    await waitFor(() => gen.aborted === 1, 5_000, 'the stalled stream aborted upstream');
    expect(spare.requests('/v1/completions')).toHaveLength(0);
    await expectSettled(router);
  });

  it('retries a 5xx answer on another server, the failed one excluded', async () => {
    const ctx = await worker(contextHandler());
    const bad = await worker((_req, res) => {
      res.writeHead(500, { 'content-type': 'application/json' }).end('{"error":{"message":"boom"}}');
    });
    const good = await worker(generationHandler());
    router = await startRouter(
      { context_servers: { urls: [ctx.url], ...COUNTING }, generation_servers: { urls: [bad.url, good.url], ...COUNTING }, max_retries: 1 },
      [CountingPolicyModule],
    );
    for (let i = 0; i < 4; i++) {
      const res = await postJson(`${router.url}/v1/completions`, body);
      expect(res.status).toBe(200);
    }
    // Round robin sends half the first attempts to the bad server; each is retried on the good one only.
    expect(bad.requests('/v1/completions').length).toBeGreaterThanOrEqual(1);
    expect(good.requests('/v1/completions')).toHaveLength(4);
    await expectSettled(router);
  });
});
