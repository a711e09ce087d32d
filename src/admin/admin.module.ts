import { DynamicModule, Module } from '@nestjs/common';
import type { AppConfig } from '../config';
import { AdminAnnouncer } from './admin-announcer.service';
import { AdminApiModule } from './admin-api.module';
import { AdminCoreModule } from './admin-core.module';
import { adminServedOn } from './admin-placement';
import { AdminPortHost } from './admin-port-host.service';

/**
 * The admin REST API under /admin/v1. Without `admin.token` nothing is mounted (its paths
 * answer 404); with `admin.port` it is served by its own app on that port only.
 */
@Module({})
export class AdminModule {
  static forRoot(config: AppConfig): DynamicModule {
    const placement = adminServedOn(config);
    if (placement === 'disabled') return { module: AdminModule, providers: [AdminAnnouncer] };
    if (placement === 'main') {
      return { module: AdminModule, imports: [AdminCoreModule, AdminApiModule.register({ imports: [AdminCoreModule] })], providers: [AdminAnnouncer] };
    }
    return { module: AdminModule, imports: [AdminCoreModule], providers: [AdminAnnouncer, AdminPortHost], exports: [AdminPortHost] };
  }
}
