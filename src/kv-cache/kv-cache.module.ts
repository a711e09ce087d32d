import { Module } from '@nestjs/common';
import { WorkerClientModule } from '../worker-client';
import { BlockHashCache } from './block-hash-cache';
import { KvEventApplier } from './kv-event-applier';
import { KvEventPoller } from './kv-event-poller';
import { KvWorkers } from './kv-workers';

/**
 * What the router knows of the workers' KV caches: the workers' block tables by URL, the event
 * applier, the poller, and the block-hash cache the KV-aware routers share. A single router
 * polls every worker and publishes nothing; router replicas provide KV_POLL_OWNERSHIP and
 * KV_EVENT_PUBLISHER from a global module (the poller injects them optionally, as the applier
 * does KV_METRICS), so this room depends on none.
 */
@Module({
  imports: [WorkerClientModule],
  providers: [
    KvWorkers,
    KvEventApplier,
    KvEventPoller,
    { provide: BlockHashCache, useFactory: () => new BlockHashCache() },
  ],
  exports: [BlockHashCache, KvWorkers, KvEventApplier, KvEventPoller],
})
export class KvCacheModule {}
