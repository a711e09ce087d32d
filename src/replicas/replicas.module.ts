import { DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from '../config';
import { KV_EVENT_PUBLISHER, KV_POLL_OWNERSHIP, KvCacheModule } from '../kv-cache';
import { KV_REPORT_RELAY } from '../kv-events-zmq';
import { ROUTED_BLOCKS_SINK } from '../routing';
import { ServersModule } from '../servers';
import { CLUSTER_ADMIN_VIEW, singleRouterView } from './cluster-admin-view';
import { ClusterView } from './cluster-view.service';
import { KvEventStream } from './kv-event-stream.service';
import { KvReportRelayService } from './kv-report-relay.service';
import { KvSnapshots } from './kv-snapshots.service';
import { KvSync } from './kv-sync.service';
import { PollLeases } from './poll-leases.service';
import { ReplicaBus } from './replica-bus.service';
import { RoutedBlocksSharing } from './routed-blocks.service';
import { SharedLoad } from './shared-load.service';
import { WorkerPositions } from './worker-positions';

/**
 * Router replicas sharing one KV view and load picture over NATS JetStream (the `cluster`
 * config section). Global, so the KV room's poller finds the poll ownership (the leases) and
 * the event publisher (the stream) it injects optionally. Without that section it only
 * provides the admin view of a single router, and the KV room polls every worker itself.
 */
@Module({})
export class ReplicasModule {
  static forRoot(config: AppConfig): DynamicModule {
    if (!config.cluster) {
      return { module: ReplicasModule, global: true, providers: [{ provide: CLUSTER_ADMIN_VIEW, useValue: singleRouterView }], exports: [CLUSTER_ADMIN_VIEW] };
    }
    return {
      module: ReplicasModule,
      global: true,
      imports: [ServersModule, KvCacheModule],
      providers: [
        ReplicaBus,
        SharedLoad,
        PollLeases,
        WorkerPositions,
        KvEventStream,
        KvSnapshots,
        RoutedBlocksSharing,
        KvSync,
        ClusterView,
        KvReportRelayService,
        { provide: KV_REPORT_RELAY, useExisting: KvReportRelayService },
        { provide: KV_POLL_OWNERSHIP, useExisting: PollLeases },
        { provide: KV_EVENT_PUBLISHER, useExisting: KvEventStream },
        { provide: ROUTED_BLOCKS_SINK, useExisting: RoutedBlocksSharing },
        { provide: CLUSTER_ADMIN_VIEW, useExisting: ClusterView },
      ],
      exports: [KV_POLL_OWNERSHIP, KV_EVENT_PUBLISHER, ROUTED_BLOCKS_SINK, CLUSTER_ADMIN_VIEW, KV_REPORT_RELAY],
    };
  }
}
