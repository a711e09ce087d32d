import { DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from '../config';
import { ROUTED_BLOCKS_SINK } from '../routing';
import { ServersModule } from '../servers';
import { CLUSTER_ADMIN_VIEW, singleRouterView } from './cluster-admin-view';
import { ClusterView } from './cluster-view.service';
import { KvEventStream } from './kv-event-stream.service';
import { KV_EVENT_PUBLISHER, KV_POLL_OWNERSHIP } from './kv-seams';
import { KvSnapshots } from './kv-snapshots.service';
import { KvSync } from './kv-sync.service';
import { PollLeases } from './poll-leases.service';
import { ReplicaBus } from './replica-bus.service';
import { KvEventApplier } from './replica-event-applier';
import { RoutedBlocksSharing } from './routed-blocks.service';
import { SharedLoad } from './shared-load.service';

/**
 * Router replicas sharing one KV view and load picture over NATS JetStream (the `cluster`
 * config section). Without that section it only provides the admin view of a single router.
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
      imports: [ServersModule],
      providers: [
        ReplicaBus,
        SharedLoad,
        PollLeases,
        KvEventApplier,
        KvEventStream,
        KvSnapshots,
        RoutedBlocksSharing,
        KvSync,
        ClusterView,
        { provide: KV_POLL_OWNERSHIP, useExisting: PollLeases },
        { provide: KV_EVENT_PUBLISHER, useExisting: KvEventStream },
        { provide: ROUTED_BLOCKS_SINK, useExisting: RoutedBlocksSharing },
        { provide: CLUSTER_ADMIN_VIEW, useExisting: ClusterView },
      ],
      exports: [KV_POLL_OWNERSHIP, KV_EVENT_PUBLISHER, ROUTED_BLOCKS_SINK, CLUSTER_ADMIN_VIEW],
    };
  }
}
