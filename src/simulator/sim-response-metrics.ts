import type * as http from 'node:http';
import {
  asksForMetrics, CTX_CHUNK_METRICS_HEADER, durationItem, elapsedMs, limitMetricsHeaders, metricsSseEvent, RETURN_METRICS_HEADER, SERVER_TIMING_HEADER, START_END_TIME_HEADER,
  STEP_METRICS_HEADER, timestampItem, type MetricsHeaders,
} from '../observability/perf/trtllm-metrics-headers';
import type { GenerationPlan } from './generation-plan';
import type { SimState } from './sim-state';

/**
 * A worker's answer to `X-TRTLLM-return-metrics: 1`, as the newest trtllm-serve worker gives it
 * (docs/protocol.md "Per-response metrics"): `server_*` queue/ttft/e2e durations, `server-start`/`-end`
 * times on its (offset) steady clock, one step per generated token and one context chunk
 * for a prefill. Their durations follow the latency model.
 */
export class SimResponseMetrics {
  private scheduledAt: number | undefined;
  private firstTokenAt: number | undefined;

  private constructor(
    private readonly state: SimState,
    private readonly plan: GenerationPlan,
  ) {}

  /** The request's metrics when it asked for them, else undefined. */
  static asked(state: SimState, req: http.IncomingMessage, plan: GenerationPlan): SimResponseMetrics | undefined {
    return asksForMetrics(req.headers[RETURN_METRICS_HEADER]) ? new SimResponseMetrics(state, plan) : undefined;
  }

  scheduled(): void {
    this.scheduledAt ??= this.state.perf.now();
  }

  firstToken(): void {
    this.scheduled();
    this.firstTokenAt ??= this.state.perf.now();
  }

  /** The headers of a non-streamed answer. */
  headers(): Record<string, string> {
    return limitMetricsHeaders(this.build()) as Record<string, string>;
  }

  /** The event written after `data: [DONE]`. */
  event(): string {
    return metricsSseEvent(this.build());
  }

  private build(): MetricsHeaders {
    this.firstToken();
    const arrival = this.plan.arrivedAt;
    const end = this.state.perf.now();
    const timing = [
      ['server_queue', elapsedMs(arrival, this.scheduledAt)],
      ['server_ttft', elapsedMs(arrival, this.firstTokenAt)],
      ['server_e2e', elapsedMs(arrival, end)],
    ] as const;
    const lat = this.state.latency;
    const type = this.plan.sr.type;
    const steps: string[] = [];
    const nSteps = type === 'context_only' ? 1 : this.plan.decodeSteps + 1;
    for (let iter = 0; iter < nSteps; iter++) steps.push(...phaseItems(`server-step-${iter}`, lat.decodeMsPerToken));
    const headers: MetricsHeaders = {
      [SERVER_TIMING_HEADER]: timing.filter(([, ms]) => ms !== undefined).map(([name, ms]) => durationItem(name, ms!)).join(', '),
      [START_END_TIME_HEADER]: `${timestampItem('server-start', arrival)}, ${timestampItem('server-end', end)}`,
      [STEP_METRICS_HEADER]: steps.join(', '),
    };
    // A generation_only request received its KV cache: no prefill, no context chunk.
    if (type !== 'generation_only') headers[CTX_CHUNK_METRICS_HEADER] = phaseItems('server-ctx-chunk-0', this.plan.initialDelayMs).join(', ');
    return headers;
  }
}

/** A forward/sample split of one step's time, as the worker's step and chunk records hold it. */
function phaseItems(prefix: string, ms: number): string[] {
  const forward = ms * 0.8;
  const sample = ms - forward;
  return [
    durationItem(`${prefix}-forward`, forward),
    durationItem(`${prefix}-sample`, sample),
    durationItem(`${prefix}-gpu-forward`, forward * 0.9),
    durationItem(`${prefix}-gpu-sample`, sample * 0.9),
  ];
}
