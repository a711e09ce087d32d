import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig, type ServerRole } from '../../config';
import { InFlightRequests } from '../context/in-flight-requests';
import { MetricsService } from './metrics.service';
import { TrtllmMetrics } from './trtllm-metrics.service';
import { logsPerRequest } from '../logging/log-levels';
import { RequestEvents, type RequestDoneEvent, type RoutedEvent, type UpstreamFailureEvent } from '../../request-events';

/**
 * Turns RequestEvents into metrics, this router's and TensorRT-LLM's names alike (and, at
 * debug level, one line per request). Listeners run synchronously on the request path, so
 * they only count and observe.
 */
@Injectable()
export class RequestMetricsListener implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('Request');
  private readonly logEachRequest: boolean;

  private readonly onDone = (done: RequestDoneEvent): void => {
    const pre = this.inFlight.preFlowMs(done);
    this.metrics.requestDone(done, pre);
    this.trtllm.requestDone(done, pre);
    if (this.logEachRequest) this.logger.debug({ msg: 'request done', reqId: done.requestId, ...done, preFlowMs: pre });
  };
  private readonly onRouted = (e: RoutedEvent): void => {
    this.metrics.routed(e);
    this.trtllm.routed(e);
  };
  private readonly onFailure = (e: UpstreamFailureEvent): void => this.metrics.upstreamFailure(e);
  private readonly onRetry = (e: { role: ServerRole }): void => {
    this.metrics.retry(e.role);
    this.trtllm.retry(e.role);
  };
  private readonly onRefused = (): void => this.trtllm.refused();

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly events: RequestEvents,
    private readonly metrics: MetricsService,
    private readonly trtllm: TrtllmMetrics,
    private readonly inFlight: InFlightRequests,
  ) {
    this.logEachRequest = logsPerRequest(config.logging.level);
  }

  onModuleInit(): void {
    this.events.on('requestDone', this.onDone);
    this.events.on('routed', this.onRouted);
    this.events.on('upstreamFailure', this.onFailure);
    this.events.on('retry', this.onRetry);
    this.events.on('refused', this.onRefused);
  }

  onModuleDestroy(): void {
    this.events.off('requestDone', this.onDone);
    this.events.off('routed', this.onRouted);
    this.events.off('upstreamFailure', this.onFailure);
    this.events.off('retry', this.onRetry);
    this.events.off('refused', this.onRefused);
  }
}
