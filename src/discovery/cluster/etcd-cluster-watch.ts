import { Logger } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { EtcdPrefixMirror } from '../etcd-prefix-mirror';
import type { ClusterStorageEvents } from './memory-cluster-storage';

const RESYNC_MS = 10_000;

/**
 * The worker keys of a disagg_cluster kept in etcd (`etcd://` uri), mirrored from etcd (see
 * EtcdPrefixMirror). Workers' leases expire their keys; etcd deletes them and the watch reports
 * it. Emits the same events as the storage this router serves itself.
 */
export class EtcdClusterWatch extends EventEmitter<ClusterStorageEvents> {
  private readonly logger = new Logger(EtcdClusterWatch.name);
  private readonly known = new Map<string, string>();
  private readonly mirror: EtcdPrefixMirror;
  private reachable = false;

  constructor(
    readonly hosts: string,
    private readonly prefix: string,
  ) {
    super();
    this.mirror = new EtcdPrefixMirror(
      { hosts, prefix, resyncMs: RESYNC_MS },
      {
        put: (key, value, from) => this.onSet(key, value, from),
        delete: (key) => this.onDelete(key),
        knownKeys: () => this.known.keys(),
        synced: () => this.markUp(),
        failed: (err) => this.markDown(err),
        watchCancelled: (err) => this.logger.warn(`etcd watch of ${this.prefix} failed (${err.message}); reading all keys again`),
      },
    );
  }

  get connected(): boolean {
    return this.reachable;
  }

  start(): void {
    this.mirror.start();
  }

  stop(): Promise<void> {
    return this.mirror.stop();
  }

  /** A watched put is passed on even when unchanged (a heartbeat); a full read only reports changes. */
  private onSet(key: string, value: string, from: 'read' | 'watch'): void {
    if (from === 'read' && this.known.get(key) === value) return;
    this.known.set(key, value);
    this.emit('set', key, value);
  }

  private onDelete(key: string): void {
    if (this.known.delete(key)) this.emit('delete', key);
  }

  private markUp(): void {
    if (this.reachable) return;
    this.logger.log(`reading disagg_cluster workers from etcd at ${this.hosts} (${this.prefix}/*)`);
    this.reachable = true;
  }

  private markDown(err: unknown): void {
    if (!this.reachable) return;
    this.reachable = false;
    this.logger.warn(`etcd at ${this.hosts} unreachable (${(err as Error)?.message ?? String(err)}): keeping the ${this.known.size} known workers until it returns`);
  }
}
