import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { hostAllowed } from '../../common/allowed-hosts';
import { APP_CONFIG, httpClusterUriHost, isLoopbackHost, type DisaggClusterConfig, type AppConfig, type ServerRole } from '../../config';
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
    // Called inside the storage's set: a failure here must never become the caller's 500.
    const onSet = (key: string, value: string): void => {
      try {
        this.onSet(key, value);
      } catch (err) {
        this.logger.warn(`disagg_cluster key ${key.slice(0, 256)} ignored: ${(err as Error).message}`);
      }
    };
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
      this.warnAboutExposure(cluster);
    }
  }

  /** The configurations clusterStorageScopeProblem lets start, but which deserve a word. */
  private warnAboutExposure(cluster: DisaggClusterConfig): void {
    const uriHost = httpClusterUriHost(cluster.cluster_uri);
    if (cluster.api_key === undefined && cluster.allow_unauthenticated) {
      this.logger.warn('disagg_cluster.allow_unauthenticated: anyone who reaches the cluster storage can register a worker and be sent prompts');
    } else if (cluster.api_key !== undefined && /^http:/i.test(cluster.cluster_uri) && uriHost !== undefined && !isLoopbackHost(uriHost)) {
      this.logger.warn(`disagg_cluster.api_key travels in clear over ${cluster.cluster_uri}: TensorRT-LLM's storage client refuses a key over plain http to a non-loopback host (use https through a TLS proxy)`);
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
    if (parsed.ok && !hostAllowed(parsed.worker.host, this.config.admin.allowed_hosts)) {
      const why = this.config.admin.allowed_hosts ? 'is not in admin.allowed_hosts' : 'is link-local (a metadata address)';
      return this.keys.put(key, { ok: false, reason: `host ${parsed.worker.host} ${why}` });
    }
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
