import { Module } from '@nestjs/common';
import { HealthModule } from '../health';
import { ServersModule } from '../servers';
import { EtcdDiscovery } from './etcd-discovery.service';
import { StaticServersService } from './static-servers.service';

/** Where servers come from: the config file's url lists, or etcd with metadata_server_config. */
@Module({
  imports: [ServersModule, HealthModule],
  providers: [StaticServersService, EtcdDiscovery],
  exports: [EtcdDiscovery],
})
export class ServerDiscoveryModule {}
