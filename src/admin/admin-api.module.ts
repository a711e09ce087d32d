import { DynamicModule, Module, type ModuleMetadata } from '@nestjs/common';
import { ClusterAdminController } from './cluster-admin.controller';
import { ConfigAdminController } from './config-admin.controller';
import { RoutersAdminController } from './routers-admin.controller';
import { ServersAdminController } from './servers-admin.controller';
import { StatsAdminController, StatusPageController } from './status-page/status-page.controller';

/**
 * The admin HTTP surface (and the status page). Its controllers need AdminService, RequestStats
 * and APP_CONFIG, supplied by
 * the caller: imported from the main app's modules, or as the main app's instances when it
 * is mounted in the separate admin app.
 */
@Module({})
export class AdminApiModule {
  static register(deps: Pick<ModuleMetadata, 'imports' | 'providers'>): DynamicModule {
    return {
      module: AdminApiModule,
      imports: deps.imports ?? [],
      providers: deps.providers ?? [],
      controllers: [ClusterAdminController, ServersAdminController, RoutersAdminController, ConfigAdminController, StatsAdminController, StatusPageController],
    };
  }
}
