import { Injectable, Logger, type OnModuleDestroy, type OnModuleInit } from '@nestjs/common';
import type { Subscription } from '@nats-io/nats-core';
import { normalizeServerUrl } from '../config';
import { KvEventPoller, type BlockKey } from '../kv-cache';
import type { RoutedBlocksSink } from '../routing';
import { ServerRegistry, type ServerState } from '../servers';
import { decodeBlocks, encodeBlocks, type EncodedBlocks } from './block-codec';
import { PollLeases } from './poll-leases.service';
import { ReplicaBus } from './replica-bus.service';

interface RoutedMessage {
  replica: string;
  url: string;
  algo: string;
  ttl_ms: number;
  blocks: EncodedBlocks;
}

const KV_EVENTS_TIMEOUT_MS = 5_000;

/**
 * Read-your-writes across replicas: when a request succeeds on a worker, the replica that
 * routed it tells the others (core NATS, no persistence: a missed message only costs a
 * prefix hit) which blocks it recorded there, and they record them too. The message also
 * tells the worker's poller that the worker has new events to drain now.
 */
@Injectable()
export class RoutedBlocksSharing implements RoutedBlocksSink, OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('RoutedBlocksSharing');
  private sub?: Subscription;
  sent = 0;
  received = 0;

  constructor(
    private readonly bus: ReplicaBus,
    private readonly registry: ServerRegistry,
    private readonly leases: PollLeases,
    private readonly poller: KvEventPoller,
  ) {}

  onModuleInit(): void {
    this.bus.on('up', () => this.subscribe());
  }

  routed(server: ServerState, algo: string, hashes: readonly BlockKey[], ttlMs: number): void {
    const nc = this.bus.nc;
    if (!this.bus.connected || !nc) return;
    // The poller of this worker fetches its events itself; others tell it to.
    if (!hashes.length && this.leases.owns(server.url)) return;
    const msg: RoutedMessage = { replica: this.bus.replicaId, url: server.url, algo, ttl_ms: ttlMs, blocks: encodeBlocks(hashes) };
    try {
      nc.publish(this.bus.names.routedSubject, JSON.stringify(msg));
      this.sent++;
    } catch (err) {
      this.logger.debug(`routed blocks not shared: ${(err as Error).message}`);
    }
  }

  private subscribe(): void {
    const nc = this.bus.nc;
    // Core subscriptions survive reconnects: one is enough.
    if (this.sub || !nc) return;
    this.sub = nc.subscribe(this.bus.names.routedSubject, {
      callback: (err, m) => {
        if (err) return;
        try {
          this.onMessage(m.json<RoutedMessage>());
        } catch {
          /* not ours or malformed: ignored */
        }
      },
    });
  }

  private onMessage(msg: RoutedMessage): void {
    if (!msg || msg.replica === this.bus.replicaId || typeof msg.url !== 'string' || typeof msg.algo !== 'string') return;
    const url = normalizeServerUrl(msg.url);
    const hashes = decodeBlocks(msg.blocks);
    const ttl = Number(msg.ttl_ms);
    this.received++;
    for (const server of this.registry.list()) {
      if (server.url !== url) continue;
      if (hashes.length && ttl > 0) server.kvTable(msg.algo).track(hashes, Math.min(ttl, 3_600_000));
    }
    if (this.leases.owns(url)) void this.poller.poll(url, KV_EVENTS_TIMEOUT_MS);
  }

  onModuleDestroy(): void {
    this.sub?.unsubscribe();
    this.sub = undefined;
  }
}
