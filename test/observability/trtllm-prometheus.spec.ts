import { beforeAll, describe, expect, it } from '@jest/globals';
import { ServerRegistry } from '../../src/servers';
import { json } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { postStream } from '../support/sse';
import { sampleValue, scrape, type Family } from './prom-text';

/** Every TensorRT-LLM name README "Observability" lists, with its type. */
const COUNTERS = [
  ...['ctx', 'gen'].flatMap((r) => ['total_requests', 'error_requests', 'retry_requests', 'completed_requests'].map((n) => `${r}_${n}`)),
  'total_requests', 'stream_requests', 'nonstream_requests', 'validation_exceptions', 'http_exceptions', 'internal_errors', 'total_responses',
];
const HISTOGRAMS = [
  ...['ctx', 'gen'].flatMap((r) => ['first_token_latency_seconds', 'complete_latency_seconds', 'per_token_latency_seconds'].map((n) => `${r}_${n}`)),
  'queue_latency_seconds',
];
/** As in TensorRT-LLM, context calls are never streamed: these two exist and stay at zero. */
const NEVER_MOVE = ['ctx_first_token_latency_seconds', 'ctx_per_token_latency_seconds'];
const SHORT_LE = ['0.001', '0.005', '0.01', '0.02', '0.04', '0.06', '0.08', '0.1', '0.25', '0.5', '0.75', '1.0', '2.5', '5.0', '7.5', '10.0', '20.0', '40.0', '80.0', '160.0', '640.0', '2560.0', '+Inf'];
const LONG_LE = ['0.1', '0.3', '0.5', '0.8', '1.0', '1.5', '2.0', '2.5', '5.0', '10.0', '15.0', '20.0', '30.0', '40.0', '50.0', '60.0', '120.0', '240.0', '480.0', '960.0', '1920.0', '+Inf'];

function count(m: Map<string, Family>, histogram: string): number {
  return sampleValue(m, `${histogram}_count`);
}

describe("TensorRT-LLM's Prometheus names on /prometheus/metrics", () => {
  const cluster = useRouterCluster({
    sim: { context: 1, generation: 1, latency: { prefillMsPerToken: 0, decodeMsPerToken: 1, maxBatchSize: 0, overheadMs: 0 } },
    // A context server that answers 500: requests it gets are retried on the simulated one.
    workers: { failing: (_req, res) => json(res, 500, { error: 'boom' }) },
    config: (cluster) => ({
      max_retries: 1,
      context_servers: { urls: [cluster.failing.url, ...cluster.sim.contextUrls], router: { type: 'round_robin' } },
      generation_servers: { urls: cluster.sim.generationUrls },
    }),
  });
  beforeAll(async () => {
    const registry = cluster.router.app.get(ServerRegistry);
    await waitFor(() => registry.ready('context').length === 2 && registry.ready('generation').length === 1, 10_000, 'servers ready');
  });

  it('are there from the start, without labels, counters as <name>_total and Python-style le', async () => {
    const m = await scrape(cluster.url, '/prometheus/metrics');
    for (const name of COUNTERS) {
      expect({ name, type: m.get(`${name}_total`)?.type }).toEqual({ name, type: 'counter' });
      expect(m.get(`${name}_total`)!.samples).toEqual([{ name: `${name}_total`, labels: {}, value: 0 }]);
    }
    for (const name of HISTOGRAMS) {
      const family = m.get(name)!;
      expect({ name, type: family?.type }).toEqual({ name, type: 'histogram' });
      const les = family.samples.filter((s) => s.name === `${name}_bucket`).map((s) => s.labels.le);
      expect({ name, les }).toEqual({ name, les: name.endsWith('complete_latency_seconds') ? LONG_LE : SHORT_LE });
      for (const s of family.samples) expect(Object.keys(s.labels).filter((l) => l !== 'le')).toEqual([]);
    }
    // This router's own families follow, as on /metrics.
    expect(m.has('disagg_router_requests_total')).toBe(true);
    const own = await scrape(cluster.url, '/metrics');
    expect(own.has('ctx_total_requests_total')).toBe(false);
  });

  it('every one moves under traffic: each request kind, an error, a retry', async () => {
    // The first context pick is the failing server: a retry on the simulated one.
    const plain = await postJson(`${cluster.url}/v1/completions`, { model: 'sim-model', prompt: 'first', max_tokens: 3 });
    expect(plain.status).toBe(200);
    const chat = await postJson(`${cluster.url}/v1/chat/completions`, { model: 'sim-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3 });
    expect(chat.status).toBe(200);
    for (const [path, body] of [
      ['/v1/completions', { model: 'sim-model', prompt: 'stream', max_tokens: 4, stream: true }],
      ['/v1/chat/completions', { model: 'sim-model', messages: [{ role: 'user', content: 'stream' }], max_tokens: 4, stream: true }],
    ] as const) {
      const res = await postStream(`${cluster.url}${path}`, body);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('data: [DONE]');
    }
    // Refused before the flow: a validation exception.
    expect((await postJson(`${cluster.url}/v1/completions`, { model: 'sim-model' })).status).toBe(400);
    // A worker's 4xx (prompt beyond max_seq_len), relayed: an HTTP exception and a context error.
    const tooLong = await postJson(`${cluster.url}/v1/completions`, { model: 'sim-model', prompt: 'x', max_tokens: 100_000 });
    expect(tooLong.status).toBe(400);
    // The generation worker fails twice (the call and its retry): an internal error and a generation error.
    cluster.sim.generationWorkers[0].setFaults({ kind: 'error', count: 2 });
    const failed = await postJson(`${cluster.url}/v1/completions`, { model: 'sim-model', prompt: 'fails', max_tokens: 2 });
    expect(failed.status).toBe(502);

    const m = await scrape(cluster.url, '/prometheus/metrics');
    const v = (name: string): number => sampleValue(m, `${name}_total`);
    for (const name of COUNTERS) expect({ name, moved: v(name) > 0 }).toEqual({ name, moved: true });
    for (const name of HISTOGRAMS.filter((n) => !NEVER_MOVE.includes(n))) expect({ name, moved: count(m, name) > 0 }).toEqual({ name, moved: true });
    for (const name of NEVER_MOVE) expect(count(m, name)).toBe(0);

    // The refused one never reached the flow (as TensorRT-LLM counts it: before its handler).
    expect(v('total_requests')).toBe(6);
    expect(v('stream_requests')).toBe(2);
    expect(v('nonstream_requests')).toBe(4);
    expect(v('validation_exceptions')).toBe(1);
    expect(v('http_exceptions')).toBe(1);
    expect(v('internal_errors')).toBe(1);
    expect(v('total_responses')).toBe(4);
    expect(count(m, 'queue_latency_seconds')).toBe(6);
    // Calls, not attempts: a retried call counts once; every finished call is completed.
    expect(v('ctx_total_requests')).toBe(6);
    expect(v('ctx_completed_requests')).toBe(6);
    expect(v('ctx_error_requests')).toBe(1);
    expect(v('ctx_retry_requests')).toBeGreaterThanOrEqual(1);
    expect(v('gen_total_requests')).toBe(5);
    expect(v('gen_completed_requests')).toBe(5);
    expect(v('gen_error_requests')).toBe(1);
    expect(v('gen_retry_requests')).toBe(1);
    expect(count(m, 'gen_first_token_latency_seconds')).toBe(2);
    expect(count(m, 'gen_complete_latency_seconds')).toBe(4);
    expect(count(m, 'ctx_complete_latency_seconds')).toBe(5);
  });
});
