import { describe, expect, it } from '@jest/globals';
import { ServerRegistry } from '../../src/servers';
import { postJson, waitFor } from '../support/router-app';
import { useRouterCluster } from '../support/router-cluster';
import { RequestEvents, type RoutedEvent } from '../../src/request-events';

describe('context server killed in the disaggregated flow', () => {
  const cluster = useRouterCluster({
    sim: { context: 2, generation: 1, tokenizer: 'bytes' },
    config: (cluster) => ({
      max_retries: 1,
      context_servers: { urls: cluster.sim.contextUrls },
      generation_servers: { urls: cluster.sim.generationUrls },
      health: { interval_s: 60, timeout_s: 2, startup_wait_s: 0 },
    }),
  });

  it('fails in-flight context calls over, ejects the dead server, then reports the pool empty', async () => {
    const [victim, survivor] = cluster.sim.contextWorkers;
    const registry = cluster.router.app.get(ServerRegistry);
    const routed: RoutedEvent[] = [];
    cluster.router.app.get(RequestEvents).on('routed', (e) => routed.push(e));
    const complete = () => postJson(`${cluster.router.url}/v1/completions`, { model: 'm', prompt: 'hello there', max_tokens: 3 });

    victim.setFaults({ kind: 'hang' });
    const inFlight = [complete(), complete(), complete(), complete()];
    await waitFor(() => victim.stats.faultsInjected.hang === 2, 20_000, 'two context calls held');
    await victim.close();
    expect((await Promise.all(inFlight)).map((r) => r.status)).toEqual([200, 200, 200, 200]);

    const victimState = registry.findByUrl('context', victim.url)!;
    for (let i = 0; i < 3 && victimState.status === 'ready'; i++) expect((await complete()).status).toBe(200);
    expect(victimState.status).toBe('unhealthy');
    const mark = routed.length;
    for (let i = 0; i < 4; i++) expect((await complete()).status).toBe(200);
    expect(routed.slice(mark).filter((e) => e.role === 'context').map((e) => e.server.url)).toEqual(Array(4).fill(survivor.url));
    expect((await fetch(`${cluster.router.url}/health`)).status).toBe(200);

    await survivor.close();
    const refused = await complete();
    expect(refused.status).toBe(502);
    await waitFor(() => registry.ready('context').length === 0, 20_000, 'context pool empty');
    const health = await fetch(`${cluster.router.url}/health`);
    expect(health.status).toBe(503);
    expect(await health.json()).toEqual({ status: 'unavailable', reason: 'no context server is ready' });
    const unavailable = await complete();
    expect(unavailable.status).toBe(503);
    expect((unavailable.json.error as { code: string }).code).toBe('no_server_available');
    for (const s of registry.list()) expect(s.activeRequests).toBe(0);
  });
});
