import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { EventEmitter } from 'node:events';
import { APP_CONFIG, type AppConfig } from '../config';
import { HttpSessionClosedError } from '../http-session';
import { ServerRegistry, type EjectionInfo, type HealthResult, type ServerState } from '../servers';
import { WorkerClient } from '../worker-client';
import { CircuitBreaker } from './circuit-breaker';
import { healthOptionsFrom, type HealthOptions } from './health-options';
import { ServerPreparer } from './server-preparer.service';
import type { UpstreamFailureKind } from '../common';
import { RequestEvents, type RequestDoneEvent, type UpstreamFailureEvent } from '../request-events';

/** Request failures that count toward a server's circuit breaker (a client leaving does not). */
const BREAKER_KINDS: ReadonlySet<UpstreamFailureKind> = new Set(['status_5xx', 'reset', 'timeout', 'connect']);

interface MonitorEvents {
  /** Unreachable for `failure_threshold` checks in a row (reported once per streak). */
  dead: [ServerState];
}

/**
 * Keeps the rotation to servers that work. Active: every `interval_s` each server's /health
 * is checked; `failure_threshold` failures in a row take a ready server out of rotation
 * (status `unhealthy`; in-flight requests finish), a success brings it back. Passive: a
 * refused connection on a real request ejects the server at once, and consecutive request
 * failures open its circuit breaker for a cool-down, after which the next successful check
 * readmits it. Servers in `preparing` are prepared again; `draining` ones are never touched.
 */
@Injectable()
export class HealthMonitor implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(HealthMonitor.name);
  private readonly options: HealthOptions;
  private readonly breakers = new Map<string, CircuitBreaker>();
  private readonly unreachableStreak = new Map<string, number>();
  /** Refused connections in a row on real requests, per server. */
  private readonly connectStreak = new Map<string, number>();
  private readonly checking = new Set<string>();
  private readonly emitter = new EventEmitter<MonitorEvents>();
  private readonly unsubscribe: Array<() => void> = [];
  private timer?: NodeJS.Timeout;
  /** Checks in progress, awaited at shutdown. */
  private readonly running = new Set<Promise<void>>();
  private stopped = false;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly registry: ServerRegistry,
    private readonly preparer: ServerPreparer,
    private readonly requests: RequestEvents,
    private readonly workers: WorkerClient,
  ) {
    this.options = healthOptionsFrom(config);
    this.emitter.setMaxListeners(0);
  }

  onApplicationBootstrap(): void {
    const onFailure = (e: UpstreamFailureEvent): void => this.onUpstreamFailure(e);
    const onDone = (e: RequestDoneEvent): void => this.onRequestDone(e);
    this.requests.on('upstreamFailure', onFailure);
    this.requests.on('requestDone', onDone);
    this.unsubscribe.push(
      () => this.requests.off('upstreamFailure', onFailure),
      () => this.requests.off('requestDone', onDone),
      this.registry.onEvent((event) => {
        const id = event.server.id;
        if (event.type === 'removed') {
          this.breakers.delete(id);
          this.unreachableStreak.delete(id);
          this.connectStreak.delete(id);
        } else if (event.type === 'status' && event.server.status === 'ready' && this.breakers.get(id)?.state !== 'closed') {
          // Made ready past the breaker (prepared again after a drain): a fresh start.
          this.breakers.delete(id);
          event.server.circuit = undefined;
        }
      }),
    );
    this.schedule();
  }

  async onModuleDestroy(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    for (const off of this.unsubscribe.splice(0)) off();
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

  breakerOf(server: ServerState): CircuitBreaker | undefined {
    return this.breakers.get(server.id);
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

  private async checkOne(server: ServerState): Promise<void> {
    if (this.stopped || this.checking.has(server.id)) return;
    this.checking.add(server.id);
    try {
      if (server.status === 'preparing') {
        const prepared = await this.preparer.prepare(server);
        this.trackReachability(server, !prepared.unreachable);
        return;
      }
      const result = await this.workers.health(server.url, this.options.timeoutMs);
      server.recordHealth(result);
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
        this.eject(server, 'health_check', `${server.consecutiveHealthFailures} failed checks: ${result.error ?? 'failed'}`);
      }
      return;
    }
    if (server.status !== 'unhealthy') return;
    const breaker = this.breakers.get(server.id);
    const allowed = breaker ? breaker.allowsReadmission(result.ok) : true;
    if (breaker) server.circuit = breaker.snapshot();
    if (result.ok && allowed) this.readmit(server);
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

  private onUpstreamFailure(e: UpstreamFailureEvent): void {
    const server = e.server;
    if (this.registry.get(server.id) !== server) return;
    if (e.kind === 'connect' && this.options.ejectOnConnectFailure && server.status === 'ready') {
      // The last ready server of its pool is ejected on a second refusal in a row only: the
      // request retries it after a backoff, and one hiccup must not empty the pool.
      const streak = (this.connectStreak.get(server.id) ?? 0) + 1;
      this.connectStreak.set(server.id, streak);
      if (streak >= 2 || this.registry.ready(server.role).length > 1) this.eject(server, 'connect_failed', e.detail);
    }
    if (!this.options.breaker.enabled || !BREAKER_KINDS.has(e.kind)) return;
    let breaker = this.breakers.get(server.id);
    if (!breaker) {
      breaker = new CircuitBreaker(this.options.breaker);
      this.breakers.set(server.id, breaker);
    }
    const tripped = breaker.recordFailure();
    server.circuit = breaker.snapshot();
    if (tripped && server.status === 'ready') {
      this.eject(server, 'circuit_open', `${breaker.consecutiveFailures} failed requests in a row, last: ${e.kind} ${e.detail}`.slice(0, 300));
    }
  }

  private onRequestDone(e: RequestDoneEvent): void {
    if (e.status >= 500) return;
    if (this.connectStreak.size) {
      if (e.contextServer) this.connectStreak.delete(this.registry.findByUrl('context', e.contextServer)?.id ?? '');
      if (e.generationServer) this.connectStreak.delete(this.registry.findByUrl('generation', e.generationServer)?.id ?? '');
    }
    if (this.breakers.size === 0) return;
    this.recordSuccess(e.contextServer ? this.registry.findByUrl('context', e.contextServer) : undefined);
    this.recordSuccess(e.generationServer ? this.registry.findByUrl('generation', e.generationServer) : undefined);
  }

  private recordSuccess(server: ServerState | undefined): void {
    const breaker = server && this.breakers.get(server.id);
    if (!breaker || breaker.consecutiveFailures === 0) return;
    breaker.recordSuccess();
    server.circuit = breaker.snapshot();
  }

  private eject(server: ServerState, reason: EjectionInfo['reason'], detail: string): void {
    server.ejection = { reason, since: Date.now(), detail };
    this.logger.warn(`${server.role} server ${server.url} taken out of rotation (${reason}): ${detail}`);
    this.registry.setStatus(server, 'unhealthy');
  }

  private readmit(server: ServerState): void {
    this.connectStreak.delete(server.id);
    const was = server.ejection?.reason ?? 'unhealthy';
    server.ejection = undefined;
    this.logger.log(`${server.role} server ${server.url} is healthy again (was out for ${was}): back in rotation`);
    this.registry.setStatus(server, 'ready');
  }
}
