import { Inject, Injectable, OnApplicationBootstrap } from '@nestjs/common';
import { APP_CONFIG, SERVER_ROLES, type AppConfig } from '../config';
import { ServerPreparer } from '../health';
import { ServerRegistry } from '../servers';

/**
 * Registers the url lists of the config file (when no metadata server replaces them). They
 * start in `preparing`; the preparer makes them `ready` once they answer. Startup awaits the
 * first attempt (bounded by health.timeout_s), so workers that are up take traffic from the
 * first request; the ones that are not are retried in the background while the router serves.
 */
@Injectable()
export class StaticServersService implements OnApplicationBootstrap {
  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly registry: ServerRegistry,
    private readonly preparer: ServerPreparer,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    // Workers of a disagg_cluster register themselves; url lists are ignored, as TensorRT-LLM does.
    if (this.config.metadata_server_config || this.config.disagg_cluster) return;
    const added = [];
    for (const role of SERVER_ROLES) {
      const pool = role === 'context' ? this.config.context_servers : this.config.generation_servers;
      for (const url of pool?.urls ?? []) added.push(this.registry.add({ url, role, source: 'config' }));
    }
    await Promise.all(added.map((server) => this.preparer.prepare(server)));
  }
}
