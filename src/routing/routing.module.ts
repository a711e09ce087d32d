import { Module } from '@nestjs/common';
import { DiscoveryModule } from '@nestjs/core';
import { KvCacheModule } from '../kv-cache';
import { KvEventsZmqModule } from '../kv-events-zmq';
import { ServersModule } from '../servers';
import { CentralizedKvCacheAwareRouter } from './policies/centralized-kv-cache-aware.policy';
import { ConversationRouter } from './policies/conversation.policy';
import { KvCacheAwareRouter } from './policies/kv-cache-aware.policy';
import { LoadBalancingRouter } from './policies/load-balancing.policy';
import { RoundRobinRouter } from './policies/round-robin.policy';
import { RouterRegistry } from './router-registry.service';
import { RouterPolicyCatalog } from './router-policy-catalog.service';

/** Built-in policies; users add theirs by providing @RoutingPolicy classes in their modules. */
export const BUILT_IN_POLICIES = [RoundRobinRouter, LoadBalancingRouter, KvCacheAwareRouter, ConversationRouter, CentralizedKvCacheAwareRouter];

@Module({
  imports: [DiscoveryModule, ServersModule, KvCacheModule, KvEventsZmqModule],
  providers: [RouterPolicyCatalog, RouterRegistry, ...BUILT_IN_POLICIES],
  exports: [RouterPolicyCatalog, RouterRegistry, ServersModule],
})
export class RoutingModule {}
