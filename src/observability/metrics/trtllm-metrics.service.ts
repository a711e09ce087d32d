import { Injectable } from '@nestjs/common';
import { Registry } from 'prom-client';
import type { ServerRole } from '../../config';
import type { RequestDoneEvent, RoutedEvent } from '../../request-events';
import { AccumulatingCounter, AccumulatingHistogram, type CounterCell, type HistogramCell } from './accumulating-metrics';
import { lastPhase } from './request-timings';

/** TensorRT-LLM's buckets (seconds). */
export const TRTLLM_SHORT_TIME_BUCKETS = [0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0];
export const TRTLLM_LONG_TIME_BUCKETS = [0.1, 0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0];

/** Failures of an upstream call itself (not of the pick, not the client leaving). */
const CALL_FAILURES = new Set(['connect', 'timeout', 'reset', 'status_5xx', 'status_500', 'bad_response', 'aborted', 'upstream_failed']);

/** `le` as Python's Prometheus client writes it (`1.0`, `0.25`). */
function goFloat(bound: number): string {
  return Number.isInteger(bound) ? bound.toFixed(1) : String(bound);
}

interface RoleMetrics {
  total: CounterCell;
  error: CounterCell;
  retry: CounterCell;
  completed: CounterCell;
  firstToken: HistogramCell;
  complete: HistogramCell;
  perToken: HistogramCell;
}

/**
 * TensorRT-LLM's disaggregated-server metric names on /prometheus/metrics (README
 * "Observability" lists them and how each is counted here): per pool `ctx_`/`gen_` request
 * counters and latency histograms, and the server's own counters and queue latency. No
 * labels; counters end in `_total`, `le` is written as Python's client writes it. Fed by
 * RequestMetricsListener from the request events it already receives.
 */
@Injectable()
export class TrtllmMetrics {
  readonly registry = new Registry();
  private readonly roles: Record<ServerRole, RoleMetrics> = { context: this.roleMetrics('ctx'), generation: this.roleMetrics('gen') };
  private readonly totalRequests = this.counter('total_requests', 'Total number of requests');
  private readonly streamRequests = this.counter('stream_requests', 'Total number of stream requests');
  private readonly nonstreamRequests = this.counter('nonstream_requests', 'Total number of non-stream requests');
  private readonly validationExceptions = this.counter('validation_exceptions', 'Total number of validation exceptions');
  private readonly httpExceptions = this.counter('http_exceptions', 'Total number of HTTP exceptions');
  private readonly internalErrors = this.counter('internal_errors', 'Total number of internal errors');
  private readonly totalResponses = this.counter('total_responses', 'Total number of responses');
  private readonly queueLatency = this.histogram('queue_latency_seconds', 'Histogram of latency from request arrival to being processed in seconds', TRTLLM_SHORT_TIME_BUCKETS);

  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  /** A call to a pool begins with its pick. */
  routed(event: RoutedEvent): void {
    this.roles[event.role].total.value++;
  }

  /** A retry is counted, and its pick is not a new call. */
  retry(role: ServerRole): void {
    const m = this.roles[role];
    m.retry.inc();
    // The retry's pick was counted in the same turn (routed comes first): no scrape sees both.
    m.total.value--;
  }

  refused(): void {
    this.validationExceptions.inc();
  }

  requestDone(done: RequestDoneEvent, preFlowMs: number): void {
    this.totalRequests.inc();
    (done.stream ? this.streamRequests : this.nonstreamRequests).inc();
    this.queueLatency.observe(preFlowMs / 1000);
    const status = done.status;
    const t = done.timings;
    // A stream whose 200 head went out is a response, whatever happens to it afterwards.
    const responded = status < 400 || (done.stream && t.firstByte !== undefined && status >= 500);
    if (responded) this.totalResponses.inc();
    else if (status >= 500) this.internalErrors.inc();
    else if (status !== 499) this.httpExceptions.inc();
    const phase = lastPhase(done);
    const failed = status >= 400 && status !== 499;
    if (this.called(done, 'context')) {
      const ctx = this.roles.context;
      ctx.completed.inc();
      const ctxFailed = failed && (phase === 'context' || (done.mode === 'generation_first' && t.contextEnd === undefined));
      if (ctxFailed) ctx.error.inc();
      else if (t.contextEnd !== undefined && t.contextStart !== undefined) ctx.complete.observe((t.contextEnd - t.contextStart) / 1000);
    }
    if (this.called(done, 'generation')) {
      const gen = this.roles.generation;
      gen.completed.inc();
      const start = t.generationStart!;
      if (done.stream && t.firstByte !== undefined) gen.firstToken.observe((t.firstByte - start) / 1000);
      if (failed && phase === 'generation') {
        gen.error.inc();
        return;
      }
      gen.complete.observe((t.end - start) / 1000);
      const n = done.streamChunks;
      if (n > 1 && t.firstByte !== undefined) gen.perToken.observeMany((t.end - t.firstByte) / 1000 / (n - 1), n - 1);
    }
  }

  /** Whether the request made a call to the pool (a server was picked and sent to). */
  private called(done: RequestDoneEvent, role: ServerRole): boolean {
    const t = done.timings;
    const answered = role === 'context' ? done.contextServer : done.generationServer;
    if (answered !== undefined) return true;
    const started = role === 'context' ? t.contextStart : t.generationStart;
    if (started === undefined || lastPhase(done) !== role) return false;
    return done.status === 499 || CALL_FAILURES.has(done.errorKind ?? '');
  }

  private roleMetrics(prefix: 'ctx' | 'gen'): RoleMetrics {
    return {
      total: this.counter(`${prefix}_total_requests`, 'Total number of requests'),
      error: this.counter(`${prefix}_error_requests`, 'Total number of error requests'),
      retry: this.counter(`${prefix}_retry_requests`, 'Total number of retry requests'),
      completed: this.counter(`${prefix}_completed_requests`, 'Total number of completed requests'),
      firstToken: this.histogram(`${prefix}_first_token_latency_seconds`, 'Histogram of latency from first token to completion in seconds', TRTLLM_SHORT_TIME_BUCKETS),
      complete: this.histogram(`${prefix}_complete_latency_seconds`, 'Histogram of latency from request arrival to last token in seconds', TRTLLM_LONG_TIME_BUCKETS),
      perToken: this.histogram(`${prefix}_per_token_latency_seconds`, 'Histogram of latency from request arrival to completion in seconds', TRTLLM_SHORT_TIME_BUCKETS),
    };
  }

  /** A counter as Python's client exposes it: the family and its sample named `<name>_total`. */
  private counter(name: string, help: string): CounterCell {
    return new AccumulatingCounter({ name: `${name}_total`, help }).registerIn(this.registry).cell();
  }

  private histogram(name: string, help: string, buckets: number[]): HistogramCell {
    return new AccumulatingHistogram({ name, help, buckets, leLabel: goFloat }).registerIn(this.registry).cell();
  }
}
