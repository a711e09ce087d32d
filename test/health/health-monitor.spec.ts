import { afterAll, afterEach, describe, expect, it } from '@jest/globals';
import { ActiveHealthChecker } from '../../src/health';
import { ServerRegistry, type ServerState } from '../../src/servers';
import { startSimWorker, type SimWorker } from '../../src/simulator';
import { FakeWorker, generationHandler } from '../support/fake-worker';
import { unusedPort } from '../support/free-port';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { RequestEvents, type RoutedEvent } from '../../src/request-events';

/** Fast rounds so ejection and readmission happen within the test's patience. */
const HEALTH = { interval_s: 0.1, timeout_s: 2, failure_threshold: 2, startup_wait_s: 0 };

describe('health monitor (static servers)', () => {
  let router: RunningRouter | undefined;
  const closers: Array<{ close(): Promise<void> }> = [];
  const complete = (r: RunningRouter) => postJson(`${r.url}/v1/completions`, { model: 'm', prompt: 'hi', max_tokens: 2 });
  const sim = async (port?: number): Promise<SimWorker> => {
    const w = await startSimWorker({ role: 'generation', tokenizer: 'bytes', port });
    closers.push(w);
    return w;
  };
  const fake = async (handler = generationHandler()): Promise<FakeWorker> => {
    const w = await new FakeWorker(handler).start();
    closers.push(w);
    return w;
  };
  const serverOf = (r: RunningRouter, url: string): ServerState => r.app.get(ServerRegistry).findByUrl('generation', url)!;

  afterEach(async () => {
    if (router) {
      // Nothing leaks: every reservation was returned.
      for (const s of router.app.get(ServerRegistry).list()) expect(s.activeRequests).toBe(0);
      await router.close();
    }
    router = undefined;
    await Promise.all(closers.splice(0).map((c) => c.close()));
  });
  afterAll(async () => {
    await router?.close();
  });

  it('keeps a server that is down at startup out of rotation until it answers, then routes to it', async () => {
    const up = await fake();
    const latePort = await unusedPort();
    const lateUrl = `http://127.0.0.1:${latePort}`;
    router = await startRouter({ generation_servers: { urls: [up.url, lateUrl] }, health: HEALTH });
    expect(serverOf(router, up.url).status).toBe('ready');
    expect(serverOf(router, lateUrl).status).toBe('preparing');
    for (let i = 0; i < 4; i++) expect((await complete(router)).status).toBe(200);
    expect(up.requests('/v1/completions')).toHaveLength(4);

    const late = await sim(latePort);
    await waitFor(() => serverOf(router!, lateUrl).status === 'ready', 20_000, 'late server ready');
    expect(serverOf(router, lateUrl).serverInfo).toBeDefined();
    for (let i = 0; i < 4; i++) expect((await complete(router)).status).toBe(200);
    expect(late.stats.requests.byType.plain).toBeGreaterThan(0);
  });

  it('ejects a server failing /health twice in a row and readmits it once healthy', async () => {
    const sick = await sim();
    const other = await fake();
    router = await startRouter({ generation_servers: { urls: [sick.url, other.url] }, health: HEALTH });
    const server = serverOf(router, sick.url);
    expect(server.status).toBe('ready');

    sick.setHealthy(false);
    await waitFor(() => server.status === 'unhealthy', 20_000, 'ejection');
    expect(server.consecutiveHealthFailures).toBeGreaterThanOrEqual(2);
    expect(server.ejection).toMatchObject({ reason: 'health_check' });
    const health = await fetch(`${router.url}/health`);
    expect(health.status).toBe(200); // the other server still serves
    const info = (await (await fetch(`${router.url}/cluster_info`)).json()) as { generation_servers: Array<Record<string, unknown>> };
    expect(info.generation_servers.find((s) => s.url === sick.url)).toMatchObject({ state: 'unhealthy', ejected_for: 'health_check' });
    const before = sick.stats.requests.byType.plain;
    for (let i = 0; i < 4; i++) expect((await complete(router)).status).toBe(200);
    expect(sick.stats.requests.byType.plain).toBe(before);

    sick.setHealthy(true);
    await waitFor(() => server.status === 'ready', 20_000, 'readmission');
    expect(server.ejection).toBeUndefined();
    for (let i = 0; i < 4; i++) expect((await complete(router)).status).toBe(200);
    expect(sick.stats.requests.byType.plain).toBeGreaterThan(before);
  });

  it('ejects a server whose /health hangs (check timeout) and readmits it while the other servers are still checked', async () => {
    const hung = await sim();
    const other = await sim();
    router = await startRouter({ generation_servers: { urls: [hung.url, other.url] }, health: { ...HEALTH, timeout_s: 0.5 } });
    const hungState = serverOf(router, hung.url);
    const otherState = serverOf(router, other.url);
    hung.setFaults({ kind: 'hang', endpoints: ['health'] });
    await waitFor(() => hungState.status === 'unhealthy', 20_000, 'hung server ejected');
    expect(hungState.ejection?.detail).toMatch(/timeout/i);
    // The other server's checks go on while the hung one's are pending.
    other.setHealthy(false);
    await waitFor(() => otherState.status === 'unhealthy', 20_000, 'other server ejected too');
    hung.clearFaults();
    other.setHealthy(true);
    await waitFor(() => hungState.status === 'ready' && otherState.status === 'ready', 20_000, 'both back');
  });

  it('a worker killed mid-traffic: in-flight requests fail over, then it gets no more requests', async () => {
    let held = 0;
    // The victim holds every completion until it dies.
    const victim = await fake(() => {
      held++;
    });
    const survivor = await fake();
    // Slow active checks: the passive signal (refused connection) must do the ejection.
    router = await startRouter({ max_retries: 1, generation_servers: { urls: [victim.url, survivor.url] }, health: { ...HEALTH, interval_s: 60 } });
    const routedTo: string[] = [];
    router.app.get(RequestEvents).on('routed', (e: RoutedEvent) => routedTo.push(e.server.url));
    const victimState = serverOf(router, victim.url);

    const inFlight = [complete(router), complete(router), complete(router), complete(router)];
    await waitFor(() => held === 2, 20_000, 'two requests held by the victim');
    await victim.close();
    const answers = await Promise.all(inFlight);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);

    // The next request that picks the victim meets a refused connection: ejected at once.
    for (let i = 0; i < 3 && victimState.status === 'ready'; i++) expect((await complete(router)).status).toBe(200);
    expect(victimState.status).toBe('unhealthy');
    expect(victimState.ejection?.reason).toMatch(/connect_failed|circuit_open/);
    const routedBefore = routedTo.length;
    for (let i = 0; i < 6; i++) expect((await complete(router)).status).toBe(200);
    expect(routedTo.slice(routedBefore)).toEqual(Array(6).fill(survivor.url));
  });

  it('opens the circuit breaker after consecutive failed requests, readmits after the cool-down', async () => {
    const flaky = await sim();
    const steady = await fake();
    router = await startRouter({
      max_retries: 1,
      generation_servers: { urls: [flaky.url, steady.url] },
      health: { ...HEALTH, circuit_breaker: { failure_threshold: 3, cooldown_s: 1 } },
    });
    const server = serverOf(router, flaky.url);
    flaky.setFaults({ kind: 'error', status: 500 });
    // Every request that lands on the flaky worker is retried on the steady one.
    for (let i = 0; i < 12 && server.status === 'ready'; i++) expect((await complete(router)).status).toBe(200);
    expect(server.status).toBe('unhealthy');
    expect(server.ejection?.reason).toBe('circuit_open');
    expect(server.circuit).toMatchObject({ state: 'open', consecutive_failures: 3 });
    const openUntil = server.circuit!.open_until!;
    expect(flaky.stats.faultsInjected.error).toBe(3);
    const info = (await (await fetch(`${router.url}/cluster_info`)).json()) as { generation_servers: Array<Record<string, unknown>> };
    expect(info.generation_servers.find((s) => s.url === flaky.url)).toMatchObject({ circuit: 'open', ejected_for: 'circuit_open' });

    // /health stays fine all along: only the cool-down holds it back.
    flaky.clearFaults();
    await waitFor(() => server.status === 'ready', 20_000, 'readmission after the cool-down');
    expect(Date.now()).toBeGreaterThanOrEqual(openUntil);
    expect(server.circuit).toMatchObject({ state: 'closed', consecutive_failures: 0 });
    const served = flaky.stats.requests.byType.plain;
    for (let i = 0; i < 4; i++) expect((await complete(router)).status).toBe(200);
    expect(flaky.stats.requests.byType.plain).toBeGreaterThan(served);
  });

  it("readmits the pool's only server once it is healthy again, without waiting out its breaker's cool-down", async () => {
    const only = await sim();
    router = await startRouter({
      max_retries: 0,
      generation_servers: { urls: [only.url] },
      health: { ...HEALTH, circuit_breaker: { failure_threshold: 1, cooldown_s: 60 } },
    });
    const server = serverOf(router, only.url);
    // Down: its requests fail (503 counts at once: the first opens its breaker) and so does its /health.
    only.setFaults({ kind: 'error', status: 503 });
    only.setHealthy(false);
    expect((await complete(router)).status).toBe(502);
    await waitFor(() => server.status === 'unhealthy' && server.circuit?.state === 'open', 10_000, 'ejected with its breaker open');
    const openUntil = server.circuit!.open_until!;
    expect((await complete(router)).status).toBe(503);
    // Restarted: healthy again.
    only.clearFaults();
    only.setHealthy(true);
    await waitFor(() => server.status === 'ready', 10_000, 'the only server back in rotation');
    expect(Date.now()).toBeLessThan(openUntil);
    expect(server.circuit).toBeUndefined();
    expect((await complete(router)).status).toBe(200);
  });

  it('prepares a server put back into preparing at once (an admin resuming a drain), not at the next round', async () => {
    const worker = await fake();
    router = await startRouter({ generation_servers: { urls: [worker.url] }, health: { ...HEALTH, interval_s: 600 } });
    const registry = router.app.get(ServerRegistry);
    const server = serverOf(router, worker.url);
    registry.setStatus(server, 'draining');
    const infoFetches = worker.requests('/server_info').length;
    registry.setStatus(server, 'preparing');
    await waitFor(() => server.status === 'ready', 20_000, 'prepared again');
    expect(worker.requests('/server_info').length).toBe(infoFetches + 1);
    expect((await complete(router)).status).toBe(200);
  });

  it('never puts a draining server back, healthy or not', async () => {
    const worker = await sim();
    const other = await fake();
    router = await startRouter({ generation_servers: { urls: [worker.url, other.url] }, health: { ...HEALTH, interval_s: 60 } });
    const registry = router.app.get(ServerRegistry);
    const monitor = router.app.get(ActiveHealthChecker);
    const server = serverOf(router, worker.url);
    registry.setStatus(server, 'draining');
    await monitor.checkAll();
    await monitor.checkAll();
    expect(server.status).toBe('draining');
    worker.setHealthy(false);
    await monitor.checkAll();
    await monitor.checkAll();
    worker.setHealthy(true);
    await monitor.checkAll();
    expect(server.status).toBe('draining');
    expect(server.lastHealth?.ok).toBe(true);
  });
});
