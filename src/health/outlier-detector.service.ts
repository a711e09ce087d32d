import { Inject, Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { UpstreamFailureKind } from '../common';
import { APP_CONFIG, type AppConfig } from '../config';
import { RequestEvents, type RequestDoneEvent, type UpstreamFailureEvent } from '../request-events';
import { ServerRegistry, type ServerState } from '../servers';
import { CircuitBreaker } from './circuit-breaker';
import { healthOptionsFrom, type HealthOptions } from './health-options';
import { ejectServer } from './rotation';

/** Request failures that count toward a server's circuit breaker (a client leaving does not). */
const BREAKER_KINDS: ReadonlySet<UpstreamFailureKind> = new Set(['status_5xx', 'reset', 'timeout', 'connect']);

/**
 * Outlier detection (passive health checking, as Envoy names it): judges servers by the real
 * requests they serve. A refused connection ejects a ready server at once; consecutive
 * request failures open its circuit breaker for a cool-down, after which the active checks'
 * next success readmits it.
 */
@Injectable()
export class OutlierDetector implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(OutlierDetector.name);
  private readonly options: HealthOptions;
  private readonly breakers = new Map<string, CircuitBreaker>();
  /** Refused connections in a row on real requests, per server. */
  private readonly connectStreak = new Map<string, number>();
  private readonly unsubscribe: Array<() => void> = [];
  /** Servers readmitted past their breaker as their pool's last one (logged once each). */
  private readonly panicked = new Set<string>();

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly registry: ServerRegistry,
    private readonly requests: RequestEvents,
  ) {
    this.options = healthOptionsFrom(config);
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
          this.connectStreak.delete(id);
          this.panicked.delete(id);
        } else if (event.type === 'status' && event.server.status === 'ready' && this.breakers.get(id)?.state !== 'closed') {
          // Made ready past the breaker (prepared again after a drain): a fresh start.
          this.breakers.delete(id);
          event.server.circuit = undefined;
        }
      }),
    );
  }

  onModuleDestroy(): void {
    for (const off of this.unsubscribe.splice(0)) off();
  }

  breakerOf(server: ServerState): CircuitBreaker | undefined {
    return this.breakers.get(server.id);
  }

  /**
   * Whether an unhealthy server whose health check gave `healthy` may come back (its breaker
   * decides). A healthy server whose pool has no other ready one comes back before its
   * cool-down ends (Envoy's panic threshold, at its simplest): holding it out only turns every
   * request into a 503, while readmitted it may serve them (a restarted worker does).
   */
  allowsReadmission(server: ServerState, healthy: boolean): boolean {
    const breaker = this.breakers.get(server.id);
    if (!breaker) return true;
    const allowed = breaker.allowsReadmission(healthy);
    if (!allowed && healthy && this.registry.ready(server.role).length === 0) {
      this.breakers.delete(server.id);
      server.circuit = undefined;
      // Once per server: one that passes /health but fails its requests would say it every round.
      if (!this.panicked.has(server.id)) this.logger.warn(`${server.role} server ${server.url} readmitted before its breaker's cool-down: it is healthy and its pool has no other ready server`);
      this.panicked.add(server.id);
      return true;
    }
    server.circuit = breaker.snapshot();
    return allowed;
  }

  /** A server back in rotation starts its refused-connection count afresh. */
  readmitted(server: ServerState): void {
    this.connectStreak.delete(server.id);
  }

  private onUpstreamFailure(e: UpstreamFailureEvent): void {
    const server = e.server;
    if (this.registry.get(server.id) !== server) return;
    if (e.kind === 'connect' && this.options.ejectOnConnectFailure && server.status === 'ready') {
      // The last ready server of its pool is ejected on a second refusal in a row only: the
      // request retries it after a backoff, and one hiccup must not empty the pool.
      const streak = (this.connectStreak.get(server.id) ?? 0) + 1;
      this.connectStreak.set(server.id, streak);
      if (streak >= 2 || this.registry.ready(server.role).length > 1) ejectServer(this.registry, this.logger, server, 'connect_failed', e.detail);
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
      const detail = `${breaker.consecutiveFailures} failed requests in a row, last: ${e.kind} ${e.detail}`.slice(0, 300);
      ejectServer(this.registry, this.logger, server, 'circuit_open', detail);
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
}
