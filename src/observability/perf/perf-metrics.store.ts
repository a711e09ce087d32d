import { Inject, Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config';
import { InFlightRequests } from '../context/in-flight-requests';
import { phaseDurations } from '../metrics/request-timings';
import { INFERENCE_PATH } from '../../common';
import { RequestEvents, type RequestDoneEvent } from '../../request-events';

/**
 * One request's timings as GET /perf_metrics returns them. The first fields follow
 * TensorRT-LLM's disaggregated server (its times are epoch seconds here); the rest are this
 * router's phases, in seconds.
 */
export interface PerfMetricsEntry {
  request_id: string;
  ctx_server: string | null;
  gen_server: string | null;
  disagg_server_arrival_time: number;
  disagg_server_first_token_time: number | null;
  endpoint: string;
  stream: boolean;
  status: number;
  mode: string;
  retries: number;
  error_kind: string | null;
  phases: {
    e2e: number;
    pre_flow: number;
    context: number | null;
    time_to_first_token: number | null;
    generation: number | null;
    router_overhead: number;
  };
}


/**
 * The last `perf_metrics.max_requests` finished requests. Reading takes them (as
 * TensorRT-LLM's collector does), so a poller sees each request once.
 */
@Injectable()
export class PerfMetricsStore implements OnModuleInit, OnModuleDestroy {
  readonly capacity: number;
  private ring: (PerfMetricsEntry | undefined)[];
  private next = 0;
  private size = 0;

  private readonly onDone = (done: RequestDoneEvent): void => this.record(done, this.inFlight.preFlowMs(done));

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly events: RequestEvents,
    private readonly inFlight: InFlightRequests,
  ) {
    this.capacity = config.perf_metrics.max_requests;
    this.ring = new Array<PerfMetricsEntry | undefined>(this.capacity);
  }

  get enabled(): boolean {
    return this.capacity > 0;
  }

  onModuleInit(): void {
    if (this.enabled) this.events.on('requestDone', this.onDone);
  }

  onModuleDestroy(): void {
    this.events.off('requestDone', this.onDone);
  }

  record(done: RequestDoneEvent, preFlow: number): void {
    if (!this.enabled) return;
    const d = phaseDurations(done, preFlow);
    const arrival = (done.startedAt - preFlow) / 1000;
    this.ring[this.next] = {
      request_id: done.requestId,
      ctx_server: done.contextServer ?? null,
      gen_server: done.generationServer ?? null,
      disagg_server_arrival_time: arrival,
      disagg_server_first_token_time: d.firstToken !== undefined ? arrival + d.firstToken : null,
      endpoint: INFERENCE_PATH[done.kind],
      stream: done.stream,
      status: done.status,
      mode: done.mode,
      retries: done.retries,
      error_kind: done.errorKind ?? null,
      phases: {
        e2e: d.e2e,
        pre_flow: d.preFlow,
        context: d.context ?? null,
        time_to_first_token: d.firstToken ?? null,
        generation: d.generation ?? null,
        router_overhead: d.overhead,
      },
    };
    this.next = (this.next + 1) % this.capacity;
    this.size = Math.min(this.size + 1, this.capacity);
  }

  /** Oldest first; empties the store. */
  take(): PerfMetricsEntry[] {
    const out: PerfMetricsEntry[] = [];
    const start = (this.next - this.size + this.capacity) % this.capacity;
    for (let i = 0; i < this.size; i++) out.push(this.ring[(start + i) % this.capacity]!);
    this.ring = new Array<PerfMetricsEntry | undefined>(this.capacity);
    this.size = 0;
    this.next = 0;
    return out;
  }
}
