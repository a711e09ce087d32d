import type { Etcd3, Lease, Watcher } from 'etcd3';
// Not the config barrel: the register helper must load without Nest.
import { normalizeServerUrl, type ServerRole } from '../config/server-role';
import { cancelWatcher, createEtcdClient } from './etcd-client';
import { etcdEntryValue } from './etcd-server-entry';
import { putOnLease, quietLease, RetryLoop, revokeOrDelete } from './lease-registration';

export interface WorkerRegistrationOptions {
  /** etcd `host:port`. */
  etcd: string;
  /** The worker's address, `http://host:port`. */
  url: string;
  role: ServerRole;
  /** Default `trtllm/<role>-<host>-<port>`. */
  key?: string;
  /** Lease TTL in seconds: the key disappears this long after the helper dies without cleanup. */
  ttlS?: number;
  log?: (message: string) => void;
}

const RETRY_MS = 1_000;

/**
 * A worker's key in etcd, as trtllm-serve writes it at startup, bound to a lease kept alive
 * for as long as this registration lives. A lost lease (etcd down longer than the TTL) or a
 * key deleted by someone else (a router that found the worker dead) is registered again, once
 * etcd answers and, for a deleted key, once the worker's /health answers 200.
 */
export class WorkerRegistration {
  readonly key: string;
  readonly url: string;
  private readonly client: Etcd3;
  private lease?: Lease;
  private watcher?: Watcher;
  private closed = false;
  private retryTimer?: NodeJS.Timeout;
  private readonly retry = new RetryLoop(RETRY_MS, () => this.closed);
  private readonly log: (message: string) => void;

  private constructor(private readonly options: WorkerRegistrationOptions) {
    this.url = normalizeServerUrl(options.url);
    const u = new URL(this.url);
    this.key = options.key ?? `trtllm/${options.role}-${u.hostname}-${u.port || '80'}`;
    this.client = createEtcdClient({ hosts: options.etcd });
    this.log = options.log ?? (() => undefined);
  }

  /** Registers (retrying until etcd answers) and returns once the key is in etcd. */
  static async start(options: WorkerRegistrationOptions): Promise<WorkerRegistration> {
    const registration = new WorkerRegistration(options);
    await registration.registerUntilDone();
    registration.watchOwnKey();
    return registration;
  }

  /** Revokes the lease, which deletes the key, and closes the client. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.retryTimer);
    this.retry.cancel();
    await cancelWatcher(this.watcher);
    const lease = this.lease;
    this.lease = undefined;
    await revokeOrDelete(this.client, lease, this.key);
    this.client.close();
  }

  private async registerOnce(): Promise<void> {
    this.lease = await putOnLease(this.client, this.key, etcdEntryValue(this.url, this.options.role), {
      ttlS: this.options.ttlS ?? 10,
      onLost: (lease, err) => {
        if (this.closed || this.lease !== lease) return;
        this.log(`lease of ${this.key} lost (${err.message}); registering again`);
        this.lease = undefined;
        this.scheduleRegister(false);
      },
    });
    this.log(`registered ${this.options.role} worker ${this.url} as ${this.key}`);
  }

  private async registerUntilDone(): Promise<void> {
    await this.retry.until(
      async () => {
        await this.registerOnce();
        return true;
      },
      (err) => this.log(`cannot register ${this.key} yet (${err?.message}); retrying`),
    );
  }

  private scheduleRegister(waitForHealth: boolean): void {
    if (this.closed) return;
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => {
      void (async () => {
        if (this.closed || this.lease) return;
        if (waitForHealth && !(await this.workerHealthy())) return this.scheduleRegister(true);
        try {
          await this.registerOnce();
        } catch {
          this.scheduleRegister(waitForHealth);
        }
      })();
    }, RETRY_MS);
  }

  private watchOwnKey(): void {
    if (this.closed) return;
    const watcher = this.client.watch().key(this.key).watcher();
    this.watcher = watcher;
    watcher.on('error', () => undefined);
    watcher.on('delete', () => {
      if (this.closed || !this.lease) return;
      this.log(`${this.key} was deleted by someone else; registering again once ${this.url}/health answers`);
      const lease = this.lease;
      this.lease = undefined;
      quietLease(lease);
      void lease.revoke().catch(() => undefined);
      this.scheduleRegister(true);
    });
  }

  private async workerHealthy(): Promise<boolean> {
    try {
      const res = await fetch(`${this.url}/health`, { signal: AbortSignal.timeout(3_000) });
      await res.body?.cancel();
      return res.status === 200;
    } catch {
      return false;
    }
  }
}
