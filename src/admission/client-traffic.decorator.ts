import { SetMetadata } from '@nestjs/common';

export const CLIENT_TRAFFIC = 'disagg:client-traffic';

/**
 * Marks a controller (or handler) as client inference traffic: rate limits, admission control
 * and shutdown draining apply to it; health, metrics and admin endpoints stay unaffected.
 */
export const ClientTraffic = (): ClassDecorator & MethodDecorator => SetMetadata(CLIENT_TRAFFIC, true);
