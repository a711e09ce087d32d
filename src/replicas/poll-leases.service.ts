import { Injectable, Logger, type BeforeApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { normalizeServerUrl } from '../config';
import type { KvPollOwnership } from '../kv-cache';
import { ServerRegistry } from '../servers';
import { ReplicaBus } from './replica-bus.service';
import { busKeyOf, rendezvousOwner } from './rendezvous';
import { SharedLoad } from './shared-load.service';

interface Lease {
  revision: number;
  /** Local epoch ms until which the lease is surely still ours (the bucket TTL from the last write sent). */
  until: number;
}

interface LeaseValue {
  replica: string;
  url: string;
}

interface LeaseEvents {
  acquired: [url: string];
  lost: [url: string];
}

/**
 * Who polls which worker's /kv_cache_events: a lease per worker in the bus's KV bucket, whose
 * TTL is `cluster.lease_ttl_s`. The holder renews it every third of that; a replica that dies
 * stops renewing and the key expires, then another replica creates it (the create is atomic,
 * so exactly one wins). A replica prefers the workers rendezvous hashing gives it, so the
 * polling spreads over the replicas; others wait one round before taking a free worker.
 *
 * Without the bus the leases cannot be renewed: each replica then polls its rendezvous share
 * among the replicas it last saw alive, so every worker keeps exactly one poller as long as
 * the replicas agree on who is alive.
 */
@Injectable()
export class PollLeases extends EventEmitter<LeaseEvents> implements KvPollOwnership, OnModuleInit, BeforeApplicationShutdown {
  private readonly logger = new Logger('PollLeases');
  private readonly held = new Map<string, Lease>();
  /** Other replicas' leases as last read: url -> replica. */
  private readonly others = new Map<string, string>();
  private readonly freeRounds = new Map<string, number>();
  private timer?: NodeJS.Timeout;
  private ticking = false;
  private stopped = false;
  /** Epoch ms of the last lease this replica acquired (ownership moves, in the admin view). */
  lastAcquiredAt?: number;

  constructor(
    private readonly bus: ReplicaBus,
    private readonly registry: ServerRegistry,
    private readonly load: SharedLoad,
  ) {
    super();
  }

  private get ttlMs(): number {
    return this.bus.cluster.lease_ttl_s * 1000;
  }

  onModuleInit(): void {
    this.bus.on('up', () => void this.tick());
    this.timer = setInterval(() => void this.tick(), this.ttlMs / 3);
    this.timer.unref();
  }

  owns(serverUrl: string): boolean {
    const url = normalizeServerUrl(serverUrl);
    if (!this.bus.connected) return this.shareOwner(url) === this.bus.replicaId;
    const lease = this.held.get(url);
    return lease !== undefined && lease.until > Date.now();
  }

  /** The replica that polls the worker: lease holder, or (bus down) rendezvous share. */
  ownerOf(serverUrl: string): string | undefined {
    const url = normalizeServerUrl(serverUrl);
    if (!this.bus.connected) return this.shareOwner(url);
    if (this.owns(url)) return this.bus.replicaId;
    return this.others.get(url);
  }

  ownedUrls(): string[] {
    return this.workerUrls().filter((url) => this.owns(url));
  }

  workerUrls(): string[] {
    return [...new Set(this.registry.list().map((s) => s.url))].sort();
  }

  private shareOwner(url: string): string | undefined {
    return rendezvousOwner(url, this.load.liveReplicas());
  }

  private async tick(): Promise<void> {
    if (this.ticking || this.stopped || !this.bus.connected) return;
    this.ticking = true;
    try {
      const urls = this.workerUrls();
      for (const url of [...this.held.keys()]) if (!urls.includes(url)) this.held.delete(url);
      await Promise.all(urls.map((url) => this.keep(url)));
    } finally {
      this.ticking = false;
    }
  }

  /** Renews our lease on the worker, or notes its holder, or takes it when it is free. */
  private async keep(url: string): Promise<void> {
    const kv = this.bus.leases;
    if (!kv || this.stopped) return;
    const key = busKeyOf(url);
    const value = JSON.stringify({ replica: this.bus.replicaId, url } satisfies LeaseValue);
    const mine = this.held.get(url);
    const sentAt = Date.now();
    if (mine) {
      try {
        mine.revision = await kv.update(key, value, mine.revision);
        mine.until = sentAt + this.ttlMs;
      } catch (err) {
        this.held.delete(url);
        this.logger.warn(`lost the poll lease on ${url}: ${(err as Error).message}`);
        this.emit('lost', url);
      }
      return;
    }
    try {
      const entry = await kv.get(key);
      if (entry && entry.operation === 'PUT') {
        const holder = (entry.json<LeaseValue>() ?? {}).replica;
        if (typeof holder === 'string') this.others.set(url, holder);
        this.freeRounds.delete(url);
        return;
      }
      this.others.delete(url);
      const rounds = (this.freeRounds.get(url) ?? 0) + 1;
      this.freeRounds.set(url, rounds);
      if (this.shareOwner(url) !== this.bus.replicaId && rounds < 2) return;
      const revision = await kv.create(key, value);
      this.held.set(url, { revision, until: sentAt + this.ttlMs });
      this.freeRounds.delete(url);
      this.lastAcquiredAt = Date.now();
      this.logger.log(`replica ${this.bus.replicaId} now polls ${url}`);
      this.emit('acquired', url);
    } catch {
      // Another replica created it first, or the bus is away: the next round looks again.
    }
  }

  /** Hands the leases back so the other replicas take over at once, not after the TTL. */
  async beforeApplicationShutdown(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    const kv = this.bus.leases;
    const held = [...this.held.entries()];
    this.held.clear();
    if (!kv || !this.bus.connected) return;
    await Promise.all(held.map(([url, lease]) => kv.delete(busKeyOf(url), { previousSeq: lease.revision }).catch(() => undefined)));
  }
}
