import { Module } from '@nestjs/common';
import { RoundRobinRouter } from '../../../src/routing/policies/round-robin.policy';
import { RoutingPolicy } from '../../../src/routing/routing-policy.decorator';
import type { FinishRequestOptions, GetNextServerOptions, RouteResult, RoutingRequest } from '../../../src/routing';

/** Picks and finishes per request id, over every CountingRouter instance of the process. */
export const ledger = {
  picks: new Map<string, number>(),
  finishes: new Map<string, number>(),
  reset(): void {
    this.picks.clear();
    this.finishes.clear();
  },
  /** Request ids whose reservations were not finished exactly once each. */
  unbalanced(): string[] {
    const out: string[] = [];
    for (const [id, n] of this.picks) if ((this.finishes.get(id) ?? 0) !== n) out.push(`${id}: ${n} picks, ${this.finishes.get(id) ?? 0} finishes`);
    for (const id of this.finishes.keys()) if (!this.picks.has(id)) out.push(`${id}: finished without a pick`);
    return out;
  },
};

const bump = (m: Map<string, number>, id: string): void => void m.set(id, (m.get(id) ?? 0) + 1);

/** Round robin that records every reservation and every finishRequest that releases one. */
@RoutingPolicy('counting_round_robin')
export class CountingRouter extends RoundRobinRouter {
  override async getNextServer(request: RoutingRequest, options?: GetNextServerOptions): Promise<RouteResult> {
    const route = await super.getNextServer(request, options);
    bump(ledger.picks, `${this.role}:${request.id}`);
    return route;
  }

  override async finishRequest(request: RoutingRequest, options?: FinishRequestOptions): Promise<void> {
    bump(ledger.finishes, `${this.role}:${request.id}`);
    return super.finishRequest(request, options);
  }
}

@Module({ providers: [CountingRouter] })
export class CountingPolicyModule {}

export const COUNTING = { router: { type: 'counting_round_robin' } };
