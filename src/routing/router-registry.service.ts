import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, SERVER_ROLES, type AppConfig, type ServerRole } from '../config';
import { ServerRegistry, type ServerEvent } from '../servers';
import type { Router } from './router.interface';
import { RouterPolicyCatalog } from './router-policy-catalog.service';
import { routerConfigFor, type RouterConfig } from './router-config';

/**
 * The live router of each pool. It feeds routers the `ready` servers of the server registry and
 * swaps policies at runtime: requests keep the router that started them, so their
 * finishRequest reaches it even after a switch.
 */
@Injectable()
export class RouterRegistry implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(RouterRegistry.name);
  private readonly routers = new Map<ServerRole, Router>();
  private readonly specs = new Map<ServerRole, RouterConfig>();
  private unsubscribe?: () => void;

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly registry: RouterPolicyCatalog,
    private readonly servers: ServerRegistry,
  ) {}

  async onModuleInit(): Promise<void> {
    for (const role of SERVER_ROLES) {
      const spec = routerConfigFor(this.config, role);
      // A pool whose policy cannot start refuses the start: the other pool's router lets go of what it holds (a bound port).
      const router = await this.registry.create(role, spec, undefined, true).catch(async (err: unknown) => {
        await Promise.all([...this.routers.values()].map((r) => r.close().catch(() => undefined)));
        throw err;
      });
      router.onServersUpdated(this.servers.ready(role));
      this.routers.set(role, router);
      this.specs.set(role, spec);
      this.logger.log(`${role} pool routed by ${spec.type}`);
    }
    this.unsubscribe = this.servers.onEvent((event) => this.follow(event));
  }

  async onModuleDestroy(): Promise<void> {
    this.unsubscribe?.();
    await Promise.all([...this.routers.values()].map((r) => r.close()));
  }

  router(role: ServerRole): Router {
    const router = this.routers.get(role);
    if (!router) throw new Error(`the ${role} router is not initialised yet`);
    return router;
  }

  spec(role: ServerRole): RouterConfig | undefined {
    return this.specs.get(role);
  }

  /** Replaces a pool's policy; in-flight requests finish on the router that started them. */
  async switchPolicy(role: ServerRole, spec: RouterConfig): Promise<Router> {
    const next = await this.registry.create(role, spec, `routers.${role}`);
    next.onServersUpdated(this.servers.ready(role));
    const previous = this.routers.get(role);
    this.routers.set(role, next);
    this.specs.set(role, spec);
    this.logger.log(`${role} pool switched from ${previous?.policy ?? 'none'} to ${spec.type}`);
    await previous?.close();
    return next;
  }

  private follow(event: ServerEvent): void {
    const router = this.routers.get(event.server.role);
    if (!router) return;
    if (event.type !== 'removed' && event.server.status === 'ready') router.addServer(event.server);
    else router.removeServer(event.server);
  }
}
