import { Injectable, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import { KvEventPoller } from '../kv-cache';
import { ServerRegistry, type ServerState } from '../servers';
import { BusRetry } from './bus-retry';
import { KvEventStream } from './kv-event-stream.service';
import { KvSnapshots } from './kv-snapshots.service';
import { PollLeases } from './poll-leases.service';
import { ReplicaBus } from './replica-bus.service';

const KV_EVENTS_TIMEOUT_MS = 5_000;

/**
 * Keeps this replica's KV view in step with the cluster. On every bus (re)connection, in
 * order: hand the others what it polled while the bus was away (a snapshot), adopt the
 * snapshots newer than its tables, then read the stream from where it stopped (or from the
 * oldest snapshot on first start). A resynchronisation that fails while the bus stays up
 * (it stalled right after the connection) is tried again until it succeeds: no later 'up'
 * would come to redo it. Meanwhile it polls the workers it owns on `poll_interval_ms` and
 * writes their snapshots on `snapshot_interval_s`.
 */
@Injectable()
export class KvSync implements OnModuleInit, OnModuleDestroy {
  private pollTimer?: NodeJS.Timeout;
  private snapshotTimer?: NodeJS.Timeout;
  private started = false;
  private syncing?: Promise<void>;
  /** Snapshot reads of workers registered while the bus is up, waiting out a retry pause. */
  private readonly addedRetries = new Set<BusRetry>();
  private unsubscribeServers?: () => void;
  /** Bumped by every 'up', 'down' and shutdown: an older resynchronisation stops retrying. */
  private syncRun = 0;
  private readonly syncRetry: BusRetry;
  /** Resynchronisations done after an outage. */
  resyncs = 0;

  constructor(
    private readonly bus: ReplicaBus,
    private readonly registry: ServerRegistry,
    private readonly leases: PollLeases,
    private readonly stream: KvEventStream,
    private readonly snapshots: KvSnapshots,
    private readonly poller: KvEventPoller,
  ) {
    this.syncRetry = new BusRetry(bus, 'resynchronisation');
  }

  onModuleInit(): void {
    this.bus.on('up', () => {
      this.syncing = this.resyncUntilDone();
    });
    this.bus.on('down', () => {
      this.endResync();
      void this.stream.stop();
    });
    // Registered after the resynchronisation read the snapshots (or during it): read its own.
    this.unsubscribeServers = this.registry.onEvent((event) => {
      if (event.type === 'added' && this.bus.connected) void this.adoptAdded(event.server.url);
    });
    this.pollTimer = setInterval(() => this.pollOwned(), this.bus.cluster.poll_interval_ms);
    this.pollTimer.unref();
    this.snapshotTimer = setInterval(() => void this.writeSnapshots(false), this.bus.cluster.snapshot_interval_s * 1000);
    this.snapshotTimer.unref();
    // A new owner writes a snapshot soon, so a replica starting next finds a recent one.
    this.leases.on('acquired', (url) => {
      const server = this.registry.list().find((s) => s.url === url);
      if (server) setTimeout(() => void this.writeIfOwned(server, false), 1_000).unref();
    });
    // A lease is handed back only when nothing of its worker is under way here.
    this.leases.busyWith = (url) => this.poller.isPolling(url) || this.stream.publishing(url) || this.snapshots.writing(url);
  }

  /** Resynchronises; after a failure, again once its pause is over, while the bus stays up and no newer 'up' took over. */
  private async resyncUntilDone(): Promise<void> {
    this.endResync();
    const run = this.syncRun;
    await this.syncRetry.untilDone(() => this.resync(), () => run === this.syncRun && this.bus.connected);
  }

  private endResync(): void {
    this.syncRun++;
    this.syncRetry.cancel();
  }

  /** Counted as done (first start, or a resync after an outage) only once every step succeeded. */
  private async resync(): Promise<void> {
    const first = !this.started;
    if (!first) await this.handOverOutagePolls();
    const lowest = await this.snapshots.loadAll();
    if (first) await this.stream.start(lowest ?? 0);
    else await this.stream.start(this.stream.lastSeq);
    void this.snapshots.watch();
    this.started = true;
    if (!first) this.resyncs++;
  }

  /** The stored snapshot of a worker registered while the bus is up; read again after a pause while the bus stays up and the worker registered. */
  private async adoptAdded(url: string): Promise<void> {
    const retry = new BusRetry(this.bus, `the snapshot read of the added worker ${url}`);
    this.addedRetries.add(retry);
    const registered = (): boolean => this.registry.list().some((s) => s.url === url);
    await retry.untilDone(() => this.snapshots.adoptStored(url), () => this.bus.connected && registered());
    this.addedRetries.delete(retry);
  }

  /**
   * Snapshots of the workers this replica polled during the outage, where it knows more than
   * the bucket. A write that fails keeps its worker listed, and the resynchronisation fails:
   * its retry hands it over again.
   */
  private async handOverOutagePolls(): Promise<void> {
    const urls = [...this.stream.unpublished];
    this.stream.unpublished.clear();
    const unwritten: string[] = [];
    for (const url of urls) {
      const server = this.registry.list().find((s) => s.url === url);
      if (!server || !(await this.snapshots.aheadOfStored(url))) continue;
      if (!(await this.snapshots.write(server, this.stream.lastSeq, true))) unwritten.push(url);
    }
    for (const url of unwritten) this.stream.unpublished.add(url);
    if (unwritten.length) throw new Error(`the hand-over snapshot of ${unwritten.join(', ')} was not written`);
  }

  private pollOwned(): void {
    for (const server of this.registry.list()) {
      if (server.status !== 'ready' || this.poller.isPolling(server.url) || !this.leases.owns(server.url)) continue;
      void this.poller.poll(server.url, KV_EVENTS_TIMEOUT_MS);
    }
  }

  private async writeSnapshots(force: boolean): Promise<void> {
    if (!this.bus.connected) return;
    for (const server of this.registry.list()) await this.writeIfOwned(server, force);
  }

  /** A snapshot only from the worker's poller, checked right before the write: a lease being handed back writes none. */
  private async writeIfOwned(server: ServerState, force: boolean): Promise<void> {
    if (this.leases.owns(server.url)) await this.snapshots.write(server, this.stream.lastSeq, force);
  }

  /** Tests and the admin view: resolves once the latest resynchronisation finished. */
  async settled(): Promise<void> {
    await this.syncing;
  }

  onModuleDestroy(): void {
    this.endResync();
    this.unsubscribeServers?.();
    for (const retry of this.addedRetries) retry.cancel();
    if (this.pollTimer) clearInterval(this.pollTimer);
    if (this.snapshotTimer) clearInterval(this.snapshotTimer);
  }
}
