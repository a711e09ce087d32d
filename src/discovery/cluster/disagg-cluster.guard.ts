import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { isClientTraffic } from '../../admission/client-traffic.decorator';
import { DisaggClusterDiscovery } from './disagg-cluster.service';
import { HttpApiError } from '../../common';

/** As TensorRT-LLM does, inference requests (@ClientTraffic() routes) are refused while the cluster is below minimal_instances. */
@Injectable()
export class DisaggClusterGuard implements CanActivate {
  constructor(
    private readonly discovery: DisaggClusterDiscovery,
    private readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (!this.discovery.enabled || context.getType() !== 'http') return true;
    if (!isClientTraffic(this.reflector, context)) return true;
    const readiness = this.discovery.readiness();
    if (readiness.ready) return true;
    throw new HttpApiError(503, `the cluster is not ready: ${readiness.reason}`, {
      code: 'cluster_not_ready',
      type: 'service_unavailable',
      headers: { 'retry-after': '1' },
    });
  }
}
