import { Module } from '@nestjs/common';
import { LatencyTracker } from './latency-tracker.service';
import { LeastLatencyRouter } from './least-latency.policy';

/**
 * A custom routing policy, `least_latency`. Importing this module is all it takes: the
 * router policy catalog finds every @RoutingPolicy provider of the app, and config picks it with
 * `router: {type: least_latency}`.
 */
@Module({
  providers: [LatencyTracker, LeastLatencyRouter],
  exports: [LatencyTracker],
})
export class LeastLatencyModule {}
