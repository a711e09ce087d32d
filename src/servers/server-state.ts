import { Logger } from '@nestjs/common';
import type { ServerRole } from '../config';
import type { HttpSessionProvider } from '../http-session';
import { KvBlockTable } from '../kv-cache/kv-block-table';

export type ServerStatus = 'preparing' | 'ready' | 'draining' | 'unhealthy';
export type ServerSource = 'config' | 'etcd' | 'admin' | 'cluster';

export interface ServerSpec {
  url: string;
  role: ServerRole;
  source: ServerSource;
}

export interface HealthResult {
  ok: boolean;
  at: number;
  latencyMs: number;
  status?: number;
  error?: string;
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

const KV_EVENTS_HEADERS = { 'content-type': 'application/json' };

const logger = new Logger('ServerState');

/**
 * What the router knows of one worker: load, KV block table, server_info, health. It holds
 * the session provider (never a client) and asks it for the client at each use, so a state
 * built before the app initialised works once the session is open.
 */
export class ServerState {
  readonly id: string;
  readonly url: string;
  readonly origin: string;
  private readonly kvEventsPath: string;
  readonly role: ServerRole;
  readonly source: ServerSource;
  status: ServerStatus = 'preparing';
  activeRequests = 0;
  activeTokens = 0;
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

  constructor(
    spec: ServerSpec,
    private readonly session: HttpSessionProvider,
  ) {
    this.url = spec.url;
    const parsed = new URL(spec.url);
    this.origin = parsed.origin;
    this.kvEventsPath = `${parsed.pathname.replace(/\/+$/, '')}/kv_cache_events`;
    this.role = spec.role;
    this.source = spec.source;
    this.id = serverIdFor(spec.role, spec.url);
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

  /**
   * GET /server_info. A 404 (older TensorRT-LLM, other engines) means the defaults: v1 block
   * hashes, no disaggregated_params; it is logged once per server. Other failures throw.
   */
  async fetchServerInfo(timeoutMs: number): Promise<Record<string, unknown>> {
    const res = await this.session.axios.get<Record<string, unknown>>(`${this.url}/server_info`, {
      timeout: timeoutMs,
      responseType: 'json',
      validateStatus: (status) => (status >= 200 && status < 300) || status === 404,
    });
    if (res.status === 404) {
      if (!this.serverInfoMissing) {
        this.serverInfoMissing = true;
        logger.warn(`${this.role} server ${this.url} has no /server_info (404): using the defaults (${DEFAULT_KV_HASH_ALGO} hashes)`);
      }
      this.serverInfo = {};
      return this.serverInfo;
    }
    const info = typeof res.data === 'object' && res.data !== null ? res.data : {};
    this.serverInfo = info;
    return info;
  }

  /**
   * One health probe. Upstream failures become a negative result; a closed session is a
   * lifecycle error and propagates (never reported as "unhealthy").
   */
  async checkHealth(timeoutMs: number): Promise<HealthResult> {
    const axios = this.session.axios;
    const started = performance.now();
    let result: HealthResult;
    try {
      const res = await axios.get(`${this.url}/health`, {
        timeout: timeoutMs,
        validateStatus: () => true,
        responseType: 'text',
      });
      result = { ok: res.status === 200, status: res.status, at: Date.now(), latencyMs: performance.now() - started };
      if (!result.ok) result.error = `HTTP ${res.status}`;
    } catch (err) {
      result = { ok: false, at: Date.now(), latencyMs: performance.now() - started, error: healthErrorOf(err) };
    }
    this.lastHealth = result;
    this.consecutiveHealthFailures = result.ok ? 0 : this.consecutiveHealthFailures + 1;
    return result;
  }

  /**
   * POST /kv_cache_events: a destructive read of the events since the last call. A KV-aware
   * router polls after every finished request, so this goes straight on the session's pool
   * (axios' config merging and per-call timeout signal cost several times more); the answer
   * head and each body chunk get `timeoutMs`. Not a 2xx: fails as axios did.
   */
  async fetchKvEventsText(timeoutMs: number): Promise<string> {
    const res = await this.session.request({
      origin: this.origin,
      path: this.kvEventsPath,
      method: 'POST',
      headers: KV_EVENTS_HEADERS,
      body: '',
      headersTimeoutMs: timeoutMs,
      bodyTimeoutMs: timeoutMs,
    });
    const text = await res.body.text();
    if (res.statusCode < 200 || res.statusCode >= 300) throw new Error(`Request failed with status code ${res.statusCode}`);
    return text;
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

/**
 * What a failed health check says in admin state and logs: the kind of failure, without the
 * errno text (addresses, ports) that would turn the admin API into a port scanner.
 */
function healthErrorOf(err: unknown): string {
  const e = err as { code?: string; cause?: { code?: string } };
  const code = e?.code ?? e?.cause?.code;
  if (code === 'ECONNREFUSED') return 'connection refused';
  if (code === 'ECONNABORTED' || code === 'ETIMEDOUT' || code === 'UND_ERR_CONNECT_TIMEOUT' || code === 'UND_ERR_HEADERS_TIMEOUT') return 'timeout';
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') return 'host not found';
  if (code === 'EHOSTUNREACH' || code === 'ENETUNREACH') return 'host unreachable';
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET') return 'connection reset';
  return 'failed';
}
