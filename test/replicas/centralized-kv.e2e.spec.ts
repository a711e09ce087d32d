import { afterAll, beforeAll, describe, expect, it } from '@jest/globals';
import { ReplicaBus } from '../../src/replicas/replica-bus.service';
import { RouterRegistry, type CentralizedKvCacheAwareRouter } from '../../src/routing';
import { startSimWorker, type SimWorker } from '../../src/simulator';
import { tokens } from '../routing/support/policy-harness';
import { unusedPort } from '../support/free-port';
import { startNats, type NatsServer } from '../support/nats-server';
import { postJson, startRouter, waitFor, type RunningRouter } from '../support/router-app';

const TPB = 16;
const P = tokens(6 * TPB + 1, 4000);

/**
 * Workers push to one replica's endpoint (a worker has one report address); the bus carries
 * the reports to the other replica, which then routes the prefix to the same rank.
 */
describe('centralized_kv_cache_aware across router replicas', () => {
  let nats: NatsServer;
  let workers: SimWorker[];
  const replicas: RunningRouter[] = [];

  beforeAll(async () => {
    nats = await startNats();
    const ports = [await unusedPort(), await unusedPort()];
    workers = [];
    for (let i = 0; i < 2; i++) {
      workers.push(await startSimWorker({ role: 'mixed', dpRanks: 2, tokensPerBlock: TPB, tokenizer: 'bytes', kvReports: { address: `tcp://127.0.0.1:${ports[0]}`, loadIntervalMs: 50 } }));
    }
    for (const [i, port] of ports.entries()) {
      replicas.push(await startRouter({
        generation_servers: { urls: workers.map((w) => w.url), router: { type: 'centralized_kv_cache_aware', router_port: port, router_host: '127.0.0.1', tokenizer: 'bytes', tokens_per_block: TPB } },
        cluster: { bus: nats.url, replica_id: `r${i + 1}`, lease_ttl_s: 1, poll_interval_ms: 20, load_interval_ms: 20 },
      }));
    }
  });
  afterAll(async () => {
    for (const r of replicas) await r.close().catch(() => undefined);
    for (const w of workers ?? []) await w.close();
    await nats?.close();
  });

  const rankBlocks = (r: RunningRouter, w: SimWorker, rank: number): number => {
    const snap = (r.app.get(RouterRegistry).router('generation') as CentralizedKvCacheAwareRouter).snapshot();
    return (snap.workers as Record<string, { ranks?: Record<string, { blocks: number }> }>)[w.workerId]?.ranks?.[rank]?.blocks ?? 0;
  };

  it('the replica the workers do not push to learns their blocks over the bus and routes to the rank holding them', async () => {
    // Relayed reports are not kept: r2 learns what is pushed once it listens (load comes every 50 ms).
    const knows = (r: RunningRouter) => Object.keys((r.app.get(RouterRegistry).router('generation') as CentralizedKvCacheAwareRouter).snapshot().workers as object).length === 2;
    await waitFor(() => replicas.every((r) => r.app.get(ReplicaBus).connected && knows(r)), 30_000, 'both replicas on the bus, knowing both workers');
    workers[1].kvRanks[1].admit(P);
    await waitFor(() => rankBlocks(replicas[0], workers[1], 1) >= 6, 15_000, 'r1 receives the pushed events');
    await waitFor(() => rankBlocks(replicas[1], workers[1], 1) >= 6, 15_000, 'r2 learns them over the bus');
    for (let turn = 0; turn < 2; turn++) {
      const res = await postJson(`${replicas[1].url}/v1/completions`, { model: 'm', prompt: [...P, 1, 2, 3], max_tokens: 2 });
      expect(res.status).toBe(200);
      const body = workers[1].received[workers[1].received.length - 1] as { disaggregated_params?: Record<string, unknown> };
      // Aggregated serving: the hint travels with request_type context_and_generation.
      expect(body.disaggregated_params).toEqual({ request_type: 'context_and_generation', route_hint: { dp_rank: 1 } });
    }
    expect(workers[1].stats.requests.byDpRank[1]).toBe(2);
    expect(workers[0].stats.requests.byType.plain).toBe(0);
  });
});
