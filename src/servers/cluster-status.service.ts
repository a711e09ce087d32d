import { Injectable } from '@nestjs/common';
import { SERVER_ROLES, trtllmEnv } from '../config';
import { ServerRegistry } from './server-registry.service';

export interface Readiness {
  ready: boolean;
  reason?: string;
}

/** A readiness condition other modules add (startup wait, shutdown drain, etcd outage...). */
export type ReadinessGate = () => Readiness;

/**
 * Whether the router can serve: a ready generation server, and a ready context server when
 * the cluster has context servers at all (unless in generation-only benchmark mode); plus
 * every registered gate.
 */
@Injectable()
export class ClusterStatus {
  private readonly gates = new Set<ReadinessGate>();
  private readonly infoSections = new Map<string, () => unknown>();
  /** TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1: the context pool is not used, so not waited for. */
  private readonly contextNeeded = !trtllmEnv().benchmarkGenOnly;

  constructor(private readonly servers: ServerRegistry) {}

  addGate(gate: ReadinessGate): () => void {
    this.gates.add(gate);
    return () => this.gates.delete(gate);
  }

  /** A top-level /cluster_info field another module owns (e.g. `metadata_server`). */
  addInfoSection(name: string, section: () => unknown): () => void {
    this.infoSections.set(name, section);
    return () => this.infoSections.delete(name);
  }

  readiness(): Readiness {
    for (const gate of this.gates) {
      const r = gate();
      if (!r.ready) return r;
    }
    if (this.servers.ready('generation').length === 0) return { ready: false, reason: 'no generation server is ready' };
    if (this.contextNeeded && this.servers.hasContextPool() && this.servers.ready('context').length === 0) {
      return { ready: false, reason: 'no context server is ready' };
    }
    return { ready: true };
  }

  clusterInfo(): Record<string, unknown> {
    const readiness = this.readiness();
    const info: Record<string, unknown> = { is_ready: readiness.ready };
    if (readiness.reason) info.reason = readiness.reason;
    for (const role of SERVER_ROLES) {
      info[`${role}_servers`] = this.servers.list(role).map((s) => ({
        url: s.url,
        state: s.status,
        source: s.source,
        active_requests: s.activeRequests,
        ...(s.ejection ? { ejected_for: s.ejection.reason } : {}),
        ...(s.circuit && s.circuit.state !== 'closed' ? { circuit: s.circuit.state } : {}),
      }));
    }
    for (const [name, section] of this.infoSections) info[name] = section();
    return info;
  }
}
