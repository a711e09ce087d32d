import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ServersModule } from '../servers';
import { WorkerClientModule } from '../worker-client';
import { HealthMonitor } from './health-monitor.service';
import { ServerPreparer } from './server-preparer.service';
import { StartupGate } from './startup-gate.service';
import { StartupGuard } from './startup.guard';

/** Server preparation, active and passive health checks, circuit breakers, the startup wait. */
@Module({
  imports: [ServersModule, WorkerClientModule],
  providers: [ServerPreparer, HealthMonitor, StartupGate, { provide: APP_GUARD, useClass: StartupGuard }],
  exports: [ServerPreparer, HealthMonitor, StartupGate],
})
export class HealthModule {}
