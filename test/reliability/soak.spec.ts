import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { HttpSessionProvider } from '../../src/http-session';
import { runSoak, type SoakResult } from '../bench/soak/soak-driver';
import { startSoakCluster, type SoakCluster } from '../bench/soak/soak-cluster';
import { startRouter, waitFor, type RunningRouter } from '../support/router-app';
import { COUNTING, CountingPolicyModule, ledger } from './support/counting-policy';
import { expectSettled, timerCount } from './support/leaks';

/**
 * A bounded soak small enough for CI: 2,000 requests at concurrency 32, 10% abandoned by the
 * client, 5% of upstream calls failing with 500, and one generation worker killed and
 * restarted on the same port mid-run. Every request must end in a complete answer or a clear
 * error, and nothing may leak. (test/bench/soak/ runs the same load for minutes.)
 */
describe('soak', () => {
  let cluster: SoakCluster;
  let router: RunningRouter;
  let unhandled = 0;
  const onUnhandled = (): void => void unhandled++;
  let timersBefore = 0;

  beforeAll(async () => {
    process.on('unhandledRejection', onUnhandled);
    timersBefore = timerCount();
    ledger.reset();
    cluster = await startSoakCluster({ context: 2, generation: 2, errorFraction: 0.05, seed: 7, decodeMsPerToken: 1 });
    router = await startRouter(
      {
        context_servers: { urls: cluster.contextUrls, ...COUNTING },
        generation_servers: { urls: cluster.generationUrls, ...COUNTING },
        max_retries: 1,
        health: { interval_s: 0.5, timeout_s: 1, startup_wait_s: 10 },
        limits: { max_in_flight: 64, queue_size: 64, queue_timeout_ms: 10_000 },
      },
      [CountingPolicyModule],
    );
  }, 60_000);

  afterAll(async () => {
    process.off('unhandledRejection', onUnhandled);
    await router?.close();
    await cluster?.close();
  });

  it('2,000 requests with client aborts, upstream 500s and a worker restart: every request ends cleanly, nothing leaks', async () => {
    let killed = false;
    let done = 0;
    let restarted: Promise<void> | undefined;
    const result: SoakResult = await runSoak({
      url: router.url,
      concurrency: 32,
      requests: 2_000,
      abortFraction: 0.1,
      seed: 11,
      requestTimeoutMs: 20_000,
      onProgress: (n) => {
        if (!killed && n >= 600) {
          killed = true;
          restarted = cluster.kill('generation', 0).then(async () => {
            // Down while roughly 200 more requests run, then back on the same port.
            await waitFor(() => done >= 800, 30_000, 'traffic while the worker is down');
            await cluster.restart('generation', 0);
          });
        }
        done = n;
      },
    });
    await restarted;
    if (process.env.SOAK_REPORT) process.stderr.write(`${JSON.stringify(result)}\n`);

    expect(result.badSamples).toEqual([]);
    expect(result.bad).toBe(0);
    expect(result.total).toBe(2_000);
    expect(result.complete + result.aborted + Object.values(result.errors).reduce((a, b) => a + b, 0)).toBe(2_000);
    // Most requests succeed despite the faults (retries on another server).
    expect(result.complete).toBeGreaterThan(1_500);
    expect(result.aborted).toBeGreaterThan(100);
    expect(unhandled).toBe(0);

    await expectSettled(router, 'after the soak');
    // Keep-alive sockets stay within the pool's bound (connections_per_server x servers).
    expect(router.app.get(HttpSessionProvider).openSockets()).toBeLessThanOrEqual(4 * 128);
  }, 180_000);

  it('closes without leftovers: worker sockets and timers back to their level before the soak', async () => {
    await router.close();
    await waitFor(() => cluster.workers.every((w) => w.stats.openConnections === 0), 5_000, 'worker connections closed');
    await waitFor(() => timerCount() <= timersBefore, 5_000, 'timers released');
  });
});
