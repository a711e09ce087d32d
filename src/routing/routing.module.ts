import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { ServersModule } from '../servers';
import { RoundRobinRouter } from './policies/round-robin.policy';
import { RouterManager } from './router-manager.service';
import { RouterRegistry } from './router-registry.service';

/** Built-in policies; users add theirs by providing @RoutingPolicy classes in their modules. */
export const BUILT_IN_POLICIES = [RoundRobinRouter];

@Module({
  imports: [DiscoveryModule, ServersModule],
  providers: [RouterRegistry, RouterManager, ...BUILT_IN_POLICIES],
  exports: [RouterRegistry, RouterManager, ServersModule],
})
export class RoutingModule {}
