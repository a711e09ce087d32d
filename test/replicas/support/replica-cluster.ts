import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import { ServerRegistry, type ServerState } from '../../../src/servers';
import { startSimCluster, type FaultRule, type SimCluster, type SimWorker } from '../../../src/simulator';
import { startNats, type NatsServer } from '../../support/nats-server';
import { startRouter, waitFor, type RunningRouter } from '../../support/router-app';

export const TPB = 16;
export const TOKEN = 'replica-admin-token-0123456789';

export interface Replica extends RunningRouter {
  id: string;
}

export interface ReplicaCluster {
  nats: NatsServer;
  sim: SimCluster;
  replicas: Replica[];
  /** Starts one more router replica on the same bus and workers. */
  addReplica(id: string, cluster?: Record<string, unknown>): Promise<Replica>;
  close(): Promise<void>;
}

/** A real nats-server, simulated generation workers and router replicas sharing them. */
export async function startReplicaCluster(opts: { workers?: number; replicas?: number; faults?: FaultRule[]; router?: Record<string, unknown>; cluster?: Record<string, unknown> } = {}): Promise<ReplicaCluster> {
  const nats = await startNats();
  const sim = await startSimCluster({ context: 0, generation: opts.workers ?? 3, tokensPerBlock: TPB, tokenizer: 'bytes', latency: 'zero', faults: opts.faults });
  const replicas: Replica[] = [];
  const addReplica = async (id: string, cluster: Record<string, unknown> = {}): Promise<Replica> => {
    const router = await startRouter({
      generation_servers: { urls: sim.generationUrls, router: { type: 'kv_cache_aware', tokenizer: 'bytes', ...opts.router } },
      admin: { token: TOKEN },
      health: { interval_s: 0.2 },
      cluster: { bus: nats.url, replica_id: id, lease_ttl_s: 1, poll_interval_ms: 20, snapshot_interval_s: 0.2, load_interval_ms: 20, ...opts.cluster, ...cluster },
    });
    const replica = { ...router, id };
    replicas.push(replica);
    return replica;
  };
  for (let i = 1; i <= (opts.replicas ?? 2); i++) await addReplica(`r${i}`);
  return {
    nats,
    sim,
    replicas,
    addReplica,
    close: async () => {
      for (const r of replicas) await r.close().catch(() => undefined);
      await sim.close();
      await nats.close();
    },
  };
}

export async function clusterAdmin(r: RunningRouter): Promise<ClusterDetail> {
  const res = await fetch(`${r.url}/admin/v1/cluster`, { headers: { authorization: `Bearer ${TOKEN}` } });
  if (res.status !== 200) throw new Error(`GET /admin/v1/cluster: ${res.status}`);
  return (await res.json()) as ClusterDetail;
}

export interface ClusterDetail {
  enabled: boolean;
  replica_id: string;
  bus: { state: string; resyncs: number; outages: number; retries: number };
  replicas: { replica: string; self: boolean }[];
  workers: { url: string; owner: string | null }[];
  stream: { last_seq: number; lag: number; received: number; gaps: number; workers_with_gaps: string[] };
  snapshots: { written: number; adopted: number };
  routed_blocks: { sent: number; received: number };
}

export async function clusterInfo(r: RunningRouter): Promise<Record<string, unknown>> {
  return (await (await fetch(`${r.url}/cluster_info`)).json()) as Record<string, unknown>;
}

/** Every replica connected, sees all the others, and the workers' owners are one per worker and agreed on. */
export async function waitForOwnership(replicas: readonly Replica[], workers: number, timeoutMs = 15_000): Promise<Map<string, string>> {
  let owners: Map<string, string> | undefined;
  await waitFor(async () => (owners = await agreedOwners(replicas, workers)) !== undefined, timeoutMs, 'one agreed poll owner per worker');
  return owners ?? new Map();
}

/** Worker URL -> its poll owner, when every replica is connected, sees the others and agrees on one owner per worker (else undefined). */
export async function agreedOwners(replicas: readonly Replica[], workers: number): Promise<Map<string, string> | undefined> {
  const views = await Promise.all(replicas.map(clusterAdmin));
  if (!views.every((v) => v.bus.state === 'connected' && v.replicas.length === replicas.length)) return undefined;
  const owners = new Map(views[0].workers.map((w) => [w.url, w.owner ?? '']));
  if (owners.size !== workers || [...owners.values()].some((o) => !replicas.some((r) => r.id === o))) return undefined;
  return views.every((v) => v.workers.every((w) => owners.get(w.url) === w.owner)) ? owners : undefined;
}

export function stateOn(app: NestFastifyApplication, url: string): ServerState {
  const s = app.get(ServerRegistry).findByUrl('generation', url);
  if (!s) throw new Error(`no generation server ${url}`);
  return s;
}

/** The worker's blocks as its router-side table holds them (confirmed by events only). */
export function confirmed(app: NestFastifyApplication, url: string): Set<bigint | string> {
  return new Set(stateOn(app, url).kvTable().keys());
}

/** Each replica's confirmed table equals what each worker really caches, once every worker's events were drained. */
export async function waitForConvergence(cluster: ReplicaCluster, replicas: readonly Replica[] = cluster.replicas, timeoutMs = 15_000): Promise<void> {
  const same = (a: Set<unknown>, b: Set<unknown>): boolean => a.size === b.size && [...a].every((x) => b.has(x));
  await waitFor(() => cluster.sim.generationWorkers.every((w: SimWorker) => {
    const truth = new Set<unknown>(w.kv.hashes());
    return w.kv.pendingEvents === 0 && replicas.every((r) => same(confirmed(r.app, w.url), truth));
  }), timeoutMs, 'every replica holds every worker\'s real cache');
}
