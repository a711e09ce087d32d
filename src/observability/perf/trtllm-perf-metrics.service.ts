import { Inject, Injectable, Logger, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { APP_CONFIG, type AppConfig } from '../../config';
import { ServerRegistry, type ServerEvent, type ServerState } from '../../servers';
import { WorkerClient } from '../../worker-client';
import { InFlightRequests } from '../context/in-flight-requests';
import { phaseDurations } from '../metrics/request-timings';
import { hostPort } from './response-perf-capture';
import { alignSteadyClock, steadyNowSeconds } from './steady-clock';
import { RequestEvents, type RequestDoneEvent } from '../../request-events';

/** One entry of GET /perf_metrics in TensorRT-LLM's format. */
export interface TrtllmPerfEntry {
  ctx_server: string;
  gen_server: string;
  disagg_server_arrival_time: number;
  disagg_server_first_token_time: number | null;
  ctx_perf_metrics: unknown;
  gen_perf_metrics: unknown;
}

interface RequestRecord {
  ctxServer: string;
  genServer: string;
  ctxRequestId: number;
  arrival: number;
  firstToken: number | null;
}

/**
 * `perf_metrics_max_requests`: GET /perf_metrics as TensorRT-LLM's disaggregated server
 * answers it. The router keeps, per finished disaggregated request, its servers, its
 * ctx_request_id and its arrival and first-token times on its steady clock; reading fetches
 * every worker's own /perf_metrics, joins them by ctx_request_id and returns the requests whose
 * generation metrics arrived (the others wait for a later read). Each worker's steady clock
 * is aligned with the router's when it becomes ready (GET/POST /steady_clock_offset).
 */
@Injectable()
export class TrtllmPerfMetrics implements OnModuleInit, OnModuleDestroy {
  private readonly logger = new Logger('PerfMetrics');
  readonly capacity: number;
  private records: RequestRecord[] = [];
  private readonly workerMetrics = new Map<string, Map<number, unknown>>();
  private collecting: Promise<TrtllmPerfEntry[]> = Promise.resolve([]);
  private unsubscribe?: () => void;
  private readonly onDone = (done: RequestDoneEvent): void => this.record(done);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    private readonly events: RequestEvents,
    private readonly inFlight: InFlightRequests,
    private readonly registry: ServerRegistry,
    private readonly workers: WorkerClient,
  ) {
    this.capacity = config.perf_metrics_max_requests;
  }

  get enabled(): boolean {
    return this.capacity > 0;
  }

  /** The workers' clocks are aligned whenever their times reach a client or a file. */
  private get aligns(): boolean {
    return this.enabled || this.config.return_perf_metrics || this.config.perf_metrics_output_dir !== undefined;
  }

  onModuleInit(): void {
    if (!this.aligns) return;
    if (this.enabled) this.events.on('requestDone', this.onDone);
    this.unsubscribe = this.registry.onEvent((event) => this.onServer(event));
    for (const server of this.registry.list()) if (server.status === 'ready') void this.align(server);
  }

  onModuleDestroy(): void {
    this.events.off('requestDone', this.onDone);
    this.unsubscribe?.();
  }

  /** Reads are serialised, as two overlapping ones would split the workers' answers. */
  collect(): Promise<TrtllmPerfEntry[]> {
    this.collecting = this.collecting.then(() => this.collectNow(), () => this.collectNow());
    return this.collecting;
  }

  private record(done: RequestDoneEvent): void {
    if (done.ctxRequestId === undefined || !done.contextServer || !done.generationServer || done.status >= 400) return;
    const d = phaseDurations(done, this.inFlight.preFlowMs(done));
    const arrival = steadyNowSeconds() - d.e2e;
    this.records.push({
      ctxServer: hostPort(done.contextServer),
      genServer: hostPort(done.generationServer),
      ctxRequestId: done.ctxRequestId,
      arrival,
      firstToken: d.firstToken !== undefined ? arrival + d.firstToken : null,
    });
    if (this.records.length > this.capacity) this.records.shift();
  }

  private async collectNow(): Promise<TrtllmPerfEntry[]> {
    const servers = this.registry.list();
    await Promise.all(servers.map((s) => this.fetchWorkerMetrics(s)));
    const out: TrtllmPerfEntry[] = [];
    const remaining: RequestRecord[] = [];
    for (const r of this.records) {
      const gen = this.workerMetrics.get(r.genServer);
      const genMetrics = gen?.get(r.ctxRequestId);
      if (genMetrics === undefined) {
        remaining.push(r);
        continue;
      }
      gen!.delete(r.ctxRequestId);
      const ctx = this.workerMetrics.get(r.ctxServer);
      const ctxMetrics = ctx?.get(r.ctxRequestId) ?? null;
      ctx?.delete(r.ctxRequestId);
      out.push({
        ctx_server: r.ctxServer,
        gen_server: r.genServer,
        disagg_server_arrival_time: r.arrival,
        disagg_server_first_token_time: r.firstToken,
        ctx_perf_metrics: ctxMetrics,
        gen_perf_metrics: genMetrics,
      });
    }
    this.records = remaining;
    return out;
  }

  private async fetchWorkerMetrics(server: ServerState): Promise<void> {
    const key = hostPort(server.url);
    const known = this.workerMetrics.get(key) ?? new Map<number, unknown>();
    this.workerMetrics.set(key, known);
    try {
      const data = await this.workers.perfMetrics(server.url, this.config.health.timeout_s * 1000);
      if (!Array.isArray(data)) return;
      // Bounded as TensorRT-LLM bounds it: at most max requests kept per worker.
      for (const entry of data.slice(0, Math.max(0, this.capacity - known.size))) {
        const id = (entry as { ctx_request_id?: unknown } | null)?.ctx_request_id;
        if (typeof id === 'number') known.set(id, entry);
      }
    } catch (err) {
      this.logger.warn(`cannot read ${server.url}/perf_metrics: ${(err as Error).message}`);
    }
  }

  private onServer(event: ServerEvent): void {
    if (event.type === 'removed') this.workerMetrics.delete(hostPort(event.server.url));
    else if (event.type === 'status' && event.server.status === 'ready' && event.previous === 'preparing') void this.align(event.server);
  }

  private async align(server: ServerState): Promise<void> {
    const result = await alignSteadyClock(this.workers, server.url, this.config.health.timeout_s * 1000);
    if (result.ok) this.logger.log(`${server.url}: steady clock offset ${result.offset.toFixed(6)} s (delay ${result.delay.toFixed(6)} s)`);
    else this.logger.warn(`${server.url}: cannot align its steady clock (${result.reason}); its perf metrics times may be off`);
  }
}
