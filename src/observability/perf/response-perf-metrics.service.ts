import { Inject, Injectable } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config';
import type { RequestTimings } from '../../request-events';
import { InFlightRequests } from '../context/in-flight-requests';
import { PerfMetricsJsonl } from './perf-metrics-jsonl.service';
import { ResponsePerfCapture } from './response-perf-capture';
import { steadyNowSeconds } from './steady-clock';
import { asksForMetrics, RETURN_METRICS_HEADER, type DisaggTiming } from './trtllm-metrics-headers';

type ClientHeaders = Readonly<Record<string, string | string[] | undefined>>;

/**
 * TensorRT-LLM's per-response metrics (`return_perf_metrics`, `perf_metrics_output_dir`; see
 * docs/protocol.md "Per-response metrics"). A request gets a capture only when its answer will carry
 * the metrics (the client asked and `return_perf_metrics` is on) or a file records them; every
 * other request pays one check.
 */
@Injectable()
export class ResponsePerfMetrics {
  private readonly expose: boolean;
  private readonly writes: boolean;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly jsonl: PerfMetricsJsonl,
    private readonly inFlight: InFlightRequests,
  ) {
    this.expose = config.return_perf_metrics;
    this.writes = config.perf_metrics_output_dir !== undefined;
  }

  /** The capture of a request whose workers are to be asked for their metrics, or undefined. */
  begin(clientHeaders: ClientHeaders | undefined, requestId: string, disaggRequestId: number): ResponsePerfCapture | undefined {
    const expose = this.expose && asksForMetrics(clientHeaders?.[RETURN_METRICS_HEADER]);
    if (!expose && !this.writes) return undefined;
    return new ResponsePerfCapture(this, expose, requestId, disaggRequestId);
  }

  /** The router's times of a request whose answer is complete, on its steady clock. */
  timing(requestId: string, flowStarted: number, timings: RequestTimings): DisaggTiming {
    const nowMs = performance.now();
    const now = steadyNowSeconds();
    const at = (ms: number): number => now - (nowMs - ms) / 1000;
    const arrivedAt = this.inFlight.get(requestId)?.arrivedAt ?? flowStarted;
    return {
      arrival: at(arrivedAt),
      end: now,
      ctxDispatch: timings.contextStart !== undefined ? at(flowStarted + timings.contextStart) : null,
      firstToken: timings.firstByte !== undefined ? at(flowStarted + timings.firstByte) : null,
    };
  }

  record(record: unknown): void {
    if (this.writes) this.jsonl.submit(record);
  }
}
