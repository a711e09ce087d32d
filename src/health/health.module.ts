import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { ServersModule } from '../servers';
import { WorkerClientModule } from '../worker-client';
import { ActiveHealthChecker } from './active-health-checker.service';
import { OutlierDetector } from './outlier-detector.service';
import { ServerPreparer } from './server-preparer.service';
import { StartupGate } from './startup-gate.service';
import { StartupGuard } from './startup.guard';

/** Server preparation, active health checks, outlier detection (circuit breakers), the startup wait. */
@Module({
  imports: [ServersModule, WorkerClientModule],
  providers: [ServerPreparer, OutlierDetector, ActiveHealthChecker, StartupGate, { provide: APP_GUARD, useClass: StartupGuard }],
  exports: [ServerPreparer, OutlierDetector, ActiveHealthChecker, StartupGate],
})
export class HealthModule {}
