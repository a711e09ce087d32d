import { Injectable, type OnModuleInit } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { MetricsService } from '../observability/metrics/metrics.service';
import { ClusterStatus } from '../servers';
import type { ClusterAdminView } from './cluster-admin-view';
import { KvEventStream } from './kv-event-stream.service';
import { KvSnapshots } from './kv-snapshots.service';
import { KvSync } from './kv-sync.service';
import { PollLeases } from './poll-leases.service';
import { ReplicaBus } from './replica-bus.service';
import { RoutedBlocksSharing } from './routed-blocks.service';
import { SharedLoad } from './shared-load.service';
import { WorkerPositions } from './worker-positions';

const NS = 'disagg_router_cluster_';

/** The replica's cluster state for /cluster_info (short), the admin API (full) and /metrics. */
@Injectable()
export class ClusterView implements ClusterAdminView, OnModuleInit {
  constructor(
    private readonly bus: ReplicaBus,
    private readonly leases: PollLeases,
    private readonly load: SharedLoad,
    private readonly stream: KvEventStream,
    private readonly snapshots: KvSnapshots,
    private readonly routed: RoutedBlocksSharing,
    private readonly sync: KvSync,
    private readonly status: ClusterStatus,
    private readonly metrics: MetricsService,
    private readonly positions: WorkerPositions,
  ) {}

  onModuleInit(): void {
    this.status.addInfoSection('cluster', () => this.summary());
    const registers = [this.metrics.registry];
    const gauge = (name: string, help: string, value: () => number): void => {
      new Gauge({ name: NS + name, help, registers, collect() { this.set(value()); } });
    };
    gauge('bus_connected', '1 while this replica is connected to the cluster bus (NATS); 0: degraded', () => (this.bus.connected ? 1 : 0));
    gauge('replicas', 'Router replicas this one sees alive, itself included', () => this.load.liveReplicas().length);
    gauge('owned_workers', 'Workers whose KV events this replica polls', () => this.leases.ownedUrls().length);
    gauge('event_lag_messages', 'KV event messages on the stream this replica has not applied yet', () => this.stream.pending);
    gauge('load_age_seconds', 'p99 age of the other replicas\' load reports on receipt', () => this.load.ageStats().p99_ms / 1000);
    gauge('bus_outages', 'Times the bus was lost since start', () => this.bus.outages);
    gauge('bus_retries', 'Bus work (a resynchronisation, a watch) that failed with the bus up and was tried again', () => this.bus.retries);
  }

  summary(): Record<string, unknown> {
    return {
      replica_id: this.bus.replicaId,
      bus: this.bus.state,
      degraded: !this.bus.connected,
      replicas: this.load.liveReplicas().length,
      owned_workers: this.leases.ownedUrls().length,
      event_lag: this.stream.pending,
    };
  }

  detail(): Record<string, unknown> {
    const me = this.bus.replicaId;
    return {
      enabled: true,
      replica_id: me,
      bus: { url: this.bus.cluster.bus, state: this.bus.state, since: new Date(this.bus.since).toISOString(), outages: this.bus.outages, resyncs: this.sync.resyncs, retries: this.bus.retries },
      replicas: [
        { replica: me, self: true, owned_workers: this.leases.ownedUrls().length },
        ...this.load.peerView().map((p) => ({ ...p, self: false })),
      ],
      workers: this.leases.workerUrls().map((url) => ({ url, owner: this.leases.ownerOf(url) ?? null })),
      stream: { last_seq: this.stream.lastSeq, lag: this.stream.pending, published: this.stream.published, received: this.stream.received, gaps: this.stream.gaps, workers_with_gaps: this.positions.gapped() },
      snapshots: { written: this.snapshots.writes, adopted: this.snapshots.adopted, last_parts: this.snapshots.lastParts },
      routed_blocks: { sent: this.routed.sent, received: this.routed.received },
      load: { reports_received: this.load.received, staleness: this.load.ageStats(), publish_interval_ms: this.bus.cluster.load_interval_ms },
      last_lease_acquired_at: this.leases.lastAcquiredAt ? new Date(this.leases.lastAcquiredAt).toISOString() : null,
    };
  }
}
