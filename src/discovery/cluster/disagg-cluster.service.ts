import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type DisaggClusterConfig, type AppConfig, type ServerRole } from '../../config';
import { ClusterStatus, ServerRegistry, type Readiness } from '../../servers';
import { ServerKeyReconciler } from '../server-key-reconciler';
import { etcdHostsOf, parseWorkerRecord, workerInfoJson, workerKeyPrefix, type ClusterWorker } from './cluster-keys';
import { EtcdClusterWatch } from './etcd-cluster-watch';
import { MemoryClusterStorage } from './memory-cluster-storage';

export function servesClusterStorage(config: AppConfig): boolean {
  return /^https?:\/\//i.test(config.disagg_cluster?.cluster_uri ?? '');
}

/**
 * Servers from TensorRT-LLM's `disagg_cluster`: workers register a key (and heartbeat it)
 * in the cluster storage, served by this router for an http(s) uri or kept in etcd; each key
 * adds its worker to its pool, and a key deleted or expired (missed heartbeats) removes it.
 * The router reports ready once `minimal_instances` of each pool are ready.
 */
@Injectable()
export class DisaggClusterDiscovery implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(DisaggClusterDiscovery.name);
  private readonly cluster?: DisaggClusterConfig;
  private readonly prefix: string;
  private readonly keys: ServerKeyReconciler<ClusterWorker>;
  private etcd?: EtcdClusterWatch;
  private readonly cleanup: Array<() => void> = [];

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly registry: ServerRegistry,
    private readonly status: ClusterStatus,
    private readonly storage: MemoryClusterStorage,
  ) {
    this.cluster = config.disagg_cluster;
    this.prefix = workerKeyPrefix(this.cluster?.cluster_name ?? '');
    this.keys = new ServerKeyReconciler<ClusterWorker>({
      registry,
      source: 'cluster',
      logger: this.logger,
      keyLabel: 'disagg_cluster key',
      describeJoin: (_key, w) => `${w.role} worker ${w.workerId} joined at ${w.url} (${this.counts()})`,
      describeLeave: (_key, w) => `${w.role} worker ${w.workerId} at ${w.url} left (${this.counts()})`,
    });
  }

  get enabled(): boolean {
    return this.cluster !== undefined;
  }

  onModuleInit(): void {
    if (!this.cluster) return;
    this.cleanup.push(
      this.status.addGate(() => this.readiness()),
      this.status.addInfoSection('current_workers', () => this.currentWorkers()),
      this.status.addInfoSection('minimal_instances', () => ({ ...this.cluster!.minimal_instances })),
    );
  }

  onApplicationBootstrap(): void {
    const cluster = this.cluster;
    if (!cluster) return;
    const source = servesClusterStorage(this.config) ? this.storage : (this.etcd = new EtcdClusterWatch(etcdHostsOf(cluster.cluster_uri), this.prefix));
    const onSet = (key: string, value: string): void => this.onSet(key, value);
    const onDelete = (key: string): void => this.onDelete(key);
    source.on('set', onSet);
    source.on('delete', onDelete);
    this.cleanup.push(() => source.off('set', onSet), () => source.off('delete', onDelete));
    if (this.etcd) {
      this.etcd.start();
    } else {
      this.storage.start();
      this.cleanup.push(() => this.storage.stop());
      this.logger.log(`serving the disagg_cluster storage (${cluster.cluster_uri}): workers register under ${this.prefix}/`);
    }
  }

  async onModuleDestroy(): Promise<void> {
    for (const off of this.cleanup.splice(0)) off();
    await this.etcd?.stop();
    this.etcd = undefined;
  }

  /** Below minimal_instances of ready workers in a pool: requests and /health are refused. */
  readiness(): Readiness {
    const min = this.cluster?.minimal_instances;
    if (!min) return { ready: true };
    const ctx = this.registry.ready('context').length;
    const gen = this.registry.ready('generation').length;
    if (ctx >= min.context_servers && gen >= min.generation_servers) return { ready: true };
    return {
      ready: false,
      reason: `waiting for disagg_cluster workers: ${ctx}/${min.context_servers} context, ${gen}/${min.generation_servers} generation ready`,
    };
  }

  private currentWorkers(): Record<string, unknown> {
    const of = (role: ServerRole): Record<string, unknown>[] => [...this.keys.entries.values()].filter((w) => w.role === role).map(workerInfoJson);
    return { context_servers: of('context'), generation_servers: of('generation') };
  }

  private onSet(key: string, value: string): void {
    if (!key.startsWith(`${this.prefix}/`)) return;
    const parsed = parseWorkerRecord(value);
    this.keys.put(key, parsed.ok ? { ok: true, entry: parsed.worker } : parsed);
  }

  private onDelete(key: string): void {
    this.keys.delete(key);
  }

  private counts(): string {
    const min = this.cluster!.minimal_instances;
    let ctx = 0;
    for (const w of this.keys.entries.values()) if (w.role === 'context') ctx++;
    return `context ${ctx}/${min.context_servers}, generation ${this.keys.entries.size - ctx}/${min.generation_servers}`;
  }
}
