import { beforeAll, describe, expect, it } from '@jest/globals';
import { MetricsService } from '../../src/observability';
import { InFlightRequests } from '../../src/observability/context/in-flight-requests';
import { ServerRegistry, ServerState } from '../../src/servers';
import { HttpSessionProvider } from '../../src/http-session';
import { contextHandler, generationHandler, json, type FakeHandler } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { parsePrometheusText, sampleValue, samplesOf, scrape } from './prom-text';
import { RequestEvents } from '../../src/request-events';

const NS = 'disagg_router_';

/** Generation answers wait until the test opens the gate (to look at in-flight load). */
function gatedGeneration(): { handler: FakeHandler; open: () => void; waiting: () => number } {
  let release: () => void = () => undefined;
  let gate = new Promise<void>((r) => (release = r));
  let waiting = 0;
  const inner = generationHandler();
  return {
    handler: async (req, res, w) => {
      waiting++;
      await gate;
      waiting--;
      await inner(req, res, w);
    },
    open: () => {
      release();
      gate = Promise.resolve();
    },
    waiting: () => waiting,
  };
}

describe('GET /metrics', () => {
  const gated = gatedGeneration();
  const cluster = useRouterCluster({
    workers: { ctx: contextHandler(), gen: gated.handler, failing: (_req, res) => json(res, 500, { error: 'boom' }) },
    config: (cluster) => ({
      max_retries: 1,
      context_servers: { urls: [cluster.ctx.url] },
      generation_servers: { urls: [cluster.gen.url] },
    }),
  });
  beforeAll(async () => {
    const registry = cluster.router.app.get(ServerRegistry);
    await waitFor(() => registry.ready('generation').length === 1 && registry.ready('context').length === 1, 10_000, 'servers ready');
  });

  it('is valid Prometheus text with the router families', async () => {
    const m = await scrape(cluster.router.url);
    for (const name of ['requests_total', 'request_duration_seconds', 'time_to_first_token_seconds', 'context_phase_duration_seconds', 'overhead_seconds', 'routing_decisions_total', 'routing_decision_seconds', 'kv_matched_token_ratio', 'retries_total', 'upstream_errors_total', 'server_active_requests', 'server_active_tokens', 'healthy_servers', 'circuit_breaker_state', 'admission_queue_length', 'admission_rejections_total', 'kv_events_applied_total', 'kv_poll_errors_total', 'etcd_connected', 'http_requests_total']) {
      expect(m.has(NS + name)).toBe(true);
    }
    expect(m.get(`${NS}request_duration_seconds`)?.type).toBe('histogram');
    expect(m.get(`${NS}requests_total`)?.type).toBe('counter');
    expect(sampleValue(m, `${NS}healthy_servers`, { role: 'generation' })).toBe(1);
    expect(sampleValue(m, `${NS}healthy_servers`, { role: 'context' })).toBe(1);
    // Default process metrics come from this app's registry too.
    expect(m.has('process_cpu_user_seconds_total')).toBe(true);
  });

  it('counts requests and observes their phases by the right amounts', async () => {
    const before = await scrape(cluster.router.url);
    gated.open();
    for (let i = 0; i < 3; i++) {
      const r = await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello' });
      expect(r.status).toBe(200);
    }
    const streamed = await fetch(`${cluster.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stream: true }),
    });
    expect(streamed.status).toBe(200);
    expect(await streamed.text()).toContain('[DONE]');
    const bad = await postJson(`${cluster.router.url}/v1/completions`, { prompt: 'no model' });
    expect(bad.status).toBe(400);
    for (const path of ['/no/such/route', '/another/unknown']) expect((await fetch(`${cluster.router.url}${path}`)).status).toBe(404);

    const after = await scrape(cluster.router.url);
    const delta = (name: string, labels: Record<string, string> = {}): number =>
      sampleValue(after, NS + name, labels) - sampleValue(before, NS + name, labels);

    expect(delta('requests_total', { endpoint: '/v1/completions', status: '200', phase: 'generation', mode: 'disagg' })).toBe(3);
    expect(delta('requests_total', { endpoint: '/v1/chat/completions', status: '200', phase: 'generation', mode: 'disagg' })).toBe(1);
    expect(delta('request_duration_seconds_count', { endpoint: '/v1/completions', stream: 'false' })).toBe(3);
    expect(delta('request_duration_seconds_count', { endpoint: '/v1/chat/completions', stream: 'true' })).toBe(1);
    // Time to first token is a streaming measure only.
    expect(delta('time_to_first_token_seconds_count', { endpoint: '/v1/chat/completions' })).toBe(1);
    expect(delta('time_to_first_token_seconds_count', { endpoint: '/v1/completions' })).toBe(0);
    expect(delta('context_phase_duration_seconds_count')).toBe(4);
    expect(delta('overhead_seconds_count')).toBe(4);
    const overhead = delta('overhead_seconds_sum');
    expect(overhead).toBeGreaterThan(0);
    expect(overhead).toBeLessThan(delta('request_duration_seconds_sum'));
    expect(delta('routing_decisions_total', { role: 'context', policy: 'round_robin', server: cluster.ctx.url })).toBe(4);
    expect(delta('routing_decisions_total', { role: 'generation', server: cluster.gen.url })).toBe(4);
    // Every pick timed, per pool and policy.
    expect(delta('routing_decision_seconds_count', { role: 'context', policy: 'round_robin' })).toBe(4);
    expect(delta('routing_decision_seconds_count', { role: 'generation' })).toBe(4);
    expect(delta('routing_decision_seconds_sum', { role: 'context', policy: 'round_robin' })).toBeGreaterThan(0);
    // Every HTTP answer, including the rejected body that never reached the flow.
    expect(delta('http_requests_total', { method: 'POST', route: '/v1/completions', status: '200' })).toBe(3);
    expect(delta('http_requests_total', { method: 'POST', route: '/v1/completions', status: '400' })).toBe(1);
    expect(delta('requests_total', { status: '400' })).toBe(0);
    // Unknown paths share one series: a scanner cannot grow the route label.
    expect(delta('http_requests_total', { method: 'GET', route: 'unmatched', status: '404' })).toBe(2);
    expect(samplesOf(after, `${NS}http_requests_total`).some((s) => s.labels.route.includes('no/such'))).toBe(false);
  });

  it('reads per-server load at scrape time', async () => {
    // A closed gate for this test only.
    const local = gatedGeneration();
    cluster.gen.handler = local.handler;
    const pending = postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hold on' });
    await waitFor(() => local.waiting() === 1, 10_000, 'generation request waiting');
    const during = await scrape(cluster.router.url);
    expect(sampleValue(during, `${NS}server_active_requests`, { role: 'generation', server: cluster.gen.url })).toBe(1);
    expect(sampleValue(during, `${NS}server_active_requests`, { role: 'context', server: cluster.ctx.url })).toBe(0);
    local.open();
    expect((await pending).status).toBe(200);
    const after = await scrape(cluster.router.url);
    expect(sampleValue(after, `${NS}server_active_requests`, { role: 'generation', server: cluster.gen.url })).toBe(0);
  });

  it('counts a client that left as 499 and forgets every finished request', async () => {
    const hold = gatedGeneration();
    cluster.gen.handler = hold.handler;
    const before = await scrape(cluster.router.url);
    const abort = new AbortController();
    const pending = fetch(`${cluster.router.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'm', prompt: 'leaving', stream: true }),
      signal: abort.signal,
    }).catch(() => undefined);
    await waitFor(() => hold.waiting() === 1, 10_000, 'generation request waiting');
    abort.abort();
    await pending;
    const key = { endpoint: '/v1/completions', status: '499' };
    await waitFor(async () => sampleValue(await scrape(cluster.router.url), `${NS}requests_total`, key) > sampleValue(before, `${NS}requests_total`, key), 10_000, '499 counted');
    hold.open();
    const inFlight = cluster.router.app.get(InFlightRequests);
    await waitFor(() => inFlight.size === 0, 5_000, 'no request left in flight');
    const after = await scrape(cluster.router.url);
    // No latency is reported for an answer nobody received.
    expect(sampleValue(after, `${NS}request_duration_seconds_count`)).toBe(sampleValue(before, `${NS}request_duration_seconds_count`));
  });

  it('counts retries and upstream errors of a failing server', async () => {
    cluster.gen.handler = generationHandler();
    const registry = cluster.router.app.get(ServerRegistry);
    const bad = registry.add({ url: cluster.failing.url, role: 'generation', source: 'admin' });
    registry.setStatus(bad, 'ready');
    const before = await scrape(cluster.router.url);
    // Round robin over two servers: at least one of two requests tries the failing one first.
    for (let i = 0; i < 2; i++) expect((await postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'x' })).status).toBe(200);
    const after = await scrape(cluster.router.url);
    const delta = (name: string, labels: Record<string, string>): number =>
      sampleValue(after, NS + name, labels) - sampleValue(before, NS + name, labels);
    // Each call the failing server got is one upstream error and one retry elsewhere.
    const failedCalls = cluster.failing.requests('/v1/completions').length;
    expect(failedCalls).toBeGreaterThanOrEqual(1);
    expect(delta('retries_total', { role: 'generation' })).toBe(failedCalls);
    expect(delta('upstream_errors_total', { role: 'generation', server: cluster.failing.url, kind: 'status_5xx' })).toBe(failedCalls);
    expect(delta('requests_total', { endpoint: '/v1/completions', status: '200' })).toBe(2);

    // A removed server's series go away with it.
    registry.remove(bad);
    await waitFor(async () => samplesOf(await scrape(cluster.router.url), `${NS}upstream_errors_total`).every((s) => s.labels.server !== cluster.failing.url), 5_000, 'series dropped');
    const gone = await scrape(cluster.router.url);
    expect(samplesOf(gone, `${NS}routing_decisions_total`).some((s) => s.labels.server === cluster.failing.url)).toBe(false);
    expect(samplesOf(gone, `${NS}server_active_requests`).some((s) => s.labels.server === cluster.failing.url)).toBe(false);
  });

  it('keeps label cardinality bounded when unknown servers and reasons appear', async () => {
    const events = cluster.router.app.get(RequestEvents);
    const metrics = cluster.router.app.get(MetricsService);
    const session = cluster.router.app.get(HttpSessionProvider);
    for (let i = 0; i < 50; i++) {
      const stranger = new ServerState({ url: `http://10.0.0.${i}:9000`, role: 'generation', source: 'etcd' });
      events.emit('upstreamFailure', { requestId: `r${i}`, role: 'generation', server: stranger, kind: 'connect', detail: 'refused' });
      events.emit('routed', { role: 'generation', server: stranger, policy: `policy_${i}`, routingSeconds: 0.001 });
      metrics.kvPollError(`10.0.1.${i}:8000`);
      metrics.kvEventsApplied(`http://10.0.2.${i}:8000`, 3);
      metrics.admissionRejected(`reason_${i}`);
    }
    metrics.kvEventsApplied(cluster.ctx.url, 2);
    metrics.admissionRejected('queue full with spaces');
    const m = await scrape(cluster.router.url);
    const servers = (name: string): Set<string> => new Set(samplesOf(m, NS + name).map((s) => s.labels.server));
    for (const name of ['upstream_errors_total', 'routing_decisions_total', 'kv_poll_errors_total', 'kv_events_applied_total']) {
      for (const s of servers(name)) expect([cluster.ctx.url, cluster.gen.url, 'other']).toContain(s);
    }
    expect(sampleValue(m, `${NS}upstream_errors_total`, { server: 'other', kind: 'connect' })).toBe(50);
    expect(sampleValue(m, `${NS}kv_poll_errors_total`, { server: 'other' })).toBe(50);
    expect(sampleValue(m, `${NS}kv_events_applied_total`, { server: 'other' })).toBe(150);
    expect(sampleValue(m, `${NS}kv_events_applied_total`, { server: cluster.ctx.url })).toBe(2);
    expect(samplesOf(m, `${NS}admission_rejections_total`).length).toBeLessThanOrEqual(17);
    expect(sampleValue(m, `${NS}admission_rejections_total`)).toBe(51);
    expect(sampleValue(m, `${NS}admission_rejections_total`, { reason: 'other' })).toBe(51 - 16);
    expect(new Set(samplesOf(m, `${NS}routing_decisions_total`).map((s) => s.labels.policy)).size).toBeLessThanOrEqual(33);
    expect(new Set(samplesOf(m, `${NS}routing_decision_seconds_count`).map((s) => s.labels.policy)).size).toBeLessThanOrEqual(33);
  });

  it('reports what other modules tell it', async () => {
    const metrics = cluster.router.app.get(MetricsService);
    metrics.setQueueLength(7);
    metrics.setQueueLength(2, 'generation');
    metrics.setEtcdConnected(true);
    const m = await scrape(cluster.router.url, '/prometheus/metrics');
    expect(sampleValue(m, `${NS}admission_queue_length`, { queue: 'router' })).toBe(7);
    expect(sampleValue(m, `${NS}admission_queue_length`, { queue: 'generation' })).toBe(2);
    expect(sampleValue(m, `${NS}etcd_connected`)).toBe(1);
    expect(sampleValue(m, `${NS}circuit_breaker_state`, { server: cluster.gen.url, state: 'closed' })).toBe(1);
  });
});

describe('metrics.enabled: false', () => {
  const cluster = useRouterCluster({
    workers: { gen: generationHandler() },
    config: (cluster) => ({ generation_servers: { urls: [cluster.gen.url] }, metrics: { enabled: false } }),
  });

  it('serves no /metrics', async () => {
    expect((await fetch(`${cluster.router.url}/metrics`)).status).toBe(404);
    expect((await fetch(`${cluster.router.url}/prometheus/metrics`)).status).toBe(404);
    expect((await fetch(`${cluster.router.url}/health`)).status).not.toBe(404);
  });
});

describe('the Prometheus text reader', () => {
  it('rejects malformed exposition', () => {
    expect(() => parsePrometheusText('foo 1\n')).toThrow(/without # TYPE/);
    expect(() => parsePrometheusText('# TYPE x histogram\nx_bucket{le="1"} 2\nx_bucket{le="+Inf"} 1\nx_count 1\n')).toThrow(/cumulative/);
    expect(parsePrometheusText('# TYPE a counter\na_total{b="q\\"x"} 3\n').get('a')?.samples[0]).toEqual({ name: 'a_total', labels: { b: 'q"x' }, value: 3 });
  });
});
