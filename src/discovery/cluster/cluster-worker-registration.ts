import type { Etcd3, Lease } from 'etcd3';
// Not the config barrel: the register helper must load without Nest.
import type { ServerRole } from '../../config/server-role';
import { httpClusterUriHost, isLoopbackHost } from '../../config/cluster-storage-scope';
import { createEtcdClient } from '../etcd-client';
import { putOnLease, quietLease, RetryLoop, revokeOrDelete } from '../lease-registration';
import { etcdHostsOf, newWorkerId, workerKey, workerRecord } from './cluster-keys';

export interface ClusterWorkerOptions {
  /** The disagg_cluster's `cluster_uri`: `http(s)://router:port` or `etcd://host:port`. */
  clusterUri: string;
  clusterName?: string;
  /** The worker's own address as the router must reach it. */
  host: string;
  port: number;
  role: ServerRole;
  heartbeatIntervalS?: number;
  inactiveTimeoutS?: number;
  /** The router's `disagg_cluster.api_key`, sent as a bearer token (http(s) storage only). */
  apiKey?: string;
  log?: (message: string) => void;
}

const RETRY_MS = 1_000;
const HTTP_TIMEOUT_MS = 5_000;

/**
 * A worker's registration in a disagg_cluster, as TensorRT-LLM's workers make it: its record
 * under its own key with a TTL of `inactive_timeout_sec`, refreshed every
 * `heartbeat_interval_sec` (through `/expire`, or the lease's keep-alive in etcd); a failed
 * heartbeat registers again. `close()` deletes the key; `abandon()` only stops the heartbeats,
 * so the key expires as a crashed worker's would.
 */
export class ClusterWorkerRegistration {
  readonly workerId: string;
  readonly key: string;
  private readonly heartbeatS: number;
  private readonly ttlS: number;
  private readonly log: (message: string) => void;
  private readonly etcd?: Etcd3;
  private lease?: Lease;
  private timer?: NodeJS.Timeout;
  private stopped = false;
  private readonly retry = new RetryLoop(RETRY_MS, () => this.stopped);

  private constructor(private readonly options: ClusterWorkerOptions) {
    this.workerId = newWorkerId(options.role, options.host, options.port);
    this.key = workerKey(options.clusterName ?? '', this.workerId);
    this.heartbeatS = options.heartbeatIntervalS ?? 5;
    this.ttlS = options.inactiveTimeoutS ?? 10;
    this.log = options.log ?? (() => undefined);
    if (/^etcd:\/\//i.test(options.clusterUri)) this.etcd = createEtcdClient({ hosts: etcdHostsOf(options.clusterUri) });
    else if (options.apiKey !== undefined) refuseKeyInClear(options.clusterUri);
  }

  /** Registers (retrying until the storage answers) and starts the heartbeats. */
  static async start(options: ClusterWorkerOptions): Promise<ClusterWorkerRegistration> {
    const registration = new ClusterWorkerRegistration(options);
    await registration.registerUntilDone();
    registration.scheduleHeartbeat();
    return registration;
  }

  /** Stops heartbeating and deletes the key (the worker leaves at once). */
  async close(): Promise<void> {
    if (this.stopped) return;
    this.stopHeartbeats();
    if (this.etcd) {
      await revokeOrDelete(this.etcd, this.lease, this.key);
      this.etcd.close();
    } else {
      await this.http('DELETE', `delete?key=${encodeURIComponent(this.key)}`).catch(() => undefined);
    }
  }

  /** Stops heartbeating and leaves the key to expire after inactive_timeout_sec. */
  abandon(): void {
    if (this.stopped) return;
    this.stopHeartbeats();
    this.lease?.release();
    this.etcd?.close();
  }

  private stopHeartbeats(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.retry.cancel();
    if (this.lease) quietLease(this.lease);
  }

  private async registerUntilDone(): Promise<void> {
    await this.retry.until(
      () => this.register(),
      (err) => this.log(err ? `cannot register ${this.workerId} yet (${err.message}); retrying` : `registration of ${this.workerId} refused; retrying`),
    );
  }

  private async register(): Promise<boolean> {
    const { host, port, role } = this.options;
    const value = workerRecord(this.workerId, host, port, role);
    if (this.etcd) {
      this.lease = await putOnLease(this.etcd, this.key, value, {
        ttlS: Math.max(1, Math.ceil(this.ttlS)),
        onLost: (lease) => {
          if (this.stopped || this.lease !== lease) return;
          this.log(`lease of ${this.key} lost; registering again`);
          this.lease = undefined;
          void this.registerUntilDone();
        },
      });
    } else {
      const res = await this.http('POST', 'set', { key: this.key, value, ttl: Math.ceil(this.ttlS), overwrite_if_exists: true });
      if (res.status !== 200) return false;
    }
    this.log(`registered ${role} worker ${host}:${port} as ${this.key}`);
    return true;
  }

  /** HTTP heartbeats; etcd's lease keeps itself alive. */
  private scheduleHeartbeat(): void {
    if (this.stopped || this.etcd || !(this.heartbeatS > 0 && this.heartbeatS < this.ttlS)) return;
    this.timer = setTimeout(() => void this.heartbeat(), this.heartbeatS * 1000);
  }

  private async heartbeat(): Promise<void> {
    if (this.stopped) return;
    let ok = false;
    try {
      ok = (await this.http('GET', `expire?key=${encodeURIComponent(this.key)}&ttl=${Math.ceil(this.ttlS)}`)).status === 200;
    } catch {
      ok = false;
    }
    if (!ok && !this.stopped) {
      this.log(`heartbeat of ${this.workerId} failed; registering again`);
      await this.registerUntilDone();
    }
    this.scheduleHeartbeat();
  }

  private async http(method: string, path: string, body?: unknown): Promise<Response> {
    const base = this.options.clusterUri.replace(/\/+$/, '');
    const headers: Record<string, string> = {};
    if (body !== undefined) headers['content-type'] = 'application/json';
    if (this.options.apiKey !== undefined) headers.authorization = `Bearer ${this.options.apiKey}`;
    const res = await fetch(`${base}/${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      signal: AbortSignal.timeout(HTTP_TIMEOUT_MS),
    });
    await res.arrayBuffer();
    return res;
  }
}

/** As TensorRT-LLM's storage client: a bearer token never goes over plain http off loopback. */
function refuseKeyInClear(clusterUri: string): void {
  const host = httpClusterUriHost(clusterUri);
  if (/^http:/i.test(clusterUri) && host !== undefined && !isLoopbackHost(host)) {
    throw new Error(`an API key must not be sent over plain http to the non-loopback host ${host}: use an https cluster URI`);
  }
}
