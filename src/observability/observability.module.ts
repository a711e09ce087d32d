import { DynamicModule, Module, type Type } from '@nestjs/common';
import type { AppConfig } from '../config';
import { KV_METRICS } from '../kv-cache';
import { KV_REPORT_METRICS } from '../kv-events-zmq';
import { ServersModule } from '../servers';
import { WorkerClientModule } from '../worker-client';
import { InFlightRequests } from './context/in-flight-requests';
import { RequestContextHooks } from './context/request-context.hooks';
import { PayloadLogHooks } from './logging/payload-log.hooks';
import { MetricsController } from './metrics/metrics.controller';
import { MetricsService } from './metrics/metrics.service';
import { TrtllmMetrics } from './metrics/trtllm-metrics.service';
import { RequestMetricsListener } from './metrics/request-metrics.listener';
import { RouteTimingLog } from './metrics/route-timing-log';
import { PerfMetricsController, TrtllmPerfMetricsController } from './perf/perf-metrics.controller';
import { PerfMetricsJsonl } from './perf/perf-metrics-jsonl.service';
import { PerfMetricsStore } from './perf/perf-metrics.store';
import { ResponsePerfMetrics } from './perf/response-perf-metrics.service';
import { TrtllmPerfMetrics } from './perf/trtllm-perf-metrics.service';
import { RequestTracing } from './tracing/request-tracing.service';

/**
 * Metrics (this router's on /metrics, TensorRT-LLM's names added on /prometheus/metrics),
 * request context (request ids in answers and log lines), payload logging when asked for,
 * perf history and TensorRT-LLM's per-response metrics (headers, SSE event, JSONL files). Global, so any module can inject MetricsService
 * to report what only it sees (admission, KV events, discovery). The endpoints exist only
 * when enabled: `metrics.enabled` (default on), `perf_metrics.max_requests` > 0 (this router's format) or `perf_metrics_max_requests` > 0
 * (TensorRT-LLM's).
 */
@Module({})
export class ObservabilityModule {
  static forRoot(config: Pick<AppConfig, 'metrics' | 'perf_metrics' | 'perf_metrics_max_requests'>): DynamicModule {
    const controllers: Type[] = [];
    if (config.metrics.enabled) controllers.push(MetricsController);
    if (config.perf_metrics.max_requests > 0) controllers.push(PerfMetricsController);
    else if (config.perf_metrics_max_requests > 0) controllers.push(TrtllmPerfMetricsController);
    return {
      module: ObservabilityModule,
      global: true,
      imports: [ServersModule, WorkerClientModule],
      controllers,
      providers: [
        InFlightRequests, MetricsService, TrtllmMetrics, RequestMetricsListener, RouteTimingLog, RequestContextHooks, PayloadLogHooks, PerfMetricsStore, TrtllmPerfMetrics, RequestTracing,
        PerfMetricsJsonl, ResponsePerfMetrics,
        // The KV room reports applied events and failed polls through the metrics service.
        { provide: KV_METRICS, useExisting: MetricsService },
        { provide: KV_REPORT_METRICS, useExisting: MetricsService },
      ],
      exports: [MetricsService, PerfMetricsStore, RequestTracing, ResponsePerfMetrics, PerfMetricsJsonl, KV_METRICS, KV_REPORT_METRICS],
    };
  }
}
