import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ConfigError, APP_CONFIG, SERVER_ROLES, type AppConfig } from '../config';
import { RouterRegistry, routerConfigFor } from '../routing';
import { ServerRegistry } from '../servers';
import { AdminChangeStore } from './admin-change-store';
import type { PersistedChanges } from './admin-schemas';

/**
 * Replays persisted admin changes at start: config servers removed through the API stay
 * removed, added servers come back (and go through preparation like any new server), and
 * switched pools get their policy back.
 */
@Injectable()
export class AdminChangesRestorer implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger('Admin');
  private changes?: PersistedChanges;
  private unsubscribe?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly store: AdminChangeStore,
    private readonly registry: ServerRegistry,
    private readonly routers: RouterRegistry,
  ) {}

  onModuleInit(): void {
    this.changes = this.store.current();
    // Config servers are registered at bootstrap, in an order this module does not control:
    // drop removed ones as they appear, for as long as the app runs.
    this.unsubscribe = this.registry.onEvent((event) => {
      if (event.type !== 'added' || event.server.source !== 'config') return;
      if (this.store.isRemoved(event.server)) {
        this.logger.log(`${event.server.role} server ${event.server.url} stays removed (admin change)`);
        this.registry.remove(event.server);
      }
    });
  }

  async onApplicationBootstrap(): Promise<void> {
    const changes = this.changes;
    if (!changes) return;
    for (const ref of changes.added_servers) this.registry.add({ ...ref, source: 'admin' });
    for (const role of SERVER_ROLES) {
      const body = changes.routers[role];
      if (!body) continue;
      const { type, ...args } = body;
      try {
        await this.routers.switchPolicy(role, { type, args, inherited: routerConfigFor(this.config, role).inherited });
      } catch (err) {
        if (err instanceof ConfigError) throw new ConfigError(`admin.persist_file: routers.${role}: ${err.message}`);
        throw err;
      }
    }
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }
}
