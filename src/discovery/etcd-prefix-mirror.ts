import type { Etcd3, IKeyValue, Watcher } from 'etcd3';
import { cancelWatcher, createEtcdClient } from './etcd-client';

/** What a mirror tells its owner; called only while the mirror runs. */
export interface PrefixMirrorListener {
  /** `from` tells a full read's report of a key from a put the watch saw. */
  put(key: string, value: string, from: 'read' | 'watch'): void;
  delete(key: string): void;
  /** The keys the owner holds now, so a full read can report the ones that went away. */
  knownKeys(): Iterable<string>;
  /** A full read succeeded (the first, a periodic one, or one after an outage). */
  synced(): void;
  failed(err: unknown): void;
  /** etcd cancelled the watch; the mirror reads everything again and watches anew. */
  watchCancelled(err: Error): void;
}

export interface PrefixMirrorOptions {
  hosts: string;
  prefix: string;
  /** A full read this often reconciles whatever a watch missed. */
  resyncMs: number;
  /** Wait between attempts of the first read (and after a lost watch). */
  retryMs?: number;
}

/**
 * The keys under an etcd prefix, kept in step: a full read, then a watch from the next
 * revision; a full read every `resyncMs`, when the watch reconnects after an outage, and after
 * etcd cancels the watch (e.g. its revision was compacted away). Until etcd answers, the owner
 * keeps what it knows. Shared by `metadata_server_config` discovery and the etcd-backed
 * disagg_cluster, which differ only in what a key means.
 */
export class EtcdPrefixMirror {
  readonly client: Etcd3;
  private readonly retryMs: number;
  private watcher?: Watcher;
  private retryTimer?: NodeJS.Timeout;
  private resyncTimer?: NodeJS.Timeout;
  private stopped = false;

  constructor(
    private readonly options: PrefixMirrorOptions,
    private readonly listener: PrefixMirrorListener,
  ) {
    this.retryMs = options.retryMs ?? 1_000;
    this.client = createEtcdClient({ hosts: options.hosts });
  }

  start(): void {
    void this.load();
    this.resyncTimer = setInterval(() => void this.resyncOrFail(), this.options.resyncMs);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.retryTimer);
    clearInterval(this.resyncTimer);
    await this.dropWatcher();
    this.client.close();
  }

  /** A full read now; false (and the owner told) when etcd does not answer. */
  async resyncOrFail(): Promise<boolean> {
    if (this.stopped) return false;
    try {
      await this.resync();
      return true;
    } catch (err) {
      if (!this.stopped) this.listener.failed(err);
      return false;
    }
  }

  private async load(): Promise<void> {
    if (this.stopped) return;
    try {
      const revision = await this.resync();
      this.watch(revision);
    } catch (err) {
      if (this.stopped) return;
      this.listener.failed(err);
      this.retryTimer = setTimeout(() => void this.load(), this.retryMs);
    }
  }

  /** Reads every key under the prefix and applies the difference; returns its revision. */
  private async resync(): Promise<string> {
    const res = await this.client.getAll().prefix(this.options.prefix).exec();
    if (this.stopped) return res.header.revision;
    const seen = new Map(res.kvs.map((kv) => [kv.key.toString(), kv.value.toString()] as const));
    for (const key of [...this.listener.knownKeys()]) if (!seen.has(key)) this.listener.delete(key);
    for (const [key, value] of seen) this.listener.put(key, value, 'read');
    this.listener.synced();
    return res.header.revision;
  }

  private watch(revision: string): void {
    if (this.stopped) return;
    const watcher = this.client
      .watch()
      .prefix(this.options.prefix)
      .startRevision((BigInt(revision) + 1n).toString())
      .watcher();
    this.watcher = watcher;
    watcher.on('put', (kv: IKeyValue) => !this.stopped && this.listener.put(kv.key.toString(), kv.value.toString(), 'watch'));
    watcher.on('delete', (kv: IKeyValue) => !this.stopped && this.listener.delete(kv.key.toString()));
    watcher.on('disconnected', (err: Error) => !this.stopped && this.listener.failed(err));
    // Back after an outage: the watch replays what it missed; a full read double-checks.
    watcher.on('connected', () => void this.resyncOrFail());
    watcher.on('error', (err: Error) => {
      if (this.stopped) return;
      this.listener.watchCancelled(err);
      void this.dropWatcher().then(() => this.load());
    });
  }

  private async dropWatcher(): Promise<void> {
    const watcher = this.watcher;
    this.watcher = undefined;
    await cancelWatcher(watcher, this.retryMs);
  }
}
