import { Module } from '@nestjs/common';
import { WorkerClientModule } from '../worker-client';
import { BlockHashCache } from './block-hash-cache';
import { KvEventApplier } from './kv-event-applier';
import { KvEventPoller } from './kv-event-poller';
import { KV_EVENT_PUBLISHER, KV_POLL_OWNERSHIP, POLL_EVERY_WORKER, PUBLISH_NOWHERE } from './kv-seams';
import { KvWorkers } from './kv-workers';

/**
 * What the router knows of the workers' KV caches: the workers' block tables by URL, the event
 * applier, the poller, and the block-hash cache the KV-aware routers share. A single router
 * polls every worker and publishes nothing; replicas provide other KV_POLL_OWNERSHIP and
 * KV_EVENT_PUBLISHER.
 */
@Module({
  imports: [WorkerClientModule],
  providers: [
    KvWorkers,
    KvEventApplier,
    KvEventPoller,
    { provide: BlockHashCache, useFactory: () => new BlockHashCache() },
    { provide: KV_POLL_OWNERSHIP, useValue: POLL_EVERY_WORKER },
    { provide: KV_EVENT_PUBLISHER, useValue: PUBLISH_NOWHERE },
  ],
  exports: [BlockHashCache, KvWorkers, KvEventApplier, KvEventPoller, KV_POLL_OWNERSHIP, KV_EVENT_PUBLISHER],
})
export class KvCacheModule {}
