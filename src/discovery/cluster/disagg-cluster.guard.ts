import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { FastifyRequest } from 'fastify';
import { DisaggClusterDiscovery } from './disagg-cluster.service';
import { HttpApiError } from '../../common';
import { INFERENCE_PATHS } from '../../common';


/** As TensorRT-LLM does, inference requests are refused while the cluster is below minimal_instances. */
@Injectable()
export class DisaggClusterGuard implements CanActivate {
  constructor(private readonly discovery: DisaggClusterDiscovery) {}

  canActivate(context: ExecutionContext): boolean {
    if (!this.discovery.enabled || context.getType() !== 'http') return true;
    const path = (context.switchToHttp().getRequest<FastifyRequest>().url ?? '').split('?')[0];
    if (!INFERENCE_PATHS.includes(path)) return true;
    const readiness = this.discovery.readiness();
    if (readiness.ready) return true;
    throw new HttpApiError(503, `the cluster is not ready: ${readiness.reason}`, {
      code: 'cluster_not_ready',
      type: 'service_unavailable',
      headers: { 'retry-after': '1' },
    });
  }
}
