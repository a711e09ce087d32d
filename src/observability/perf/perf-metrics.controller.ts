import { Controller, Get } from '@nestjs/common';
import { PerfMetricsStore, type PerfMetricsEntry } from './perf-metrics.store';

/** GET /perf_metrics as trtllm-serve disaggregated serves it; mounted only when enabled. */
@Controller()
export class PerfMetricsController {
  constructor(private readonly store: PerfMetricsStore) {}

  @Get('perf_metrics')
  perfMetrics(): PerfMetricsEntry[] {
    return this.store.take();
  }
}
