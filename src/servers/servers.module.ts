import { Module } from '@nestjs/common';
import { ClusterStatus } from './cluster-status.service';
import { ServerRegistry } from './server-registry.service';
import { ServerStateFactory } from './server-state.factory';

@Module({
  providers: [ServerStateFactory, ServerRegistry, ClusterStatus],
  exports: [ServerStateFactory, ServerRegistry, ClusterStatus],
})
export class ServersModule {}
