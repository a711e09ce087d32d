import { performance } from 'node:perf_hooks';
import type { Etcd3 } from 'etcd3';
import { createEtcdClient, EtcdDiscovery } from '../../../src/discovery';
import { ServerRegistry, type ServerState } from '../../../src/servers';
import { startEtcd, type EtcdServer } from '../../support/etcd-server';
import { FakeWorker, generationHandler, type FakeHandler } from '../../support/fake-worker';
import { startRouter, waitFor, type RunningRouter } from '../../support/router-app';

/**
 * How fast discovery and health checks change the rotation, in ms (median of --trials):
 *   join:    etcd put -> server ready / first request at the worker (client loop running)
 *   leave:   etcd delete -> server removed / last request at the worker
 *   passive: worker killed under load -> out of rotation (refused connection on a request)
 *   active:  worker killed, no traffic -> out of rotation by /health checks alone
 *   restart: etcd back (answering) -> router reconnected / a key put then is ready
 *
 *   node test/bench/build.mjs && node dist-bench/test/bench/discovery/discovery-latency.js [--trials=5]
 */
const args = new Map(process.argv.slice(2).map((a) => a.replace(/^--/, '').split('=') as [string, string]));
const TRIALS = Number(args.get('trials') ?? 5);
const ACTIVE = { interval_s: 1, failure_threshold: 2 };

/** A generation worker that records when each completion arrived. */
async function timedWorker(): Promise<FakeWorker & { hits: number[] }> {
  const hits: number[] = [];
  const inner = generationHandler();
  const handler: FakeHandler = (req, res, w) => {
    hits.push(performance.now());
    return inner(req, res, w);
  };
  return Object.assign(await new FakeWorker(handler).start(), { hits });
}

