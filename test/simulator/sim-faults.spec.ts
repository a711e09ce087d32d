import { afterAll, afterEach, beforeAll, describe, expect, it } from '@jest/globals';
import { SimWorker, startSimWorker } from '../../src/simulator';
import { getJson, postJson, postSse, range, waitFor } from './sim-test-helpers';

const body = (extra: Record<string, unknown> = {}) => ({ prompt: range(1, 20), max_tokens: 4, ...extra });

async function post(url: string, payload: unknown, signal?: AbortSignal): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload), signal });
}

describe('simulated worker: fault knobs, control endpoint and stats', () => {
  let w: SimWorker;
  let url: string;

  beforeAll(async () => {
    w = await startSimWorker({ role: 'mixed', tokenizer: 'bytes', keepReceived: 3 });
    url = `${w.url}/v1/completions`;
  });

  afterEach(() => {
    w.clearFaults();
    w.setHealthy(true);
  });

  afterAll(async () => {
    await w.close();
  });

  it('fails the next N requests with 500, then recovers', async () => {
    w.setFaults({ kind: 'error', count: 2 });
    expect((await post(url, body())).status).toBe(500);
    const second = await post(url, body());
    expect(second.status).toBe(500);
    expect(await second.json()).toMatchObject({ object: 'error', code: 500 });
    expect((await post(url, body())).status).toBe(200);
    expect(w.activeFaults).toEqual([]);
  });

  it('uses a custom status and filters by request type', async () => {
    w.setFaults({ kind: 'error', status: 503, requestTypes: ['context_only'] });
    expect((await post(url, body())).status).toBe(200);
    expect((await post(url, body({ disaggregated_params: { request_type: 'context_only' } }))).status).toBe(503);
  });

  it('closes the connection without an answer', async () => {
    w.setFaults({ kind: 'close', count: 1 });
    await expect(post(url, body())).rejects.toThrow();
    expect((await post(url, body())).status).toBe(200);
  });

  it('hangs until the client goes away, and the worker sees it leave', async () => {
    w.setFaults({ kind: 'hang', count: 1 });
    const ac = new AbortController();
    const pending = post(url, body(), ac.signal);
    await waitFor(() => w.stats.inFlight === 1);
    ac.abort();
    await expect(pending).rejects.toThrow();
    await waitFor(() => w.stats.inFlight === 0);
  });

  it('answers garbage on command: invalid JSON, HTML, missing disaggregated_params', async () => {
    w.setFaults([{ kind: 'invalid_json', count: 1 }, { kind: 'html', count: 1 }]);
    const invalid = await post(url, body());
    expect(invalid.status).toBe(200);
    expect(invalid.headers.get('content-type')).toContain('application/json');
    const text = await invalid.text();
    expect(() => JSON.parse(text)).toThrow();
    const html = await post(url, body());
    expect(html.status).toBe(200);
    expect(html.headers.get('content-type')).toContain('text/html');
    expect(await html.text()).toContain('<html>');

    w.setFaults({ kind: 'no_disagg_params', count: 1 });
    const ctx = await postJson(url, body({ disaggregated_params: { request_type: 'context_only' } }));
    expect(ctx.status).toBe(200);
    expect(ctx.body.choices[0].disaggregated_params).toBeUndefined();
    expect(ctx.body.choices[0].finish_reason).toBe('length');
  });

  it('truncates a stream before [DONE]', async () => {
    w.setFaults({ kind: 'truncated_stream', count: 1 });
    const res = await post(url, body({ stream: true, max_tokens: 8 }));
    expect(res.status).toBe(200);
    await expect(res.text()).rejects.toThrow();
    const ok = await postSse(url, body({ stream: true, max_tokens: 8 }));
    expect(ok.events.at(-1)).toBe('[DONE]');
  });

  it('slows requests down by the given delay', async () => {
    w.setFaults({ kind: 'slow', delayMs: 150, count: 1 });
    const t0 = Date.now();
    expect((await post(url, body())).status).toBe(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(140);
  });

  it('fails a deterministic share of requests with a seeded fraction', async () => {
    const run = async (): Promise<number[]> => {
      w.setFaults({ kind: 'error', fraction: 0.5, seed: 7 });
      const statuses: number[] = [];
      for (let i = 0; i < 20; i++) statuses.push((await post(url, body())).status);
      return statuses;
    };
    const a = await run();
    const b = await run();
    expect(a).toEqual(b);
    const failed = a.filter((s) => s === 500).length;
    expect(failed).toBeGreaterThan(3);
    expect(failed).toBeLessThan(17);
  });

  it('makes /health fail on command and through a fault rule', async () => {
    w.setHealthy(false);
    expect((await fetch(`${w.url}/health`)).status).toBe(503);
    w.setHealthy(true);
    expect((await fetch(`${w.url}/health`)).status).toBe(200);
    w.setFaults({ kind: 'error', endpoints: ['health'], count: 1 });
    expect((await fetch(`${w.url}/health`)).status).toBe(500);
    expect((await fetch(`${w.url}/health`)).status).toBe(200);
  });

  it('is driven by POST /sim/control and reports on GET /sim/stats', async () => {
    const ctl = await postJson(`${w.url}/sim/control`, {
      faults: [{ kind: 'error', count: 1, endpoints: ['kv_cache_events'] }],
      health: 'fail',
      resetStats: true,
    });
    expect(ctl.status).toBe(200);
    expect(ctl.body).toMatchObject({ ok: true, health: 'fail', faults: [{ kind: 'error', remaining: 1 }] });
    expect((await fetch(`${w.url}/health`)).status).toBe(503);
    expect((await fetch(`${w.url}/kv_cache_events`, { method: 'POST' })).status).toBe(500);
    expect((await fetch(`${w.url}/kv_cache_events`, { method: 'POST' })).status).toBe(200);
    await postJson(`${w.url}/sim/control`, { health: 'ok' });

    await post(url, body({ n: 1 }));
    await post(url, body({ n: 2, disaggregated_params: { request_type: 'context_only' } }));
    await post(`${w.url}/v1/chat/completions`, { messages: [{ role: 'user', content: 'x' }], n: 3 });
    await post(url, body({ n: 4 }));
    const stats = await getJson(`${w.url}/sim/stats`);
    expect(stats.body.requests.byEndpoint).toMatchObject({ completions: 3, chat: 1, health: 1, kv_cache_events: 2 });
    expect(stats.body.requests.byType).toEqual({ context_only: 1, generation_only: 0, plain: 3 });
    expect(stats.body.received.map((b: { n: number }) => b.n)).toEqual([2, 3, 4]);
    expect(stats.body.openConnections).toBeGreaterThanOrEqual(1);
    expect(stats.body.inFlight).toBe(1); // the stats request itself
    expect(stats.body.faultsInjected.error).toBe(1);
    expect(w.received.map((b) => (b as { n: number }).n)).toEqual([2, 3, 4]);

    const bad = await postJson(`${w.url}/sim/control`, { faults: [{ kind: 'explode' }] });
    expect(bad.status).toBe(400);
  });

  it('close() ends hanging requests and open connections', async () => {
    const w2 = await startSimWorker({ tokenizer: 'bytes', faults: [{ kind: 'hang' }] });
    const outcome = post(`${w2.url}/v1/completions`, body()).then(
      () => 'answered',
      () => 'failed',
    );
    await waitFor(() => w2.stats.inFlight === 1);
    await w2.close();
    expect(await outcome).toBe('failed');
    expect(w2.stats.openConnections).toBe(0);
  });
});

describe('simulated worker: latency model', () => {
  it('paces streaming chunks by the decode time and queues beyond max batch size', async () => {
    const w = await startSimWorker({
      tokenizer: 'bytes',
      latency: { prefillMsPerToken: 1, decodeMsPerToken: 20, maxBatchSize: 1 },
    });
    try {
      const t0 = Date.now();
      const sse = await postSse(`${w.url}/v1/completions`, { prompt: range(1, 51), max_tokens: 5, stream: true });
      const elapsed = Date.now() - t0;
      expect(sse.events.at(-1)).toBe('[DONE]');
      expect(elapsed).toBeGreaterThanOrEqual(50 + 4 * 20 - 10); // 50 prefill tokens + 4 decode steps

      // A repeated prompt is mostly cached: less prefill.
      const a = post(`${w.url}/v1/completions`, { prompt: range(1, 51), max_tokens: 3 });
      const b = post(`${w.url}/v1/completions`, { prompt: range(1, 51), max_tokens: 3 });
      await waitFor(() => w.stats.queued === 1);
      const [ra, rb] = await Promise.all([a, b]);
      expect(ra.status).toBe(200);
      expect(rb.status).toBe(200);
      expect(w.stats.queued).toBe(0);
    } finally {
      await w.close();
    }
  });

  it('switches presets through the control endpoint', async () => {
    const w = await startSimWorker({ tokenizer: 'bytes' });
    try {
      expect(w.latency).toEqual({ prefillMsPerToken: 0, decodeMsPerToken: 0, maxBatchSize: 0, overheadMs: 0 });
      const res = await postJson(`${w.url}/sim/control`, { latency: 'demo' });
      expect(res.body.latency).toMatchObject({ prefillMsPerToken: 0.05, decodeMsPerToken: 10 });
      await postJson(`${w.url}/sim/control`, { latency: { decodeMsPerToken: 1 } });
      expect(w.latency.decodeMsPerToken).toBe(1);
      expect(w.latency.prefillMsPerToken).toBe(0.05);
    } finally {
      await w.close();
    }
  });
});
