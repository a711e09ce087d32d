import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config';
import { ActiveHealthChecker, StartupGate } from '../health';
import { MetricsService } from '../observability/metrics/metrics.service';
import { ClusterStatus, ServerRegistry, type ServerState } from '../servers';
import { EtcdLink, type EtcdLinkState } from './etcd-link';
import { EtcdPrefixMirror } from './etcd-prefix-mirror';
import { parseEtcdEntry, type EtcdServerEntry } from './etcd-server-entry';
import { ServerKeyReconciler } from './server-key-reconciler';

/** What /cluster_info (`metadata_server`) and the metrics show of the etcd connection. */
export interface EtcdDiscoveryState extends EtcdLinkState {
  server_type: 'etcd';
  endpoint: string;
  key_prefix: string;
  /** Servers taken from etcd keys (kept as they were while etcd is unreachable). */
  servers: number;
  ignored_keys: number;
}

/**
 * Servers from etcd (`metadata_server_config`), as trtllm-serve's workers register them: every
 * key under the prefix holds JSON with `url` and `server_role`/`server_type`. The prefix is
 * mirrored (EtcdPrefixMirror: a full read, a watch, a full re-read every `refresh_interval`), so
 * a new key is routed to as soon as the server is prepared and a deleted key removes its server.
 * When etcd is unreachable the last known servers stay (and keep being health-checked). Keys of
 * servers the health monitor declares dead are deleted, as TensorRT-LLM's router does.
 */
@Injectable()
export class EtcdDiscovery implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(EtcdDiscovery.name);
  private mirror?: EtcdPrefixMirror;
  private readonly keys: ServerKeyReconciler<EtcdServerEntry>;
  /** Keys of dead servers still to delete (etcd was unreachable when they died). */
  private readonly deadKeys = new Set<string>();
  private readonly link: EtcdLink;
  private stopped = false;
  private releaseStartupHold?: () => void;
  private readonly cleanup: Array<() => void> = [];

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly registry: ServerRegistry,
    private readonly status: ClusterStatus,
    private readonly monitor: ActiveHealthChecker,
    private readonly startup: StartupGate,
    @Optional() private readonly metrics?: MetricsService,
  ) {
    this.keys = new ServerKeyReconciler<EtcdServerEntry>({
      registry,
      source: 'etcd',
      logger: this.logger,
      keyLabel: 'etcd key',
      describeJoin: (key, e) => `etcd key ${key}: ${e.role} server ${e.url}`,
      describeLeave: (key, e) => `etcd key ${key} gone: ${e.role} server ${e.url} leaves`,
    });
    this.link = new EtcdLink(this.endpoint, this.logger, (up) => this.metrics?.setEtcdConnected(up), () => this.state().servers);
  }

  get enabled(): boolean {
    return this.config.metadata_server_config !== undefined;
  }

  /** Whether the router currently reaches etcd (false before the first read, and during outages). */
  get connected(): boolean {
    return this.link.connected;
  }

  get endpoint(): string {
    const m = this.config.metadata_server_config;
    return m ? `${m.hostname}:${m.port}` : '';
  }

  state(): EtcdDiscoveryState {
    return {
      server_type: 'etcd',
      endpoint: this.endpoint,
      key_prefix: this.prefix,
      servers: new Set([...this.keys.entries.values()].map((e) => `${e.role} ${e.url}`)).size,
      ignored_keys: this.keys.ignoredCount,
      ...this.link.state(),
    };
  }

  onModuleInit(): void {
    if (!this.enabled) return;
    this.releaseStartupHold = this.startup.hold('etcd');
    this.cleanup.push(
      this.status.addInfoSection('metadata_server', () => this.state()),
      this.monitor.onDead((server) => this.onDead(server)),
    );
  }

  onApplicationBootstrap(): void {
    if (!this.enabled) return;
    // health_check_timeout is accepted for trtllm-serve configs; worker checks use health.timeout_s.
    this.logger.log(`discovering servers from etcd at ${this.endpoint} (keys ${this.prefix}*)`);
    this.metrics?.setEtcdConnected(false);
    this.mirror = new EtcdPrefixMirror(
      { hosts: this.endpoint, prefix: this.prefix, resyncMs: this.config.metadata_server_config!.refresh_interval * 1000 },
      {
        put: (key, value) => this.applyPut(key, value),
        delete: (key) => this.applyDelete(key),
        knownKeys: () => this.keys.knownKeys(),
        synced: () => this.onSynced(),
        failed: (err) => this.markDisconnected(err),
        watchCancelled: (err) => this.logger.warn(`etcd watch failed (${err.message}); reading all keys again`),
      },
    );
    this.mirror.start();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    for (const off of this.cleanup.splice(0)) off();
    await this.mirror?.stop();
    this.mirror = undefined;
  }

  private get prefix(): string {
    return this.config.metadata_server_config?.key_prefix ?? 'trtllm/';
  }

  /** After every full read: startup may go on, and dead servers' keys are deleted now that etcd answers. */
  private onSynced(): void {
    this.link.synced();
    this.releaseStartupHold?.();
    this.releaseStartupHold = undefined;
    void this.deleteDeadKeys();
  }

  private applyPut(key: string, value: string): void {
    if (this.stopped) return;
    const previous = this.keys.entries.get(key);
    this.keys.put(key, parseEtcdEntry(key, value));
    // A key that names another server now: whatever made the old one dead no longer applies.
    if (this.keys.entries.get(key) !== previous) this.deadKeys.delete(key);
  }

  private applyDelete(key: string): void {
    this.deadKeys.delete(key);
    this.keys.delete(key);
  }

  private onDead(server: ServerState): void {
    if (server.source !== 'etcd' || !this.config.metadata_server_config?.remove_dead_keys) return;
    for (const [key, entry] of this.keys.entries) {
      if (entry.role === server.role && entry.url === server.url) this.deadKeys.add(key);
    }
    void this.deleteDeadKeys();
  }

  private async deleteDeadKeys(): Promise<void> {
    for (const key of [...this.deadKeys]) {
      const entry = this.keys.entries.get(key);
      const server = entry && this.registry.findByUrl(entry.role, entry.url);
      // Recovered (or gone) before etcd could be told: keep its key.
      if (!entry || !server || server.lastHealth?.ok) {
        this.deadKeys.delete(key);
        continue;
      }
      try {
        await this.mirror?.client.delete().key(key).exec();
        this.deadKeys.delete(key);
        this.logger.warn(`removed dead ${entry.role} server ${entry.url}'s key ${key} from etcd`);
      } catch (err) {
        this.markDisconnected(err);
        return;
      }
    }
  }

  private markDisconnected(err: unknown): void {
    if (!this.stopped) this.link.failed(err);
  }
}
