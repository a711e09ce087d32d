import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from '@jest/globals';
import { AdmissionService } from '../../src/admission';
import { ServerRegistry } from '../../src/servers';
import { contextHandler, FakeWorker, generationHandler, type FakeHandler } from '../support/fake-worker';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { COUNTING, CountingPolicyModule, ledger } from './support/counting-policy';
import { gate, type Gate } from './support/gate';
import { expectSettled } from './support/leaks';

/** The generation worker holds every answer until the test opens the gate. */
function held(getGate: () => Gate): FakeHandler {
  const answer = generationHandler();
  return async (req, res, worker) => {
    await getGate().wait;
    await answer(req, res, worker);
  };
}

describe('admission control', () => {
  let ctx: FakeWorker;
  let gen: FakeWorker;
  let hold: Gate;
  beforeAll(async () => {
    ctx = await new FakeWorker(contextHandler()).start();
    gen = await new FakeWorker(held(() => hold)).start();
  });
  afterAll(async () => {
    await ctx.close();
    await gen.close();
  });
  beforeEach(() => {
    hold = gate();
    ledger.reset();
  });
  afterEach(() => hold.open());

  const body = { model: 'm', prompt: 'hello' };
  const pools = () => ({ context_servers: { urls: [ctx.url], ...COUNTING }, generation_servers: { urls: [gen.url], ...COUNTING } });

  describe('global in-flight limit with a queue', () => {
    let router: RunningRouter;
    beforeAll(async () => {
      router = await startRouter({ ...pools(), limits: { max_in_flight: 2, queue_size: 1, queue_timeout_ms: 20_000 } }, [CountingPolicyModule]);
    });
    afterAll(() => router.close());

    it('queues one request beyond the limit, refuses the next with 429 and Retry-After, then serves the queued one', async () => {
      const admission = router.app.get(AdmissionService);
      const running = [postJson(`${router.url}/v1/completions`, body), postJson(`${router.url}/v1/completions`, body)];
      await waitFor(() => admission.snapshot().router.in_flight === 2, 5_000, 'two requests in flight');
      const queued = postJson(`${router.url}/v1/completions`, body);
      await waitFor(() => admission.snapshot().router.queued === 1, 5_000, 'one request queued');

      const refused = await postJson(`${router.url}/v1/completions`, body);
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toMatch(/^\d+$/);
      expect(refused.json.error).toMatchObject({ type: 'rate_limit_error', code: 'queue_full' });
      const metrics = await (await fetch(`${router.url}/metrics`)).text();
      expect(metrics).toMatch(/disagg_router_admission_rejections_total\{reason="queue_full",queue="router"\} 1/);
      expect(metrics).toMatch(/disagg_router_admission_queue_length\{queue="router"\} 1/);

      hold.open();
      const results = await Promise.all([...running, queued]);
      expect(results.map((r) => r.status)).toEqual([200, 200, 200]);
      await expectSettled(router);
    });

    it('a client that leaves while queued frees its place and never reaches a worker', async () => {
      const admission = router.app.get(AdmissionService);
      const before = gen.requests('/v1/completions').length;
      const running = [postJson(`${router.url}/v1/completions`, body), postJson(`${router.url}/v1/completions`, body)];
      await waitFor(() => admission.snapshot().router.in_flight === 2, 5_000, 'two requests in flight');
      const leaving = new AbortController();
      const queued = fetch(`${router.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: leaving.signal,
      }).catch((err: Error) => err);
      await waitFor(() => admission.snapshot().router.queued === 1, 5_000, 'one request queued');
      leaving.abort();
      await queued;
      await waitFor(() => admission.snapshot().router.queued === 0, 5_000, 'queue emptied by the client leaving');
      hold.open();
      expect((await Promise.all(running)).map((r) => r.status)).toEqual([200, 200]);
      expect(gen.requests('/v1/completions').length - before).toBe(2);
      await expectSettled(router);
    });
  });

  describe('queue timeout', () => {
    let router: RunningRouter;
    beforeAll(async () => {
      router = await startRouter({ ...pools(), limits: { max_in_flight: 1, queue_size: 4, queue_timeout_ms: 200 } }, [CountingPolicyModule]);
    });
    afterAll(() => router.close());

    it('answers 429 queue_timeout when no slot frees up in time', async () => {
      const admission = router.app.get(AdmissionService);
      const running = postJson(`${router.url}/v1/completions`, body);
      await waitFor(() => admission.snapshot().router.in_flight === 1, 5_000, 'one request in flight');
      const late = await postJson(`${router.url}/v1/completions`, body);
      expect(late.status).toBe(429);
      expect(late.json.error).toMatchObject({ code: 'queue_timeout' });
      expect(late.headers.get('retry-after')).toBe('1');
      hold.open();
      expect((await running).status).toBe(200);
      await expectSettled(router);
    });
  });

  describe('per-pool limit', () => {
    let router: RunningRouter;
    let ctxGate: Gate;
    let ctxSlow: FakeWorker;
    let concurrent = 0;
    let maxConcurrent = 0;
    beforeAll(async () => {
      const answer = contextHandler();
      ctxSlow = await new FakeWorker(async (req, res, w) => {
        concurrent++;
        maxConcurrent = Math.max(maxConcurrent, concurrent);
        await ctxGate.wait;
        concurrent--;
        answer(req, res, w);
      }).start();
      router = await startRouter(
        {
          context_servers: { urls: [ctxSlow.url], ...COUNTING },
          generation_servers: { urls: [gen.url], ...COUNTING },
          limits: { max_in_flight_per_pool: { context: 1 }, queue_size: 8, queue_timeout_ms: 20_000 },
        },
        [CountingPolicyModule],
      );
    });
    afterAll(async () => {
      await router.close();
      await ctxSlow.close();
    });

    it('keeps at most the limit of calls on the pool at once, the others wait their turn', async () => {
      ctxGate = gate();
      hold.open();
      const admission = router.app.get(AdmissionService);
      const all = Array.from({ length: 3 }, () => postJson(`${router.url}/v1/completions`, body));
      await waitFor(() => admission.snapshot().context?.queued === 2, 5_000, 'two requests waiting for the context pool');
      expect(ctxSlow.requests('/v1/completions')).toHaveLength(1);
      ctxGate.open();
      expect((await Promise.all(all)).map((r) => r.status)).toEqual([200, 200, 200]);
      expect(maxConcurrent).toBe(1);
      expect(ctxSlow.requests('/v1/completions')).toHaveLength(3);
      await expectSettled(router);
    });
  });

  describe('no server available', () => {
    let router: RunningRouter;
    beforeAll(async () => {
      router = await startRouter({ ...pools(), limits: { max_in_flight: 4 } }, [CountingPolicyModule]);
    });
    afterAll(() => router.close());

    it('answers 503 with Retry-After when the pool has no ready server', async () => {
      const registry = router.app.get(ServerRegistry);
      for (const s of registry.list('generation')) registry.setStatus(s, 'unhealthy');
      hold.open();
      const res = await postJson(`${router.url}/v1/completions`, body);
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(res.json.error).toMatchObject({ type: 'service_unavailable', code: 'no_server_available' });
      await expectSettled(router);
    });
  });

  describe('per-API-key rate limit', () => {
    let router: RunningRouter;
    beforeAll(async () => {
      router = await startRouter(
        { ...pools(), limits: { api_keys: [{ key: 'sk-test-slow', requests_per_second: 0.01, burst: 2 }, { key: 'sk-test-fast', requests_per_second: 1000, burst: 1000 }] } },
        [CountingPolicyModule],
      );
    });
    afterAll(() => router.close());

    it('lets a key burst, then answers 429 with Retry-After; other keys and anonymous clients are not affected', async () => {
      hold.open();
      const slow = { authorization: 'Bearer sk-test-slow' };
      expect((await postJson(`${router.url}/v1/completions`, body, slow)).status).toBe(200);
      expect((await postJson(`${router.url}/v1/completions`, body, slow)).status).toBe(200);
      const limited = await postJson(`${router.url}/v1/completions`, body, slow);
      expect(limited.status).toBe(429);
      expect(limited.json.error).toMatchObject({ type: 'rate_limit_error', code: 'rate_limit_exceeded' });
      expect(Number(limited.headers.get('retry-after'))).toBeGreaterThanOrEqual(1);
      expect(await (await fetch(`${router.url}/metrics`)).text()).toMatch(/disagg_router_admission_rejections_total\{reason="rate_limited",queue="api_key"\} 1/);
      expect((await postJson(`${router.url}/v1/completions`, body, { authorization: 'Bearer sk-test-fast' })).status).toBe(200);
      expect((await postJson(`${router.url}/v1/completions`, body)).status).toBe(200);
      // Health is not client traffic.
      expect((await fetch(`${router.url}/health`)).status).toBe(200);
      await expectSettled(router);
    });
  });

  describe('unknown keys refused', () => {
    let router: RunningRouter;
    beforeAll(async () => {
      router = await startRouter(
        { ...pools(), limits: { api_keys: [{ key: 'sk-test-known', requests_per_second: 100 }], reject_unknown_keys: true } },
        [CountingPolicyModule],
      );
    });
    afterAll(() => router.close());

    it('answers 401 without a key or with an unknown one', async () => {
      hold.open();
      const none = await postJson(`${router.url}/v1/completions`, body);
      expect(none.status).toBe(401);
      expect(none.json.error).toMatchObject({ type: 'authentication_error', code: 'invalid_api_key' });
      expect((await postJson(`${router.url}/v1/completions`, body, { authorization: 'Bearer nope' })).status).toBe(401);
      expect((await postJson(`${router.url}/v1/completions`, body, { authorization: 'Bearer sk-test-known' })).status).toBe(200);
      expect(gen.requests('/v1/completions').every((r) => r.headers.authorization === undefined)).toBe(true);
      await expectSettled(router);
    });
  });
});
