import { Logger } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import { cancelWatcher, createEtcdClient } from '../etcd-client';
import type { ClusterStorageEvents } from './memory-cluster-storage';

const RETRY_MS = 1_000;
const RESYNC_MS = 10_000;

/**
 * The worker keys of a disagg_cluster kept in etcd (`etcd://` uri): a full read, then a watch
 * from the next revision, and a full read every few seconds (and after a lost watch) that
 * reconciles anything missed. Workers' leases expire their keys; etcd deletes them and the
 * watch reports it. Emits the same events as the storage this router serves itself.
 */
export class EtcdClusterWatch extends EventEmitter<ClusterStorageEvents> {
  private readonly logger = new Logger(EtcdClusterWatch.name);
  private readonly client: Etcd3;
  private readonly known = new Map<string, string>();
  private watcher?: Watcher;
  private retryTimer?: NodeJS.Timeout;
  private resyncTimer?: NodeJS.Timeout;
  private stopped = false;
  private reachable = false;

  constructor(
    readonly hosts: string,
    private readonly prefix: string,
  ) {
    super();
    this.client = createEtcdClient({ hosts });
  }

  get connected(): boolean {
    return this.reachable;
  }

  start(): void {
    void this.load();
    this.resyncTimer = setInterval(() => void this.resync().catch((err: unknown) => this.markDown(err)), RESYNC_MS);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.resyncTimer);
    await this.dropWatcher();
    this.client.close();
  }

  private async load(): Promise<void> {
    if (this.stopped) return;
    try {
      const revision = await this.resync();
      this.watch(revision);
    } catch (err) {
      this.markDown(err);
      this.retryTimer = setTimeout(() => void this.load(), RETRY_MS);
    }
  }

  /** Reads every key under the prefix and applies the difference; returns its revision. */
  private async resync(): Promise<string> {
    const res = await this.client.getAll().prefix(this.prefix).exec();
    if (this.stopped) return res.header.revision;
    const seen = new Map(res.kvs.map((kv) => [kv.key.toString(), kv.value.toString()] as const));
    for (const key of [...this.known.keys()]) if (!seen.has(key)) this.onDelete(key);
    for (const [key, value] of seen) if (this.known.get(key) !== value) this.onSet(key, value);
    if (!this.reachable) this.logger.log(`reading disagg_cluster workers from etcd at ${this.hosts} (${this.prefix}/*)`);
    this.reachable = true;
    return res.header.revision;
  }

  private watch(revision: string): void {
    if (this.stopped) return;
    const watcher = this.client.watch().prefix(this.prefix).startRevision((BigInt(revision) + 1n).toString()).watcher();
    this.watcher = watcher;
    watcher.on('put', (kv: IKeyValue) => this.onSet(kv.key.toString(), kv.value.toString()));
    watcher.on('delete', (kv: IKeyValue) => this.onDelete(kv.key.toString()));
    watcher.on('disconnected', (err: Error) => this.markDown(err));
    watcher.on('connected', () => void this.resync().catch((err: unknown) => this.markDown(err)));
    watcher.on('error', (err: Error) => {
      this.logger.warn(`etcd watch of ${this.prefix} failed (${err.message}); reading all keys again`);
      void this.dropWatcher().then(() => this.load());
    });
  }

  private async dropWatcher(): Promise<void> {
    const watcher = this.watcher;
    this.watcher = undefined;
    await cancelWatcher(watcher, RETRY_MS);
  }

  private onSet(key: string, value: string): void {
    if (this.stopped) return;
    this.known.set(key, value);
    this.emit('set', key, value);
  }

  private onDelete(key: string): void {
    if (this.stopped || !this.known.delete(key)) return;
    this.emit('delete', key);
  }

  private markDown(err: unknown): void {
    if (this.stopped || !this.reachable) return;
    this.reachable = false;
    this.logger.warn(`etcd at ${this.hosts} unreachable (${(err as Error)?.message ?? String(err)}): keeping the ${this.known.size} known workers until it returns`);
  }
}
