import { KvBlockTable, type BlockKey } from '../kv-cache';
import type { KvEventReport, KvReport, ReportedKvEvent, WorkerLoadReport } from './kv-reports';

/**
 * What the centralized KV router knows from the workers' pushed reports, per namespace (`ctx`,
 * `gen`): instances and their data-parallel ranks (worker ids `<instance>:rank<N>`), each rank
 * with its own block table, each instance with the union of its ranks' tables; and workers that
 * report as a whole (no rank suffix). Tables are the KV room's KvBlockTable. TensorRT-LLM's
 * CentralizedKVCacheRouter semantics (see docs/protocol.md "Centralized KV router").
 */
export class RankState {
  readonly table = new KvBlockTable();
  /** Per block: stored events of layer groups not yet removed (events that carry layer_group_id). */
  readonly layerRefs = new Map<BlockKey, number>();
  load?: WorkerLoadReport;
  lastEventSeq = -1;
  lastLoadSeq = -1;
  lastLoadTs = -Infinity;
  lastSeenTs = -Infinity;

  constructor(readonly rank: number | undefined) {}

  get workload(): number {
    return this.load ? this.load.numActiveRequests + this.load.numQueuedRequests : 0;
  }
}

export class InstanceState {
  readonly ranks = new Map<number, RankState>();
  /** Blocks any rank holds, and how many ranks hold each. */
  readonly combined = new KvBlockTable();
  readonly combinedRefs = new Map<BlockKey, number>();
  rr = 0;

  constructor(readonly id: string) {}

  freshestLoadTs(): number {
    let ts = -Infinity;
    for (const r of this.ranks.values()) if (r.lastLoadTs > ts) ts = r.lastLoadTs;
    return ts;
  }

  freshestSeenTs(): number {
    let ts = -Infinity;
    for (const r of this.ranks.values()) if (r.lastSeenTs > ts) ts = r.lastSeenTs;
    return ts;
  }

  workload(): number {
    let n = 0;
    for (const r of this.ranks.values()) n += r.workload;
    return n;
  }
}

export class NamespaceState {
  readonly instances = new Map<string, InstanceState>();
  readonly whole = new Map<string, RankState>();
  rr = 0;
}

/** `<instance>:rank<N>` -> [instance, N]; any other id is a whole worker. */
export function parseWorkerId(workerId: string): [string, number | undefined] {
  const at = workerId.lastIndexOf(':rank');
  if (at < 0) return [workerId, undefined];
  const digits = workerId.slice(at + 5);
  if (!/^-?\d+$/.test(digits)) return [workerId, undefined];
  return [workerId.slice(0, at), Number(digits)];
}

export type ApplyOutcome = 'applied' | 'out_of_order' | 'unknown_namespace' | 'too_many_workers';

/** The pools' namespaces, as TensorRT-LLM's router names them. */
export const KV_REPORT_NAMESPACES: ReadonlySet<string> = new Set(['ctx', 'gen']);

/** Workers (instances and whole workers) known per namespace at most: an unsigned endpoint must not grow without bound. */
export const MAX_REPORTING_WORKERS = 4096;

export class CentralizedKvState {
  private readonly namespaces = new Map<string, NamespaceState>();

  constructor(private readonly clock: () => number = () => performance.now() / 1000) {}

  now(): number {
    return this.clock();
  }

  namespace(name: string): NamespaceState | undefined {
    return this.namespaces.get(name);
  }

  apply(report: KvReport): ApplyOutcome {
    if (!KV_REPORT_NAMESPACES.has(report.namespace)) return 'unknown_namespace';
    const ns = this.namespaces.get(report.namespace) ?? this.newNamespace(report.namespace);
    const [instanceId, rank] = parseWorkerId(report.workerId);
    const full = ns.whole.size + ns.instances.size >= MAX_REPORTING_WORKERS;
    let inst: InstanceState | undefined;
    let rs: RankState | undefined;
    if (rank === undefined) {
      rs = ns.whole.get(report.workerId);
      if (!rs && full) return 'too_many_workers';
      if (!rs) ns.whole.set(report.workerId, (rs = new RankState(undefined)));
    } else {
      inst = ns.instances.get(instanceId);
      if (!inst && full) return 'too_many_workers';
      if (!inst) ns.instances.set(instanceId, (inst = new InstanceState(instanceId)));
      rs = inst.ranks.get(rank);
      if (!rs) inst.ranks.set(rank, (rs = new RankState(rank)));
    }
    return report.kind === 'load' ? this.applyLoad(rs, report) : this.applyEvents(rs, inst, report);
  }

