import { Inject, Injectable, Logger, Optional } from '@nestjs/common';
import { ConfigError, APP_CONFIG, SERVER_ROLES, type AppConfig, type ServerRole } from '../config';
import { RouterRegistry, RouterPolicyCatalog, routerConfigFor, type RouterSnapshot } from '../routing';
import { CLUSTER_ADMIN_VIEW, singleRouterView, type ClusterAdminView } from '../replicas/cluster-admin-view';
import { ServerRegistry, type ServerState } from '../servers';
import { AdminChangeStore } from './admin-change-store';
import type { AddServerBody, RouterSwitchBody } from './admin-schemas';
import { hostAllowed } from '../common/allowed-hosts';
import { DrainRemover } from './drain-remover.service';
import { redactSecrets } from './redact';
import { HttpApiError, invalidRequest } from '../common';

export interface DrainResult {
  server: Record<string, unknown>;
  /** True once the server is gone (it was idle and removal was asked). */
  removed: boolean;
  remove_when_idle: boolean;
}

export interface RouterView {
  pool: ServerRole;
  type: string;
  args: Record<string, unknown>;
  state: RouterSnapshot;
}

/**
 * What the admin API does, independent of where it is served. This instance is shared with
 * the separate admin app when `admin.port` is set, so it must keep no lifecycle hooks of its
 * own (the admin app would run them on close): those live in DrainRemover and the restorer.
 */
@Injectable()
export class AdminService {
  private readonly logger = new Logger('Admin');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly registry: ServerRegistry,
    private readonly routers: RouterRegistry,
    private readonly policies: RouterPolicyCatalog,
    private readonly store: AdminChangeStore,
    private readonly drains: DrainRemover,
    @Optional() @Inject(CLUSTER_ADMIN_VIEW) private readonly cluster: ClusterAdminView = singleRouterView,
  ) {}

  /** Router replicas, worker poll owners, bus state and lag (`enabled: false` for a single router). */
  clusterView(): Record<string, unknown> {
    return this.cluster.detail();
  }

  listServers(): ServerState[] {
    const order = (s: ServerState): number => SERVER_ROLES.indexOf(s.role);
    return this.registry.list().sort((a, b) => order(a) - order(b) || a.url.localeCompare(b.url));
  }

  server(id: string): ServerState {
    const server = this.registry.get(id);
    if (!server) throw new HttpApiError(404, `no server with id '${id}'`, { param: 'id', code: 'server_not_found' });
    return server;
  }

  async addServer(body: AddServerBody): Promise<ServerState> {
    const hostname = new URL(body.url).hostname;
    if (!hostAllowed(hostname, this.config.admin.allowed_hosts)) {
      const why = this.config.admin.allowed_hosts ? 'is not in admin.allowed_hosts' : 'is link-local (a metadata address): list it in admin.allowed_hosts to allow it';
      throw new HttpApiError(403, `host '${hostname}' ${why}`, { param: 'url', code: 'host_not_allowed' });
    }
    const existing = this.registry.findByUrl(body.role, body.url);
    if (existing) {
      throw new HttpApiError(409, `${body.role} server ${existing.url} is already registered (id '${existing.id}', state ${existing.status})`, {
        param: 'url',
        code: 'server_exists',
      });
    }
    // Preparation (server_info, health) and the switch to `ready` follow the registry's event.
    const server = this.registry.add({ url: body.url, role: body.role, source: 'admin' });
    await this.saved(() => this.store.serverAdded(server));
    return server;
  }

  /** No new requests go to the server; the ones in flight finish there. */
  drain(id: string, removeWhenIdle: boolean): DrainResult {
    const server = this.server(id);
    this.registry.setStatus(server, 'draining');
    if (removeWhenIdle) {
      this.drains.removeWhenIdle(server, (removed) => {
        this.logger.log(`drained ${removed.role} server ${removed.url} removed`);
        this.store.serverRemoved(removed).catch((err: Error) => this.logger.error(`cannot save the removal of ${removed.url}: ${err.message}`));
      });
    }
    return { server: server.toJSON(), removed: this.registry.get(id) === undefined, remove_when_idle: removeWhenIdle };
  }

  /**
   * Puts a drained server back through preparation (and cancels a pending removal): health
   * checks decide when it is ready again, so a server that went bad meanwhile stays out.
   */
  resume(id: string): ServerState {
    const server = this.server(id);
    if (server.status !== 'draining') {
      throw new HttpApiError(409, `${server.role} server ${server.url} is ${server.status}, not draining`, { code: 'not_draining' });
    }
    this.registry.setStatus(server, 'preparing');
    return server;
  }

  async removeServer(id: string, force: boolean): Promise<ServerState> {
    const server = this.server(id);
    if (server.activeRequests > 0 && !force) {
      throw new HttpApiError(409, `${server.role} server ${server.url} has ${server.activeRequests} request(s) in flight; drain it first or pass force=true`, {
        param: 'force',
        code: 'server_busy',
      });
    }
    this.registry.remove(server);
    await this.saved(() => this.store.serverRemoved(server));
    return server;
  }

  availablePolicies(): string[] {
    return this.policies.names();
  }

  routerViews(): RouterView[] {
    return SERVER_ROLES.map((pool) => this.routerView(pool));
  }

  routerView(pool: ServerRole): RouterView {
    const router = this.routers.router(pool);
    const spec = this.routers.spec(pool);
    return { pool, type: router.policy, args: { ...(spec?.args ?? router.args) }, state: router.snapshot() };
  }

  /** Switches the pool's policy; requests in flight finish on the router that started them. */
  async switchRouter(pool: ServerRole, body: RouterSwitchBody): Promise<RouterView> {
    const { type, ...args } = body;
    if (!this.policies.has(type)) {
      throw invalidRequest(`unknown router type '${type}'; available: ${this.policies.names().join(', ')}`, 'type', 'unknown_router_type');
    }
    const inherited = routerConfigFor(this.config, pool).inherited;
    try {
      await this.routers.switchPolicy(pool, { type, args, inherited });
    } catch (err) {
      if (err instanceof ConfigError) throw invalidRequest(err.message, 'args', 'invalid_router_args');
      throw err;
    }
    await this.saved(() => this.store.routerSwitched(pool, body));
    return this.routerView(pool);
  }

  /** The config the router started with, secrets redacted, and the changes made since. */
  effectiveConfig(): Record<string, unknown> {
    return {
      config: redactSecrets(this.config) as Record<string, unknown>,
      admin_changes: this.store.current(),
      persist_file: this.store.persistFile ?? null,
    };
  }

  private async saved(write: () => Promise<void>): Promise<void> {
    try {
      await write();
    } catch (err) {
      throw new HttpApiError(500, `the change is in effect but could not be saved to admin.persist_file: ${(err as Error).message}`, { code: 'persist_failed' });
    }
  }
}
