import { Global, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { AdmissionService } from './admission.service';
import { ApiKeyRateLimitGuard } from './api-key-rate-limit.guard';
import { ClientTrafficGate } from './client-traffic-gate';

/**
 * Admission control for @ClientTraffic() routes: per-key rate limit (guard), in-flight limit
 * with a bounded queue (ClientTrafficGate, run by the OpenAI handlers), and per-pool
 * limits the disagg flow asks for. Global so the flow can reach the service without every
 * module importing this one.
 */
@Global()
@Module({
  providers: [
    AdmissionService,
    ClientTrafficGate,
    { provide: APP_GUARD, useClass: ApiKeyRateLimitGuard },
  ],
  exports: [AdmissionService, ClientTrafficGate],
})
export class AdmissionModule {}
