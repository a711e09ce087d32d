import { DynamicModule, Inject, MiddlewareConsumer, Module, NestModule } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { APP_CONFIG, type AppConfig } from '../../config';
import { ServersModule } from '../../servers';
import { ClusterStorageAccessMiddleware } from './cluster-storage-access.middleware';
import { ClusterStorageListener } from './cluster-storage-listener';
import { ClusterStorageController } from './cluster-storage.controller';
import { DisaggClusterGuard } from './disagg-cluster.guard';
import { DisaggClusterDiscovery, servesClusterStorage } from './disagg-cluster.service';
import { MemoryClusterStorage } from './memory-cluster-storage';

/** The storage endpoints go on the client port unless `storage_listener` gives them their own. */
function onClientPort(config: AppConfig): boolean {
  return servesClusterStorage(config) && !config.disagg_cluster?.storage_listener;
}

/** `disagg_cluster`: self-registering workers; the storage endpoints only with an http(s) uri. */
@Module({})
export class DisaggClusterModule implements NestModule {
  constructor(@Inject(APP_CONFIG) private readonly config: AppConfig) {}

  static forRoot(config: AppConfig): DynamicModule {
    const ownListener = servesClusterStorage(config) && config.disagg_cluster?.storage_listener !== undefined;
    return {
      module: DisaggClusterModule,
      imports: [ServersModule],
      controllers: onClientPort(config) ? [ClusterStorageController] : [],
      providers: [
        { provide: MemoryClusterStorage, useFactory: () => new MemoryClusterStorage() },
        DisaggClusterDiscovery,
        { provide: APP_GUARD, useClass: DisaggClusterGuard },
        ...(ownListener ? [ClusterStorageListener] : []),
      ],
      exports: [DisaggClusterDiscovery],
    };
  }

  configure(consumer: MiddlewareConsumer): void {
    if (onClientPort(this.config)) consumer.apply(ClusterStorageAccessMiddleware).forRoutes(ClusterStorageController);
  }
}
