import { Injectable, Logger, type BeforeApplicationShutdown, type OnModuleInit } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { normalizeServerUrl } from '../config';
import type { KvPollOwnership } from '../kv-cache';
import { ServerRegistry } from '../servers';
import { ReplicaBus } from './replica-bus.service';
import { KvEventStream } from './kv-event-stream.service';
import { busKeyOf, rendezvousOwner } from './rendezvous';
import { SharedLoad } from './shared-load.service';

interface Lease {
  revision: number;
  /** Local epoch ms until which the lease is surely still ours (the bucket TTL from the last write sent). */
  until: number;
  /** The event stream's last sequence when the lease was taken (undefined: not known yet): polling waits until this replica read it. */
  readThrough?: number;
  /** Being handed back: no new poll or snapshot starts, the lease goes once those under way end. */
  releasing: boolean;
}

interface LeaseValue {
  replica: string;
  url: string;
}

/** Rounds (a third of the lease TTL each) another live replica must be the owner in a row before a hand-back: one TTL. */
const HAND_BACK_ROUNDS = 3;

/** How long a replica still making its first bus connection polls nothing (then it polls as in an outage). */
const FIRST_CONNECTION_GRACE_MS = 10_000;

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
 * Replicas started one after the other: the first up took every worker. A lease whose worker
 * has had another live replica as its rendezvous owner for HAND_BACK_ROUNDS rounds in a row is
 * handed back at a clean point: polls and snapshots stop starting, and the lease goes once the
 * poll, its stream publications and the snapshot write under way for that worker ended. Every
 * new holder polls only after its stream reader read the stream as far as it reached when the
 * lease was taken, so it applies the previous holder's events before draining the worker's
 * next ones (an event id at or below the last applied one is skipped: drained out of order,
 * events would be lost). See the README, "Running several replicas".
 *
 * Without the bus the leases cannot be renewed: each replica then polls its rendezvous share
 * among the replicas it last saw alive, so every worker keeps exactly one poller as long as
 * the replicas agree on who is alive (a replica still making its first connection waits first).
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
  /** Rounds in a row another live replica has been the rendezvous owner of a lease held here. */
  private readonly foreignRounds = new Map<string, number>();
  /** Epoch ms of the last lease this replica acquired (ownership moves, in the admin view). */
  lastAcquiredAt?: number;
  /** Whether a poll, publication or snapshot write of the worker is under way here (set by KvSync). */
  busyWith: (url: string) => boolean = () => false;

  constructor(
    private readonly bus: ReplicaBus,
    private readonly registry: ServerRegistry,
    private readonly load: SharedLoad,
    private readonly stream: KvEventStream,
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

  /** Whether this replica polls the worker now: it holds the lease, read the stream up to it, and is not handing it back. */
  owns(serverUrl: string): boolean {
    const url = normalizeServerUrl(serverUrl);
    if (!this.bus.connected) return this.pollsWithoutBus() && this.shareOwner(url) === this.bus.replicaId;
    const lease = this.validLease(url);
    return lease !== undefined && !lease.releasing && lease.readThrough !== undefined && this.stream.lastSeq >= lease.readThrough;
  }

  /** The replica that holds the worker's lease, or (bus down) its rendezvous share. */
  ownerOf(serverUrl: string): string | undefined {
    const url = normalizeServerUrl(serverUrl);
    if (!this.bus.connected) return this.shareOwner(url);
    if (this.validLease(url)) return this.bus.replicaId;
    return this.others.get(url);
  }

  /**
   * A replica still making its first connection knows no peer yet: its share would be every
   * worker, and what it drained would reach no other replica (the owner's later events, applied
   * first, would even hide it from its own view once it adopts their snapshots). It polls
   * nothing for FIRST_CONNECTION_GRACE_MS, then as a replica whose bus is down.
   */
  private pollsWithoutBus(): boolean {
    return this.bus.state !== 'connecting' || Date.now() - this.bus.since >= FIRST_CONNECTION_GRACE_MS;
  }

  private validLease(url: string): Lease | undefined {
    const lease = this.held.get(url);
    return lease && lease.until > Date.now() ? lease : undefined;
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
        this.foreignRounds.delete(url);
        this.logger.warn(`lost the poll lease on ${url}: ${(err as Error).message}`);
        this.emit('lost', url);
        return;
      }
      mine.readThrough ??= await this.stream.end();
      await this.handBackWhenDue(url, mine);
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
      this.held.set(url, { revision, until: sentAt + this.ttlMs, releasing: false, readThrough: await this.stream.end() });
      this.freeRounds.delete(url);
      this.lastAcquiredAt = Date.now();
      this.logger.log(`replica ${this.bus.replicaId} now polls ${url}`);
      this.emit('acquired', url);
    } catch {
      // Another replica created it first, or the bus is away: the next round looks again.
    }
  }

  /**
   * Hands the lease to the worker's rendezvous owner once another live replica has been it for
   * HAND_BACK_ROUNDS rounds (hysteresis: a replica seen briefly moves nothing), at a clean
   * point: from the due round on no poll or snapshot starts, the first round with none under
   * way for the worker deletes the lease, and the owner takes it on its next round.
   */
  private async handBackWhenDue(url: string, lease: Lease): Promise<void> {
    const owner = this.shareOwner(url);
    if (owner === undefined || owner === this.bus.replicaId) {
      this.foreignRounds.delete(url);
      lease.releasing = false;
      return;
    }
    const rounds = (this.foreignRounds.get(url) ?? 0) + 1;
    this.foreignRounds.set(url, rounds);
    if (rounds < HAND_BACK_ROUNDS) return;
    lease.releasing = true;
    if (this.busyWith(url)) return;
    try {
      await this.bus.leases?.delete(busKeyOf(url), { previousSeq: lease.revision });
    } catch {
      return; // The bus is away: the lease stays ours (not polled) and the next round tries again.
    }
    this.held.delete(url);
    this.foreignRounds.delete(url);
    this.logger.log(`replica ${this.bus.replicaId} hands ${url} back to its rendezvous owner ${owner}`);
    this.emit('lost', url);
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
