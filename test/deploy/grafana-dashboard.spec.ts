import { beforeAll, describe, expect, it } from '@jest/globals';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { AdmissionService } from '../../src/admission/admission.service';
import { ServerRegistry } from '../../src/servers';
import { json } from '../support/fake-worker';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { scrape } from '../observability/prom-text';

/** Each dashboard, the path whose families it reads, and how its metric names look. */
const DASHBOARDS = [
  { file: 'deploy/grafana/disagg-router.json', path: '/metrics', names: /^(disagg_router_|process_|nodejs_)/, minMetrics: 15 },
  {
    file: 'deploy/grafana/trtllm-disagg.json',
    path: '/prometheus/metrics',
    names: /^((ctx|gen)_(total|error|retry|completed)_requests_total|(ctx|gen)_(first_token|complete|per_token)_latency_seconds_bucket|(total|stream|nonstream)_requests_total|(validation_exceptions|http_exceptions|internal_errors|total_responses)_total|queue_latency_seconds_bucket)$/,
    minMetrics: 16,
  },
] as const;
type Dashboard = (typeof DASHBOARDS)[number];

interface Panel {
  type: string;
  title: string;
  targets?: { expr: string }[];
}

/** Every metric name a PromQL expression reads (PromQL functions and keywords are not metrics). */
function metricNamesIn(expr: string, d: Dashboard): string[] {
  const withoutLabels = expr.replace(/\{[^}]*\}/g, '').replace(/\[[^\]]*\]/g, '').replace(/"[^"]*"/g, '');
  const names = withoutLabels.match(/[a-zA-Z_:][a-zA-Z0-9_:]*/g) ?? [];
  return names.filter((n) => d.names.test(n));
}

function dashboardMetrics(d: Dashboard): Map<string, string[]> {
  const dashboard = JSON.parse(readFileSync(join(process.cwd(), d.file), 'utf8')) as { panels: Panel[]; templating: { list: { definition?: string }[] } };
  const byMetric = new Map<string, string[]>();
  const add = (name: string, where: string): void => {
    byMetric.set(name, [...(byMetric.get(name) ?? []), where]);
  };
  for (const panel of dashboard.panels) {
    for (const target of panel.targets ?? []) for (const name of metricNamesIn(target.expr, d)) add(name, panel.title);
  }
  for (const variable of dashboard.templating.list) {
    if (variable.definition) for (const name of metricNamesIn(variable.definition, d)) add(name, 'variable');
  }
  return byMetric;
}

describe('Grafana dashboards deploy/grafana/*.json', () => {
  const cluster = useRouterCluster({
    sim: { context: 1, generation: 2, latency: 'zero' },
    // A context server that answers 500: its requests are retried on the simulated one.
    workers: { failing: (_req, res) => json(res, 500, { error: 'boom' }) },
    config: (cluster) => ({
      max_retries: 1,
      limits: { max_in_flight: 1, queue_size: 1 },
      context_servers: { urls: [...cluster.sim.contextUrls, cluster.failing.url], router: { type: 'round_robin' } },
      generation_servers: { urls: cluster.sim.generationUrls, router: { type: 'kv_cache_aware' } },
    }),
  });
  beforeAll(async () => {
    const registry = cluster.router.app.get(ServerRegistry);
    await waitFor(() => registry.ready('generation').length === 2 && registry.ready('context').length === 2, 10_000, 'servers ready');
  });

  /** One request holds the only slot (its context call hangs), one waits, one is refused; then all leave. */
  async function overload(): Promise<void> {
    const admission = cluster.router.app.get(AdmissionService);
    cluster.sim.contextWorkers[0].setFaults({ kind: 'hang', count: 1 });
    const holder = new AbortController();
    const held = fetch(`${cluster.router.url}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-model', prompt: 'held', max_tokens: 2 }),
      signal: holder.signal,
    }).catch((err: Error) => err);
    await waitFor(() => admission.snapshot().router?.in_flight === 1, 10_000, 'the slot taken');
    const queued = postJson(`${cluster.router.url}/v1/completions`, { model: 'sim-model', prompt: 'queued', max_tokens: 2 });
    await waitFor(() => admission.snapshot().router?.queued === 1, 10_000, 'a request queued');
    const refused = await postJson(`${cluster.router.url}/v1/completions`, { model: 'sim-model', prompt: 'refused', max_tokens: 2 });
    expect(refused.status).toBe(429);
    holder.abort();
    await held;
    expect((await queued).status).toBe(200);
  }

  it.each(DASHBOARDS.map((d) => [d.file, d] as const))('%s queries panels that all have a metric', (_file, d) => {
    const metrics = dashboardMetrics(d);
    expect(metrics.size).toBeGreaterThanOrEqual(d.minMetrics);
    const dashboard = JSON.parse(readFileSync(join(process.cwd(), d.file), 'utf8')) as { panels: Panel[] };
    for (const panel of dashboard.panels.filter((p) => p.type !== 'row')) {
      const names = (panel.targets ?? []).flatMap((t) => metricNamesIn(t.expr, d));
      expect({ panel: panel.title, queries: names.length > 0 }).toEqual({ panel: panel.title, queries: true });
    }
  });

  it('reads only metrics that its path exposes after traffic', async () => {
    const prompt = 'The router keeps the prefix of this prompt on one generation server, ';
    for (let i = 0; i < 6; i++) {
      const r = await postJson(`${cluster.router.url}/v1/completions`, { model: 'sim-model', prompt: prompt + i, max_tokens: 4 });
      expect(r.status).toBe(200);
    }
    const streamed = await fetch(`${cluster.router.url}/v1/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'sim-model', messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, stream: true }),
    });
    expect(streamed.status).toBe(200);
    await streamed.text();
    const bad = await postJson(`${cluster.router.url}/v1/completions`, { model: 'sim-model' });
    expect(bad.status).toBe(400);

    await overload();

    const missing: string[] = [];
    for (const d of DASHBOARDS) {
      const families = await scrape(cluster.router.url, d.path);
      const sampleNames = new Set([...families.values()].flatMap((f) => f.samples.map((s) => s.name)));
      for (const [name, panels] of dashboardMetrics(d)) {
        if (!sampleNames.has(name)) missing.push(`${d.file}: ${name} (${panels.join(', ')})`);
      }
    }
    expect(missing).toEqual([]);
  });
});
