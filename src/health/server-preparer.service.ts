import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../config';
import { HttpSessionClosedError } from '../http-session';
import { DEFAULT_KV_HASH_ALGO, ServerRegistry, type ServerState } from '../servers';
import { WorkerClient } from '../worker-client';
import { healthOptionsFrom } from './health-options';

export interface PreparationResult {
  ready: boolean;
  /** The server did not answer at all (no HTTP status): counts toward declaring it dead. */
  unreachable: boolean;
  error?: string;
}

/**
 * Brings a server from `preparing` to `ready`: its /health must answer 200 and its
 * /server_info must be fetched before it gets traffic. Every server added to the registry in
 * `preparing` state is prepared at once, whatever its source (config, etcd, admin API);
 * a failed preparation leaves it preparing and the health monitor retries it on its next round.
 */
@Injectable()
export class ServerPreparer implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger(ServerPreparer.name);
  private readonly inFlight = new Map<string, Promise<PreparationResult>>();
  /** The last failure logged per server, so a server that stays down is not logged every round. */
  private readonly lastLogged = new Map<string, string>();
  private readonly timeoutMs: number;
  private unsubscribe?: () => void;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly registry: ServerRegistry,
    private readonly workers: WorkerClient,
  ) {
    this.timeoutMs = healthOptionsFrom(config).timeoutMs;
  }

  onModuleInit(): void {
    this.unsubscribe = this.registry.onEvent((event) => {
      // Added from any source, or put back through preparation (e.g. an admin resuming a drained server).
      if (event.type !== 'removed' && event.server.status === 'preparing') void this.prepare(event.server);
      if (event.type === 'removed') this.lastLogged.delete(event.server.id);
    });
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  /** Prepares a server in `preparing` state; concurrent calls for one server share one attempt. */
  prepare(server: ServerState): Promise<PreparationResult> {
    const running = this.inFlight.get(server.id);
    if (running) return running;
    const attempt = this.attempt(server).finally(() => this.inFlight.delete(server.id));
    this.inFlight.set(server.id, attempt);
    return attempt;
  }

  private async attempt(server: ServerState): Promise<PreparationResult> {
    if (server.status !== 'preparing') return { ready: server.status === 'ready', unreachable: false };
    let result: PreparationResult;
    try {
      const health = await this.workers.health(server.url, this.timeoutMs);
      server.recordHealth(health);
      if (!health.ok) {
        result = { ready: false, unreachable: health.status === undefined, error: `/health: ${health.error ?? 'failed'}` };
      } else {
        this.recordServerInfo(server, await this.workers.serverInfo(server.url, this.timeoutMs));
        result = { ready: true, unreachable: false };
      }
    } catch (err) {
      // Closed session: the app is starting or stopping, not the server's fault.
      if (err instanceof HttpSessionClosedError) return { ready: false, unreachable: false, error: err.message };
      result = { ready: false, unreachable: false, error: `/server_info: ${(err as Error).message}` };
    }
    // The server may have been removed, drained or prepared otherwise meanwhile.
    if (this.registry.get(server.id) !== server || server.status !== 'preparing') return result;
    if (result.ready) {
      this.lastLogged.delete(server.id);
      server.ejection = undefined;
      this.registry.setStatus(server, 'ready');
    } else if (this.lastLogged.get(server.id) !== result.error) {
      this.lastLogged.set(server.id, result.error!);
      this.logger.warn(`${server.role} server ${server.url} is not ready yet (${result.error}); retrying`);
    }
    return result;
  }

  /** No /server_info (a 404) means the defaults: v1 block hashes, no disaggregated_params; logged once per server. */
  private recordServerInfo(server: ServerState, info: Record<string, unknown> | undefined): void {
    if (info === undefined && !server.serverInfoMissing) {
      server.serverInfoMissing = true;
      this.logger.warn(`${server.role} server ${server.url} has no /server_info (404): using the defaults (${DEFAULT_KV_HASH_ALGO} hashes)`);
    }
    server.serverInfo = info ?? {};
  }
}
