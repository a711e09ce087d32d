import { DynamicModule, Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import type { AppConfig } from '../../config';
import { ServersModule } from '../../servers';
import { ClusterStorageController } from './cluster-storage.controller';
import { DisaggClusterGuard } from './disagg-cluster.guard';
import { DisaggClusterDiscovery, servesClusterStorage } from './disagg-cluster.service';
import { MemoryClusterStorage } from './memory-cluster-storage';

/** `disagg_cluster`: self-registering workers; the storage endpoints only with an http(s) uri. */
@Module({})
export class DisaggClusterModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: DisaggClusterModule,
      imports: [ServersModule],
      controllers: servesClusterStorage(config) ? [ClusterStorageController] : [],
      providers: [
        { provide: MemoryClusterStorage, useFactory: () => new MemoryClusterStorage() },
        DisaggClusterDiscovery,
        { provide: APP_GUARD, useClass: DisaggClusterGuard },
      ],
      exports: [DisaggClusterDiscovery],
    };
  }
}
