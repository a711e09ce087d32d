import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit, Optional } from '@nestjs/common';
import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import { APP_CONFIG, type AppConfig } from '../config';
import { ActiveHealthChecker, StartupGate } from '../health';
import { MetricsService } from '../observability/metrics/metrics.service';
import { ClusterStatus, ServerRegistry, type ServerState } from '../servers';
import { cancelWatcher, createEtcdClient } from './etcd-client';
import { EtcdLink, type EtcdLinkState } from './etcd-link';
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

const FIRST_LOAD_RETRY_MS = 1_000;

/**
 * Servers from etcd (`metadata_server_config`), as trtllm-serve's workers register them: every
 * key under the prefix holds JSON with `url` and `server_role`/`server_type`. A first full read,
 * then a watch from the next revision, so a new key is routed to as soon as the server is
 * prepared and a deleted key removes its server; a full re-read every `refresh_interval`
 * reconciles anything missed. When etcd is unreachable the last known servers stay (and keep
 * being health-checked); the watch reconnects by itself. Keys of servers the health monitor
 * declares dead are deleted, as TensorRT-LLM's router does.
 */
@Injectable()
export class EtcdDiscovery implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(EtcdDiscovery.name);
  private client?: Etcd3;
  private watcher?: Watcher;
  private readonly keys: ServerKeyReconciler<EtcdServerEntry>;
  /** Keys of dead servers still to delete (etcd was unreachable when they died). */
  private readonly deadKeys = new Set<string>();
  private readonly link: EtcdLink;
  private stopped = false;
  private retryTimer?: NodeJS.Timeout;
  private refreshTimer?: NodeJS.Timeout;
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
    this.client = createEtcdClient({ hosts: this.endpoint });
    this.logger.log(`discovering servers from etcd at ${this.endpoint} (keys ${this.prefix}*)`);
    this.metrics?.setEtcdConnected(false);
    void this.firstLoad();
    this.refreshTimer = setInterval(() => void this.refresh(), this.config.metadata_server_config!.refresh_interval * 1000);
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.refreshTimer);
    for (const off of this.cleanup.splice(0)) off();
    await cancelWatcher(this.watcher);
    this.watcher = undefined;
    this.client?.close();
    this.client = undefined;
  }

  private get prefix(): string {
    return this.config.metadata_server_config?.key_prefix ?? 'trtllm/';
  }

  /** Reads all keys, then watches from the next revision; retried until etcd answers. */
  private async firstLoad(): Promise<void> {
    if (this.stopped) return;
    try {
      const revision = await this.resync();
      this.startWatch(revision);
      this.releaseStartupHold?.();
    } catch (err) {
      this.markDisconnected(err);
      this.retryTimer = setTimeout(() => void this.firstLoad(), FIRST_LOAD_RETRY_MS);
    }
  }

  /** A full read of the prefix, applied as a diff; returns the revision it reflects. */
  private async resync(): Promise<string> {
    const client = this.client;
    if (!client) throw new Error('etcd client closed');
    const res = await client.getAll().prefix(this.prefix).exec();
    if (this.stopped) return res.header.revision;
    const seen = new Map<string, string>();
    for (const kv of res.kvs) seen.set(kv.key.toString(), kv.value.toString());
    for (const key of this.keys.knownKeys()) if (!seen.has(key)) this.applyDelete(key);
    for (const [key, value] of seen) this.applyPut(key, value);
    this.link.synced();
    return res.header.revision;
  }

  private startWatch(revision: string): void {
    const client = this.client;
    if (!client || this.stopped) return;
    const watcher = client
      .watch()
      .prefix(this.prefix)
      .startRevision((BigInt(revision) + 1n).toString())
      .watcher();
    this.watcher = watcher;
    watcher.on('put', (kv: IKeyValue) => this.applyPut(kv.key.toString(), kv.value.toString()));
    watcher.on('delete', (kv: IKeyValue) => this.applyDelete(kv.key.toString()));
    watcher.on('disconnected', (err: Error) => this.markDisconnected(err));
    watcher.on('connected', () => {
      if (this.link.connected) return;
      // Back after an outage: the watch replays what it missed; a full read double-checks.
      void this.refresh();
    });
    // A watch etcd cancels (e.g. its revision was compacted away): read everything again.
    watcher.on('error', (err: Error) => {
      this.logger.warn(`etcd watch failed (${err.message}); reading all keys again`);
      if (this.watcher === watcher) this.watcher = undefined;
      void cancelWatcher(watcher);
      void this.firstLoad();
    });
  }

  private async refresh(): Promise<void> {
    if (this.stopped || !this.client) return;
    try {
      await this.resync();
    } catch (err) {
      this.markDisconnected(err);
      return;
    }
    await this.deleteDeadKeys();
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
        await this.client?.delete().key(key).exec();
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
