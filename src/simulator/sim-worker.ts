import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import type { TextTokenizer } from '../tokenizer';
import type { CtxRegistry } from './ctx-registry';
import type { FaultInjector, FaultRule, RequestType } from './faults';
import { type LatencyOptions, type LatencyPreset, resolveLatency } from './latency-model';
import { applyControl } from './sim-control';
import { urlHost } from './sim-http';
import type { SimKvCache } from './sim-kv-cache';
import type { ResolvedSimOptions, SimRole, SimWorkerOptions } from './sim-options';
import { SimRequestHandler } from './sim-request-handler';
import { SimKvReporter } from './sim-kv-reporter';
import { SimState } from './sim-state';

export interface SimWorkerStats {
  role: SimRole;
  url: string;
  requests: {
    total: number;
    byEndpoint: Record<string, number>;
    byType: Record<RequestType, number>;
    /** Answered with 4xx by the worker's own checks (bad body, unknown ctx_request_id, ...). */
    rejected: number;
    /** Generation requests per data-parallel rank. */
    byDpRank: number[];
    /** Generation request bodies decoded, by encoding. */
    byEncoding: { json: number; msgpack: number };
  };
  faultsInjected: Record<string, number>;
  openConnections: number;
  inFlight: number;
  queued: number;
  kv: { blocks: number; capacity: number; tokensPerBlock: number; pendingEvents: number };
  healthy: boolean;
  /** The most recent generation request bodies, oldest first. */
  received: unknown[];
}

/**
 * A simulated TensorRT-LLM OpenAI worker (`trtllm-serve` with a context/generation role): its
 * lifecycle and programmatic control. Requests are answered by SimRequestHandler.
 */
export class SimWorker {
  private readonly state: SimState;
  private readonly server: http.Server;
  private readonly sockets = new Set<Socket>();
  private closing: Promise<void> | undefined;
  private reporter: SimKvReporter | undefined;

  private constructor(opts: SimWorkerOptions) {
    this.state = new SimState(opts);
    const handler = new SimRequestHandler(
      this.state,
      (request) => applyControl(this, request),
      () => this.stats,
    );
    this.server = http.createServer(handler.onRequest);
    this.server.keepAliveTimeout = 65_000;
    this.server.headersTimeout = 66_000;
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  static async start(opts: SimWorkerOptions = {}): Promise<SimWorker> {
    const worker = new SimWorker(opts);
    const state = worker.state;
    if (state.options.preloadTokenizer) state.generator();
    await new Promise<void>((resolve, reject) => {
      worker.server.once('error', reject);
      worker.server.listen(state.options.port, state.options.host, () => {
        worker.server.off('error', reject);
        resolve();
      });
    });
    state.port = (worker.server.address() as AddressInfo).port;
    state.url = `http://${urlHost(state.options.host)}:${state.port}`;
    if (state.options.kvReports) {
      worker.reporter = new SimKvReporter(state, state.options.kvReports);
      worker.reporter.start();
    }
    return worker;
  }

  get role(): SimRole {
    return this.state.role;
  }

  get kv(): SimKvCache {
    return this.state.kv;
  }

  /** One KV cache per data-parallel rank. */
  get kvRanks(): readonly SimKvCache[] {
    return this.state.kvRanks;
  }

  /** The instance id of /server_info `worker_id`. */
  get workerId(): string {
    return this.state.options.workerId;
  }

  /** Frames pushed to the centralized KV router so far (0 when not pushing). */
  get kvReportsSent(): number {
    return this.reporter?.sent ?? 0;
  }

  /** Stops pushing KV reports: the router sees the worker fall silent. */
  stopKvReports(): Promise<void> {
    return this.reporter?.stop() ?? Promise.resolve();
  }

  get registry(): CtxRegistry | undefined {
    return this.state.registry;
  }

  get options(): ResolvedSimOptions {
    return this.state.options;
  }

  get port(): number {
    return this.state.port;
  }

  get url(): string {
    return this.state.url;
  }

  get tokenizer(): TextTokenizer {
    return this.state.tokenizer;
  }

  // ---- programmatic control -------------------------------------------------------------

  /** Replaces the active fault rules. */
  setFaults(rules: FaultRule | FaultRule[]): void {
    this.state.faults.set(Array.isArray(rules) ? rules : [rules]);
  }

  addFaults(rules: FaultRule | FaultRule[]): void {
    this.state.faults.add(Array.isArray(rules) ? rules : [rules]);
  }

  clearFaults(): void {
    this.state.faults.clear();
  }

  get activeFaults(): ReturnType<FaultInjector['describe']> {
    return this.state.faults.describe();
  }

  /** With false, GET /health answers 503. */
  setHealthy(healthy: boolean): void {
    this.state.healthy = healthy;
  }

  get isHealthy(): boolean {
    return this.state.healthy;
  }

  setLatency(latency: LatencyPreset | Partial<LatencyOptions>): void {
    const state = this.state;
    state.latency = typeof latency === 'string' ? resolveLatency(latency) : resolveLatency({ ...state.latency, ...latency });
    state.slots.setMax(state.latency.maxBatchSize);
  }

  get latency(): LatencyOptions {
    return { ...this.state.latency };
  }

  resetStats(): void {
    this.state.counters.reset();
    const injected = this.state.faults.injected;
    for (const k of Object.keys(injected)) injected[k as keyof typeof injected] = 0;
  }

  /** The most recent generation request bodies, oldest first. */
  get received(): unknown[] {
    return this.state.counters.received;
  }

  get stats(): SimWorkerStats {
    const { counters: c, faults, kv } = this.state;
    return {
      role: this.role,
      url: this.url,
      requests: { total: c.total, byEndpoint: { ...c.byEndpoint }, byType: { ...c.byType }, rejected: c.rejected, byDpRank: [...c.byDpRank], byEncoding: { ...c.byEncoding } },
      faultsInjected: { ...faults.injected },
      openConnections: this.sockets.size,
      inFlight: this.state.inFlight,
      queued: this.state.slots.queued,
      kv: { blocks: kv.size, capacity: kv.capacity, tokensPerBlock: kv.tokensPerBlock, pendingEvents: kv.pendingEvents },
      healthy: this.state.healthy,
      received: this.received,
    };
  }

  /** Closes the server, destroys open sockets (hanging requests included) and clears timers. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      await this.reporter?.stop();
      for (const scope of [...this.state.scopes]) scope.finish();
      const serverClosed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      const socketsClosed = [...this.sockets].map(
        (s) => new Promise<void>((resolve) => (s.destroyed && !this.sockets.has(s) ? resolve() : s.once('close', () => resolve()))),
      );
      for (const s of this.sockets) s.destroy();
      await Promise.all([serverClosed, ...socketsClosed]);
    })();
    return this.closing;
  }
}

export async function startSimWorker(opts: SimWorkerOptions = {}): Promise<SimWorker> {
  return SimWorker.start(opts);
}
