import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { isClientTraffic } from '../admission/client-traffic.decorator';
import { ServerRegistry } from '../servers';
import { StartupGate } from './startup-gate.service';
import { HttpApiError } from '../common';

/**
 * During the startup wait, a @ClientTraffic() request that no server could take yet gets a
 * 503 that says the router is starting (instead of a bare "no server available"). Costs one
 * flag check once the wait is over.
 */
@Injectable()
export class StartupGuard implements CanActivate {
  constructor(
    private readonly gate: StartupGate,
    private readonly servers: ServerRegistry,
    private readonly reflector: Reflector,
  ) {}

  canActivate(context: ExecutionContext): boolean {
    if (!this.gate.waiting || context.getType() !== 'http') return true;
    if (!isClientTraffic(this.reflector, context)) return true;
    const missing = this.missingPool();
    if (!missing) return true;
    const total = this.servers.list(missing).length;
    throw new HttpApiError(
      503,
      `the router is starting: no ${missing} server is ready yet (${total} known); it waits up to ${this.gate.secondsLeft} s more for them, retry shortly`,
      { code: 'starting', type: 'service_unavailable', headers: { 'retry-after': '1' } },
    );
  }

  private missingPool(): 'context' | 'generation' | undefined {
    if (this.servers.ready('generation').length === 0) return 'generation';
    if (this.servers.list('context').length > 0 && this.servers.ready('context').length === 0) return 'context';
    return undefined;
  }
}