  private newNamespace(name: string): NamespaceState {
    const ns = new NamespaceState();
    this.namespaces.set(name, ns);
    return ns;
  }

  private applyLoad(rs: RankState, report: WorkerLoadReport): ApplyOutcome {
    if (report.seq <= rs.lastLoadSeq) return 'out_of_order';
    const now = this.clock();
    rs.lastLoadSeq = report.seq;
    rs.lastLoadTs = now;
    rs.lastSeenTs = now;
    rs.load = report;
    return 'applied';
  }

  /** A full snapshot replaces the rank's table first; other reports not newer than the last are dropped. */
  private applyEvents(rs: RankState, inst: InstanceState | undefined, report: KvEventReport): ApplyOutcome {
    if (report.seq <= rs.lastEventSeq && !report.isFullSnapshot) return 'out_of_order';
    rs.lastEventSeq = report.seq;
    rs.lastSeenTs = this.clock();
    if (report.isFullSnapshot) {
      if (inst) for (const h of rs.table.keys()) this.dropFromCombined(inst, h);
      rs.table.clear();
      rs.layerRefs.clear();
    }
    for (const event of report.events) this.applyEvent(rs, inst, event);
    return 'applied';
  }

  private applyEvent(rs: RankState, inst: InstanceState | undefined, event: ReportedKvEvent): void {
    const layered = event.layerGroupId !== undefined;
    if (event.type === 'stored') {
      for (const h of event.hashes) {
        // The instance counts each rank holding a block once, however many layer groups store it.
        if (inst && !rs.table.has(h)) {
          inst.combined.add(h);
          inst.combinedRefs.set(h, (inst.combinedRefs.get(h) ?? 0) + 1);
        }
        rs.table.add(h);
        if (layered) rs.layerRefs.set(h, (rs.layerRefs.get(h) ?? 0) + 1);
      }
    } else if (event.type === 'removed') {
      for (const h of event.hashes) {
        if (layered) {
          const refs = rs.layerRefs.get(h) ?? 0;
          if (refs > 1) {
            rs.layerRefs.set(h, refs - 1);
            continue;
          }
        }
        rs.layerRefs.delete(h);
        if (!rs.table.has(h)) continue;
        rs.table.delete(h);
        if (inst) this.dropFromCombined(inst, h);
      }
    }
  }

  private dropFromCombined(inst: InstanceState, h: BlockKey): void {
    const refs = inst.combinedRefs.get(h) ?? 0;
    if (refs > 1) {
      inst.combinedRefs.set(h, refs - 1);
      return;
    }
    inst.combinedRefs.delete(h);
    inst.combined.delete(h);
  }

  /** Forgets workers (instances, whole workers) of `namespace` with no report for `staleS`; returns their ids. */
  evictStale(namespace: string, staleS: number, now = this.clock()): string[] {
    const ns = this.namespaces.get(namespace);
    if (!ns) return [];
    const evicted: string[] = [];
    for (const [id, rs] of ns.whole) {
      if (now - rs.lastSeenTs > staleS) {
        ns.whole.delete(id);
        evicted.push(id);
      }
    }
    for (const [id, inst] of ns.instances) {
      if (now - inst.freshestSeenTs() > staleS) {
        ns.instances.delete(id);
        evicted.push(id);
      }
    }
    return evicted;
  }

  /** Forgets a worker (by instance id) in every namespace: it left the pool. */
  forget(workerId: string): void {
    for (const ns of this.namespaces.values()) {
      ns.instances.delete(workerId);
      ns.whole.delete(workerId);
    }
  }

  /** Instances and whole workers known per namespace (admin view). */
  describe(namespace: string): Record<string, unknown> {
    const ns = this.namespaces.get(namespace);
    if (!ns) return {};
    const now = this.clock();
    const out: Record<string, unknown> = {};
    for (const [id, inst] of ns.instances) {
      out[id] = {
        blocks: inst.combined.size,
        ranks: Object.fromEntries([...inst.ranks].map(([rank, rs]) => [rank, rankView(rs, now)])),
      };
    }
    for (const [id, rs] of ns.whole) out[id] = rankView(rs, now);
    return out;
  }
}

function rankView(rs: RankState, now: number): Record<string, unknown> {
  return {
    blocks: rs.table.size,
    active_requests: rs.load?.numActiveRequests ?? null,
    queued_requests: rs.load?.numQueuedRequests ?? null,
    event_seq: rs.lastEventSeq,
    load_seq: rs.lastLoadSeq,
    load_age_s: Number.isFinite(rs.lastLoadTs) ? Math.round((now - rs.lastLoadTs) * 1000) / 1000 : null,
  };
}
