import { SetMetadata, type ExecutionContext } from '@nestjs/common';
import type { Reflector } from '@nestjs/core';

export const CLIENT_TRAFFIC = 'disagg:client-traffic';

/**
 * Marks a controller (or handler) as client inference traffic: rate limits, admission control,
 * the startup wait and shutdown draining apply to it; health, metrics and admin endpoints stay
 * unaffected.
 */
export const ClientTraffic = (): ClassDecorator & MethodDecorator => SetMetadata(CLIENT_TRAFFIC, true);

/** Whether the route of a request is marked @ClientTraffic() (on its handler or controller). */
export function isClientTraffic(reflector: Reflector, context: ExecutionContext): boolean {
  return reflector.getAllAndOverride<boolean | undefined>(CLIENT_TRAFFIC, [context.getHandler(), context.getClass()]) === true;
}
