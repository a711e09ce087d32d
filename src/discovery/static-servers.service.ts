import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { ROUTER_CONFIG, SERVER_ROLES, type RouterConfig } from '../config';
import { ServerRegistry } from '../servers';

/** Registers the url lists of the config file (when no metadata server replaces them). */
@Injectable()
export class StaticServersService implements OnApplicationBootstrap {
  constructor(
    @Inject(ROUTER_CONFIG) private readonly config: RouterConfig,
    private readonly registry: ServerRegistry,
  ) {}

  onApplicationBootstrap(): void {
    if (this.config.metadata_server_config) return;
    for (const role of SERVER_ROLES) {
      const pool = role === 'context' ? this.config.context_servers : this.config.generation_servers;
      for (const url of pool?.urls ?? []) {
        const server = this.registry.add({ url, role, source: 'config' });
        this.registry.setStatus(server, 'ready');
      }
    }
  }
}
