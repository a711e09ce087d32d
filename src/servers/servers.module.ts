import { Module } from '@nestjs/common';
import { KvCacheModule } from '../kv-cache';
import { ClusterStatus } from './cluster-status.service';
import { ServerRegistry } from './server-registry.service';
import { ServerStateFactory } from './server-state.factory';

@Module({
  imports: [KvCacheModule],
  providers: [ServerStateFactory, ServerRegistry, ClusterStatus],
  exports: [ServerStateFactory, ServerRegistry, ClusterStatus],
})
export class ServersModule {}
