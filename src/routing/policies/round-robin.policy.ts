import type { ServerState } from '../../servers';
import { BaseRouter } from '../base-router';
import type { GetNextServerOptions, RouteResult, RoutingRequest } from '../router.interface';
import { RoutingPolicy } from '../routing-policy.decorator';

/** Rotation over the ready servers; an excluded server is skipped, the rotation goes on. */
@RoutingPolicy('round_robin')
export class RoundRobinRouter extends BaseRouter {
  private next = 0;

  async getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult> {
    return this.reserve(request, this.pick(this.candidates(options)));
  }

  private pick(candidates: readonly ServerState[]): ServerState {
    const all = this.servers;
    // Walk the full rotation so exclusion does not shift which server is next for others.
    for (let i = 0; i < all.length; i++) {
      const server = all[(this.next + i) % all.length];
      if (candidates.includes(server)) {
        this.next = (this.next + i + 1) % all.length;
        return server;
      }
    }
    return candidates[0];
  }
}
