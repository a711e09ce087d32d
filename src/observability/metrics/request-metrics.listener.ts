import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { ROUTER_CONFIG, type RouterConfig, type ServerRole } from '../../config';
import { RequestEvents, type RequestDoneEvent, type RoutedEvent, type UpstreamFailureEvent } from '../../disagg/request-events';
import { currentRequestContext } from '../context/request-context';
import { MetricsService } from './metrics.service';

/** Time between a request's arrival and the flow's start, from the request context. */
export function preFlowMs(done: RequestDoneEvent): number {
  const ctx = currentRequestContext();
  if (!ctx) return 0;
  // requestDone is emitted synchronously at the flow's end: now - end = the flow's start.
  return Math.max(0, performance.now() - done.timings.end - ctx.arrivedAt);
}

/**
 * Turns RequestEvents into metrics (and, at debug level, one line per request). Listeners
 * run synchronously on the request path, so they only count and observe.
 */
@Injectable()
export class RequestMetricsListener implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Request');
  private readonly logEachRequest: boolean;

  private readonly onDone = (done: RequestDoneEvent): void => {
    const pre = preFlowMs(done);
    this.metrics.requestDone(done, pre);
    if (this.logEachRequest) this.logger.debug({ msg: 'request done', ...done, preFlowMs: pre });
  };
  private readonly onRouted = (e: RoutedEvent): void => this.metrics.routed(e);
  private readonly onFailure = (e: UpstreamFailureEvent): void => this.metrics.upstreamFailure(e);
  private readonly onRetry = (e: { role: ServerRole }): void => this.metrics.retry(e.role);

  constructor(
    @Inject(ROUTER_CONFIG) config: RouterConfig,
    private readonly events: RequestEvents,
    private readonly metrics: MetricsService,
  ) {
    this.logEachRequest = config.logging.level === 'debug' || config.logging.level === 'trace';
  }

  onModuleInit(): void {
    this.events.on('requestDone', this.onDone);
    this.events.on('routed', this.onRouted);
    this.events.on('upstreamFailure', this.onFailure);
    this.events.on('retry', this.onRetry);
  }

  onModuleDestroy(): void {
    this.events.off('requestDone', this.onDone);
    this.events.off('routed', this.onRouted);
    this.events.off('upstreamFailure', this.onFailure);
    this.events.off('retry', this.onRetry);
  }
}
