import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { APP_CONFIG, type AppConfig } from '../config';
import { HttpSessionClosedError } from '../http-session';
import { ServerRegistry, type HealthResult, type ServerState } from '../servers';
import { healthOptionsFrom, type HealthOptions } from './health-options';
import { OutlierDetector } from './outlier-detector.service';
import { ejectServer } from './rotation';
import { ServerPreparer } from './server-preparer.service';
import { WorkerClient } from '../worker-client';

interface CheckerEvents {
  /** Unreachable for `failure_threshold` checks in a row (reported once per streak). */
  dead: [ServerState];
}

/**
 * Active health checking (as Envoy names it): every `interval_s` each server's /health is
 * checked; `failure_threshold` failures in a row take a ready server out of rotation (status
 * `unhealthy`; in-flight requests finish), a success brings it back when its circuit breaker
 * (see OutlierDetector) allows. Servers in `preparing` are prepared again; `draining` ones
 * are never touched.
 */
@Injectable()
export class ActiveHealthChecker implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(ActiveHealthChecker.name);
  private readonly options: HealthOptions;
  private readonly unreachableStreak = new Map<string, number>();
  private readonly checking = new Set<string>();
  private readonly emitter = new EventEmitter<CheckerEvents>();
  private unsubscribe?: () => void;
  private timer?: NodeJS.Timeout;
  /** Checks in progress, awaited at shutdown. */
  private readonly running = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly registry: ServerRegistry,
    private readonly preparer: ServerPreparer,
    private readonly outliers: OutlierDetector,
    private readonly workers: WorkerClient,
  ) {
    this.options = healthOptionsFrom(config);
    this.emitter.setMaxListeners(0);
  }

  onApplicationBootstrap(): void {
    this.unsubscribe = this.registry.onEvent((event) => {
      if (event.type === 'removed') this.unreachableStreak.delete(event.server.id);
    });
    this.schedule();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    this.unsubscribe?.();
    // Let running checks end (each is bounded by timeout_s).
    await Promise.all([...this.running]);
  }

  /** A server found unreachable `failure_threshold` times in a row (discovery removes its key). */
  onDead(listener: (server: ServerState) => void): () => void {
    this.emitter.on('dead', listener);
    return () => this.emitter.off('dead', listener);
  }

  /** Runs one round of checks now (tests and admin use it; the timer runs it every interval). */
  async checkAll(): Promise<void> {
    await Promise.all(
      this.registry.list().map((server) => {
        const check = this.checkOne(server);
        this.running.add(check);
        return check.finally(() => this.running.delete(check));
      }),
    );
  }

  /**
   * A round every interval, whatever the previous one is doing: a server whose check is still
   * running (a hung server, up to timeout_s) is skipped, and does not delay the others.
   */
  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      void this.checkAll();
      this.schedule();
    }, this.options.intervalMs);
  }

  /** The one call to the worker: its /health, recorded on the server's state. */
  private async probe(server: ServerState): Promise<HealthResult> {
    const result = await this.workers.health(server.url, this.options.timeoutMs);
    server.recordHealth(result);
    return result;
  }

  private async checkOne(server: ServerState): Promise<void> {
    if (this.stopped || this.checking.has(server.id)) return;
    this.checking.add(server.id);
    try {
      if (server.status === 'preparing') {
        const prepared = await this.preparer.prepare(server);
        this.trackReachability(server, !prepared.unreachable);
        return;
      }
      const result = await this.probe(server);
      if (this.stopped || this.registry.get(server.id) !== server) return;
      this.apply(server, result);
    } catch (err) {
      if (!(err instanceof HttpSessionClosedError)) this.logger.error(`health check of ${server.url} failed: ${(err as Error).message}`);
    } finally {
      this.checking.delete(server.id);
    }
  }

  private apply(server: ServerState, result: HealthResult): void {
    if (server.status === 'draining') return;
    this.trackReachability(server, result.status !== undefined);
    if (server.status === 'ready') {
      if (!result.ok && server.consecutiveHealthFailures >= this.options.failureThreshold) {
        ejectServer(this.registry, this.logger, server, 'health_check', `${server.consecutiveHealthFailures} failed checks: ${result.error ?? 'failed'}`);
      }
      return;
    }
    if (server.status !== 'unhealthy') return;
    if (this.outliers.allowsReadmission(server, result.ok) && result.ok) this.readmit(server);
  }

  private trackReachability(server: ServerState, reachable: boolean): void {
    if (reachable) {
      this.unreachableStreak.delete(server.id);
      return;
    }
    const streak = (this.unreachableStreak.get(server.id) ?? 0) + 1;
    this.unreachableStreak.set(server.id, streak);
    if (streak === this.options.failureThreshold && server.status !== 'draining') {
      this.logger.warn(`${server.role} server ${server.url} is unreachable (${streak} checks in a row): declared dead`);
      this.emitter.emit('dead', server);
    }
  }

  private readmit(server: ServerState): void {
    this.outliers.readmitted(server);
    const was = server.ejection?.reason ?? 'unhealthy';
    server.ejection = undefined;
    this.logger.log(`${server.role} server ${server.url} is healthy again (was out for ${was}): back in rotation`);
    this.registry.setStatus(server, 'ready');
  }
}