/** Sequential client requests until stopped (bounded by a deadline). */
function clientLoop(url: string, maxMs = 30_000): { stop(): Promise<{ sent: number; failed: number }> } {
  let running = true;
  let sent = 0;
  let failed = 0;
  const deadline = Date.now() + maxMs;
  const done = (async () => {
    while (running && Date.now() < deadline) {
      const res = await fetch(`${url}/v1/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"model":"m","prompt":"hi","max_tokens":2}' });
      await res.text();
      sent++;
      if (res.status !== 200) failed++;
    }
  })();
  return { stop: async () => ((running = false), await done, { sent, failed }) };
}

function whenStatus(registry: ServerRegistry, url: string, ok: (s: ServerState | undefined) => boolean): Promise<number> {
  return new Promise((resolve) => {
    const check = (): boolean => {
      if (!ok(registry.findByUrl('generation', url))) return false;
      off();
      resolve(performance.now());
      return true;
    };
    const off = registry.onEvent(() => void check());
    check();
  });
}

const median = (xs: number[]): number => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const fmt = (xs: number[]): string => `median ${median(xs).toFixed(1)} (min ${Math.min(...xs).toFixed(1)}, max ${Math.max(...xs).toFixed(1)})`;

async function withRouter<T>(etcd: EtcdServer, health: Record<string, unknown>, fn: (r: RunningRouter, registry: ServerRegistry) => Promise<T>): Promise<T> {
  const router = await startRouter({
    metadata_server_config: { hostname: etcd.host, port: etcd.port, refresh_interval: 60 },
    max_retries: 1,
    health: { timeout_s: 2, startup_wait_s: 0, ...health },
  });
  try {
    return await fn(router, router.app.get(ServerRegistry));
  } finally {
    await router.close();
  }
}

async function main(): Promise<void> {
  const etcd = await startEtcd();
  const client: Etcd3 = createEtcdClient({ hosts: etcd.endpoint });
  const base = await timedWorker();
  await client.put('trtllm/base').value(JSON.stringify({ server_role: 'GENERATION', url: base.url }));
  const join: { ready: number[]; traffic: number[] } = { ready: [], traffic: [] };
  const leave: { removed: number[]; lastHit: number[] } = { removed: [], lastHit: [] };
  const passive: number[] = [];
  const active: number[] = [];
  let failedDuringPassive = 0;
  const restart: { reconnected: number[]; newKeyReady: number[] } = { reconnected: [], newKeyReady: [] };
  try {
    await withRouter(etcd, { interval_s: 5 }, async (router, registry) => {
      await waitFor(() => registry.findByUrl('generation', base.url)?.status === 'ready', 20_000, 'base ready');
      for (let i = 0; i < TRIALS; i++) {
        const w = await timedWorker();
        const load = clientLoop(router.url);
        const key = `trtllm/join-${i}`;
        const t0 = performance.now();
        const ready = whenStatus(registry, w.url, (s) => s?.status === 'ready');
        await client.put(key).value(JSON.stringify({ server_role: 'GENERATION', url: w.url }));
        join.ready.push((await ready) - t0);
        await waitFor(() => w.hits.length > 0, 20_000, 'traffic to the new worker');
        join.traffic.push(w.hits[0] - t0);

        const t1 = performance.now();
        const removed = whenStatus(registry, w.url, (s) => s === undefined);
        await client.delete().key(key).exec();
        leave.removed.push((await removed) - t1);
        const hitsAtRemoval = w.hits.length;
        // Requests already routed may still land; give them time, then check none came later.
        await new Promise((r) => setTimeout(r, 200));
        await load.stop();
        leave.lastHit.push(Math.max(0, w.hits[w.hits.length - 1] - t1));
        if (w.hits.length > hitsAtRemoval + 1) process.stderr.write(`note: ${w.hits.length - hitsAtRemoval} requests after removal\n`);
        await w.close();
      }
    });

    // Passive: active checks far apart, so only the refused connection can eject.
    await withRouter(etcd, { interval_s: 60 }, async (router, registry) => {
      for (let i = 0; i < TRIALS; i++) {
        const w = await timedWorker();
        await client.put(`trtllm/passive-${i}`).value(JSON.stringify({ server_role: 'GENERATION', url: w.url }));
        await waitFor(() => registry.findByUrl('generation', w.url)?.status === 'ready', 20_000, 'ready');
        const load = clientLoop(router.url);
        await waitFor(() => w.hits.length > 2, 20_000, 'traffic');
        const out = whenStatus(registry, w.url, (s) => s?.status !== 'ready');
        const t0 = performance.now();
        await w.close();
        passive.push((await out) - t0);
        failedDuringPassive += (await load.stop()).failed;
        await client.delete().key(`trtllm/passive-${i}`).exec();
      }
    });

    // Active: no passive ejection, no breaker, no traffic: /health checks alone.
    await withRouter(etcd, { ...ACTIVE, eject_on_connect_failure: false, circuit_breaker: { enabled: false } }, async (_router, registry) => {
      for (let i = 0; i < TRIALS; i++) {
        const w = await timedWorker();
        await client.put(`trtllm/active-${i}`).value(JSON.stringify({ server_role: 'GENERATION', url: w.url }));
        await waitFor(() => registry.findByUrl('generation', w.url)?.status === 'ready', 20_000, 'ready');
        const out = whenStatus(registry, w.url, (s) => s?.status !== 'ready');
        const t0 = performance.now();
        await w.close();
        active.push((await out) - t0);
        await client.delete().key(`trtllm/active-${i}`).exec();
      }
    });

    // etcd restart: how soon after etcd answers again the router sees it and new keys.
    await withRouter(etcd, { interval_s: 5 }, async (_router, registry) => {
      const discovery = _router.app.get(EtcdDiscovery);
      await waitFor(() => discovery.connected, 20_000, 'connected');
      for (let i = 0; i < TRIALS; i++) {
        await etcd.stop();
        await waitFor(() => !discovery.connected, 30_000, 'outage noticed');
        await etcd.start();
        const t0 = performance.now();
        await waitFor(() => discovery.connected, 30_000, 'reconnected');
        restart.reconnected.push(performance.now() - t0);
        const w = await timedWorker();
        const t1 = performance.now();
        const ready = whenStatus(registry, w.url, (s) => s?.status === 'ready');
        const fresh = createEtcdClient({ hosts: etcd.endpoint });
        await fresh.put(`trtllm/after-restart-${i}`).value(JSON.stringify({ server_role: 'GENERATION', url: w.url }));
        fresh.close();
        restart.newKeyReady.push((await ready) - t1);
        await w.close();
      }
    });
  } finally {
    client.close();
    await base.close();
    await etcd.close();
  }
  const lines = [
    `discovery and health latency, ${TRIALS} trials each (ms)`,
    `  etcd put -> server ready:              ${fmt(join.ready)}`,
    `  etcd put -> first request at worker:   ${fmt(join.traffic)}`,
    `  etcd delete -> server removed:         ${fmt(leave.removed)}`,
    `  etcd delete -> last request at worker: ${fmt(leave.lastHit)}`,
    `  killed under load -> out (passive):    ${fmt(passive)}  (client requests failed: ${failedDuringPassive})`,
    `  killed, no load -> out (active, interval ${ACTIVE.interval_s} s, threshold ${ACTIVE.failure_threshold}): ${fmt(active)}`,
    `  etcd answering again -> reconnected:   ${fmt(restart.reconnected)}`,
    `  after restart: put -> server ready:    ${fmt(restart.newKeyReady)}`,
  ];
  process.stdout.write(`${lines.join('\n')}\n`);
}

void main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exit(1);
  },
);
