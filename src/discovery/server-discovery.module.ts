import { Module } from '@nestjs/common';
import { ServersModule } from '../servers';
import { StaticServersService } from './static-servers.service';

/** Where servers come from: the config file's url lists (and etcd, when configured). */
@Module({
  imports: [ServersModule],
  providers: [StaticServersService],
})
export class ServerDiscoveryModule {}
