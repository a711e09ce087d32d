import type { ServerRole } from '../config';
import { KvBlockTable, type KvWorker } from '../kv-cache';
import type { HealthResult } from '../worker-client';

export type { HealthResult } from '../worker-client';

export type ServerStatus = 'preparing' | 'ready' | 'draining' | 'unhealthy';
export type ServerSource = 'config' | 'etcd' | 'admin' | 'cluster';

export interface ServerSpec {
  url: string;
  role: ServerRole;
  source: ServerSource;
}

export type CircuitState = 'closed' | 'open' | 'half_open';

/** Why a server is out of rotation, as the health module saw it. */
export interface EjectionInfo {
  reason: 'health_check' | 'connect_failed' | 'circuit_open';
  since: number;
  detail?: string;
}

/** A server's circuit breaker, as the health module keeps it. */
export interface CircuitInfo {
  state: CircuitState;
  consecutive_failures: number;
  /** Epoch ms when an open breaker lets a health check readmit the server. */
  open_until?: number;
}

/** The hash algorithm a worker uses when its /server_info does not say. */
export const DEFAULT_KV_HASH_ALGO = 'v1_block_key';

/**
 * What the router knows of one worker: load, KV block tables, server_info, health. Data only:
 * the calls to the worker go through the WorkerClient, and the KV room fills the tables.
 */
export class ServerState implements KvWorker {
  readonly id: string;
  readonly url: string;
  readonly origin: string;
  readonly role: ServerRole;
  readonly source: ServerSource;
  status: ServerStatus = 'preparing';
  activeRequests = 0;
  activeTokens = 0;
  /** In flight here through the other router replicas, as they last reported (cluster mode). */
  peerRequests = 0;
  peerTokens = 0;
  serverInfo?: Record<string, unknown>;
  /** The worker answered 404 to /server_info: it runs on the defaults. */
  serverInfoMissing = false;
  lastHealth?: HealthResult;
  consecutiveHealthFailures = 0;
  /** Set by the health module while it keeps the server out of rotation. */
  ejection?: EjectionInfo;
  circuit?: CircuitInfo;
  /** Block tables per hash algorithm, filled from the worker's KV cache events. */
  readonly kvTables = new Map<string, KvBlockTable>();
  /** The hash algorithm the worker's latest KV cache event was tagged with, if any. */
  announcedKvHashAlgo?: string;
  /** `http_session.body_encoding: auto` found that this worker cannot parse msgpack bodies. */
  msgpackRefused = false;

  constructor(spec: ServerSpec) {
    this.url = spec.url;
    const parsed = new URL(spec.url);
    this.origin = parsed.origin;
    this.role = spec.role;
    this.source = spec.source;
    this.id = serverIdFor(spec.role, spec.url);
  }

  /** Requests in flight here cluster-wide: this router's and its peers'. */
  get clusterActiveRequests(): number {
    return this.activeRequests + this.peerRequests;
  }

  get clusterActiveTokens(): number {
    return this.activeTokens + this.peerTokens;
  }

  /** The worker's block-hash algorithm: as its events last said, else its /server_info, else v1. */
  get kvHashAlgo(): string {
    if (this.announcedKvHashAlgo) return this.announcedKvHashAlgo;
    const algo = this.serverInfo?.kv_cache_hash_algo;
    return typeof algo === 'string' && algo ? algo : DEFAULT_KV_HASH_ALGO;
  }

  /** The block table for this worker's hash algorithm (created on first use). */
  kvTable(algo = this.kvHashAlgo): KvBlockTable {
    let table = this.kvTables.get(algo);
    if (!table) {
      table = new KvBlockTable();
      this.kvTables.set(algo, table);
    }
    return table;
  }

  get kvBlocksKnown(): number {
    let n = 0;
    for (const t of this.kvTables.values()) n += t.size;
    return n;
  }

  /** Records a /health probe: the latest result and the failures in a row. */
  recordHealth(result: HealthResult): void {
    this.lastHealth = result;
    this.consecutiveHealthFailures = result.ok ? 0 : this.consecutiveHealthFailures + 1;
  }

  toJSON(): Record<string, unknown> {
    return {
      id: this.id,
      url: this.url,
      role: this.role,
      source: this.source,
      state: this.status,
      active_requests: this.activeRequests,
      active_tokens: this.activeTokens,
      peer_active_requests: this.peerRequests,
      kv_blocks_known: this.kvBlocksKnown,
      last_health: this.lastHealth ?? null,
      ejection: this.ejection ?? null,
      circuit: this.circuit ?? null,
    };
  }
}

/** A stable, path-safe id: `context-127.0.0.1-8001`. */
export function serverIdFor(role: ServerRole, url: string): string {
  const u = new URL(url);
  const port = u.port || (u.protocol === 'https:' ? '443' : '80');
  return `${role}-${u.hostname.replace(/[^A-Za-z0-9.]/g, '_')}-${port}`;
}
