import type { RequestTimings } from '../../request-events';
import { MetricsEventStripper } from './metrics-event-stripper';
import type { ResponsePerfMetrics } from './response-perf-metrics.service';
import {
  disaggMetricsHeaders, limitMetricsHeaders, metricsSseEvent, type DisaggTiming, type MetricsHeaderName, type MetricsHeaders, type WorkerPhase, type WorkerPhaseName, workerPhaseFrom,
} from './trtllm-metrics-headers';

type ResponseHeaders = Readonly<Record<string, string | string[] | undefined>>;

interface WorkerPart {
  server: string;
  requestId: string;
  phase: WorkerPhase;
}

/**
 * One request's metrics on their way: the workers' parts as their answers bring them, then,
 * once the answer is complete, the client's headers or SSE event and the JSONL record.
 */
export class ResponsePerfCapture {
  private ctx: WorkerPart | undefined;
  private gen: WorkerPart | undefined;
  private ctxServer = '';
  private genServer = '';
  private stripper: MetricsEventStripper | undefined;

  constructor(
    private readonly owner: ResponsePerfMetrics,
    /** The client asked (X-TRTLLM-return-metrics: 1) and return_perf_metrics is on. */
    readonly expose: boolean,
    private readonly requestId: string,
    private readonly disaggRequestId: number,
  ) {}

  /** A worker's answer head: its metrics headers, if it sent them (`url` as the router knows the server). */
  fromHeaders(role: WorkerPhaseName, url: string, headers: ResponseHeaders): void {
    const server = hostPort(url);
    if (role === 'ctx') this.ctxServer = server;
    else this.genServer = server;
    const phase = workerPhaseFrom((name) => headers[name.toLowerCase()], role);
    if (phase) this.setPart(role, { server, requestId: String(this.disaggRequestId), phase });
  }

  /** Takes the worker's metrics event out of the generation stream (see MetricsEventStripper). */
  streamStripper(): MetricsEventStripper {
    return (this.stripper = new MetricsEventStripper());
  }

  /** Reads the event the stripper kept, once the generation stream ended. */
  fromStreamEvent(url: string): void {
    this.genServer = hostPort(url);
    const data = this.stripper?.eventData();
    if (data === undefined) return;
    let json: unknown;
    try {
      json = JSON.parse(data);
    } catch {
      return;
    }
    if (typeof json !== 'object' || json === null) return;
    const fields = json as Partial<Record<MetricsHeaderName, unknown>>;
    const phase = workerPhaseFrom((name) => fields[name], 'gen');
    // As TensorRT-LLM: the event's record carries no request id.
    if (phase) this.gen = { server: this.genServer, requestId: '', phase };
  }

  /** The complete answer's headers (non-streamed), within the payload budget; records the request. */
  finishHeaders(flowStarted: number, timings: RequestTimings): MetricsHeaders | undefined {
    const headers = this.finish(flowStarted, timings);
    return this.expose ? limitMetricsHeaders(headers) : undefined;
  }

  /** The event that ends the stream ('' when the client did not ask); records the request. */
  finishEvent(flowStarted: number, timings: RequestTimings): string {
    const headers = this.finish(flowStarted, timings);
    return this.expose ? metricsSseEvent(headers) : '';
  }

  private finish(flowStarted: number, timings: RequestTimings): MetricsHeaders {
    const t = this.owner.timing(this.requestId, flowStarted, timings);
    this.owner.record(this.jsonlRecord(t));
    return disaggMetricsHeaders(t, this.ctx?.phase, this.gen?.phase);
  }

  private setPart(role: WorkerPhaseName, part: WorkerPart): void {
    if (role === 'ctx') this.ctx = part;
    else this.gen = part;
  }

  /** TensorRT-LLM's disaggregated JSONL record (README "Observability" lists its fields). */
  private jsonlRecord(t: DisaggTiming): Record<string, unknown> {
    const record: Record<string, unknown> = {
      ctx_server: this.ctxServer,
      gen_server: this.genServer,
      disagg_server_arrival_time: t.arrival,
      disagg_ctx_dispatch_time: t.ctxDispatch,
      disagg_server_first_token_time: t.firstToken,
      status: 'complete',
    };
    if (this.ctx) record.ctx_perf_metrics = workerMetrics(this.ctx);
    if (this.gen) record.gen_perf_metrics = workerMetrics(this.gen);
    record.disagg_request_id = this.disaggRequestId;
    return record;
  }
}

function workerMetrics(part: WorkerPart): Record<string, unknown> {
  const numeric = /^-?\d+$/.test(part.requestId) ? Number(part.requestId) : part.requestId;
  return { request_id: numeric, perf_metrics: { timing_metrics: { ...part.phase.timing } } };
}

/** A server as TensorRT-LLM names it: host:port. */
export function hostPort(url: string): string {
  return url.replace(/^https?:\/\//, '').replace(/\/+$/, '');
}
