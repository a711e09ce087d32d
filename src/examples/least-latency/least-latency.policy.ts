import { z } from 'zod';
import { BaseRouter } from '../../routing/base-router';
import { LeastLoadedPicker } from '../../routing/policies/least-loaded';
import type { GetNextServerOptions, RouteResult, RoutingRequest } from '../../routing/router.interface';
import { RoutingPolicy } from '../../routing/routing-policy.decorator';
import type { ServerState } from '../../servers';
import { LatencyTracker } from './latency-tracker.service';

export const leastLatencyArgs = z.strictObject({
  /** Weight of the newest latency sample in each server's moving average. */
  alpha: z.number().gt(0).max(1).default(0.3),
});
export type LeastLatencyArgs = z.output<typeof leastLatencyArgs>;

/**
 * Sends each request where it should see its first token soonest: the server's observed
 * time to first answer times (1 + its requests in flight). A server without samples yet
 * scores 0, so every server is tried once; ties go round robin.
 */
@RoutingPolicy('least_latency', leastLatencyArgs)
export class LeastLatencyRouter extends BaseRouter<LeastLatencyArgs> {
  private readonly picker = new LeastLoadedPicker();

  constructor(private readonly latency: LatencyTracker) {
    super();
  }

  protected override onInit(): void {
    this.latency.alpha = this.args.alpha;
  }

  async getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult> {
    const server = this.picker.pick(this.candidates(options), (s) => this.expectedMs(s));
    return this.reserve(request, server, 0, { expected_ttft_ms: this.expectedMs(server) });
  }

  private expectedMs(server: ServerState): number {
    return (this.latency.estimate(this.role, server.url) ?? 0) * (1 + server.activeRequests);
  }

  protected override extraSnapshot(): Record<string, unknown> {
    return { ttft_ms: Object.fromEntries(this.servers.map((s) => [s.id, this.latency.estimate(this.role, s.url) ?? null])) };
  }
}
