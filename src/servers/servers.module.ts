import { Module } from '@nestjs/common';
import { KvCacheModule } from '../kv-cache';
import { ClusterStatus } from './cluster-status.service';
import { ServerRegistry } from './server-registry.service';
import { ServerStateFactory } from './server-state.factory';
import { SideRequestPicker } from './side-request-picker';

@Module({
  imports: [KvCacheModule],
  providers: [ServerStateFactory, ServerRegistry, ClusterStatus, SideRequestPicker],
  exports: [ServerStateFactory, ServerRegistry, ClusterStatus, SideRequestPicker],
})
export class ServersModule {}
