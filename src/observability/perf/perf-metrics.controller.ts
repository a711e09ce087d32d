import { Controller, Get } from '@nestjs/common';
import { PerfMetricsStore, type PerfMetricsEntry } from './perf-metrics.store';
import { TrtllmPerfMetrics, type TrtllmPerfEntry } from './trtllm-perf-metrics.service';

/** GET /perf_metrics as trtllm-serve disaggregated serves it; mounted only when enabled. */
@Controller()
export class PerfMetricsController {
  constructor(private readonly store: PerfMetricsStore) {}

  @Get('perf_metrics')
  perfMetrics(): PerfMetricsEntry[] {
    return this.store.take();
  }
}

/** GET /perf_metrics in TensorRT-LLM's format (`perf_metrics_max_requests`). */
@Controller()
export class TrtllmPerfMetricsController {
  constructor(private readonly perf: TrtllmPerfMetrics) {}

  @Get('perf_metrics')
  perfMetrics(): Promise<TrtllmPerfEntry[]> {
    return this.perf.collect();
  }
}
