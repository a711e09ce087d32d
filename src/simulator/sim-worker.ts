import * as http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { serializeKvEvents } from '../kv-cache/kv-events';
import { getTokenizer, TextTokenizer } from '../tokenizer';
import { allocateCtxRequestId, CtxRegistry } from './ctx-registry';
import { FaultInjector, FaultRule, RequestType, SimEndpoint } from './faults';
import { BatchSlots, LatencyOptions, LatencyPreset, resolveLatency } from './latency-model';
import { BadRequestError, GenerationEndpoint, parseSimRequest, SimRequest } from './openai-request';
import { completionBody, errorBody, newResponseMeta, streamSteps, usageOf } from './openai-response';
import { RequestScope } from './request-scope';
import { applyControl, ControlResult } from './sim-control';
import { ResolvedSimOptions, resolveSimOptions, SimRole, SimWorkerOptions } from './sim-options';
import { SimKvCache } from './sim-kv-cache';
import { SimPerfMetrics } from './sim-perf-metrics';
import { Generation, TextGenerator } from './text-generator';

export interface SimWorkerStats {
  role: SimRole;
  url: string;
  requests: {
    total: number;
    byEndpoint: Record<string, number>;
    byType: Record<RequestType, number>;
    /** Answered with 4xx by the worker's own checks (bad body, unknown ctx_request_id, ...). */
    rejected: number;
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

/** What a generation request will answer, computed before any waiting. */
interface Plan {
  sr: SimRequest;
  fault: FaultRule | undefined;
  gens: Generation[];
  /** Non-streaming body, or SSE events grouped by decode step. */
  body?: string;
  steps?: string[][];
  initialDelayMs: number;
  decodeSteps: number;
  consumeCtxId?: number;
  /** For /perf_metrics: the request's ctx_request_id and arrival on the worker's clock. */
  perfCtxId?: number;
  arrivedAt: number;
}

const SSE_HEADERS = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive' };
const generators = new Map<string, TextGenerator>();

/** A simulated TensorRT-LLM OpenAI worker (`trtllm-serve` with a context/generation role). */
export class SimWorker {
  readonly role: SimRole;
  readonly kv: SimKvCache;
  readonly registry: CtxRegistry | undefined;
  readonly options: ResolvedSimOptions;
  port = 0;
  url = '';
  private readonly server: http.Server;
  private readonly sockets = new Set<Socket>();
  private readonly scopes = new Set<RequestScope>();
  private readonly faults = new FaultInjector();
  private readonly perf = new SimPerfMetrics();
  private latencyOpts: LatencyOptions;
  private readonly slots: BatchSlots;
  private healthy = true;
  private receivedRing: unknown[] = [];
  private inFlight = 0;
  private counters = freshCounters();
  private tokenizerRef: TextTokenizer | undefined;
  private generatorRef: TextGenerator | undefined;
  private closing: Promise<void> | undefined;

  private constructor(opts: SimWorkerOptions) {
    this.options = resolveSimOptions(opts);
    this.role = this.options.role;
    this.registry = this.options.registry;
    this.latencyOpts = resolveLatency(opts.latency);
    this.slots = new BatchSlots(this.latencyOpts.maxBatchSize);
    this.kv = new SimKvCache({
      capacityBlocks: this.options.kvBlocks,
      tokensPerBlock: this.options.tokensPerBlock,
      hashAlgo: this.options.kvHashAlgo,
      windowSize: this.options.windowSize,
      maxBufferedEvents: this.options.maxBufferedEvents,
    });
    if (opts.faults) this.faults.set(opts.faults);
    this.server = http.createServer((req, res) => this.onRequest(req, res));
    this.server.keepAliveTimeout = 65_000;
    this.server.headersTimeout = 66_000;
    this.server.on('connection', (socket: Socket) => {
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    });
  }

  static async start(opts: SimWorkerOptions = {}): Promise<SimWorker> {
    const worker = new SimWorker(opts);
    if (worker.options.preloadTokenizer) worker.generator();
    await new Promise<void>((resolve, reject) => {
      worker.server.once('error', reject);
      worker.server.listen(worker.options.port, worker.options.host, () => {
        worker.server.off('error', reject);
        resolve();
      });
    });
    worker.port = (worker.server.address() as AddressInfo).port;
    worker.url = `http://${urlHost(worker.options.host)}:${worker.port}`;
    return worker;
  }

  // ---- programmatic control -------------------------------------------------------------

  /** Replaces the active fault rules. */
  setFaults(rules: FaultRule | FaultRule[]): void {
    this.faults.set(Array.isArray(rules) ? rules : [rules]);
  }

  addFaults(rules: FaultRule | FaultRule[]): void {
    this.faults.add(Array.isArray(rules) ? rules : [rules]);
  }

  clearFaults(): void {
    this.faults.clear();
  }

  get activeFaults(): ReturnType<FaultInjector['describe']> {
    return this.faults.describe();
  }

  /** With false, GET /health answers 503. */
  setHealthy(healthy: boolean): void {
    this.healthy = healthy;
  }

  get isHealthy(): boolean {
    return this.healthy;
  }

  setLatency(latency: LatencyPreset | Partial<LatencyOptions>): void {
    this.latencyOpts = typeof latency === 'string' ? resolveLatency(latency) : resolveLatency({ ...this.latencyOpts, ...latency });
    this.slots.setMax(this.latencyOpts.maxBatchSize);
  }

  get latency(): LatencyOptions {
    return { ...this.latencyOpts };
  }

  resetStats(): void {
    this.counters = freshCounters();
    this.receivedRing = [];
    for (const k of Object.keys(this.faults.injected)) this.faults.injected[k as keyof typeof this.faults.injected] = 0;
  }

  /** The most recent generation request bodies, oldest first. */
  get received(): unknown[] {
    return [...this.receivedRing];
  }

  get stats(): SimWorkerStats {
    const c = this.counters;
    return {
      role: this.role,
      url: this.url,
      requests: { total: c.total, byEndpoint: { ...c.byEndpoint }, byType: { ...c.byType }, rejected: c.rejected },
      faultsInjected: { ...this.faults.injected },
      openConnections: this.sockets.size,
      inFlight: this.inFlight,
      queued: this.slots.queued,
      kv: {
        blocks: this.kv.size,
        capacity: this.kv.capacity,
        tokensPerBlock: this.kv.tokensPerBlock,
        pendingEvents: this.kv.pendingEvents,
      },
      healthy: this.healthy,
      received: this.received,
    };
  }

  get tokenizer(): TextTokenizer {
    return (this.tokenizerRef ??= getTokenizer(this.options.tokenizer));
  }

  /** Closes the server, destroys open sockets (hanging requests included) and clears timers. */
  close(): Promise<void> {
    this.closing ??= (async () => {
      for (const scope of [...this.scopes]) scope.finish();
      const serverClosed = new Promise<void>((resolve) => this.server.close(() => resolve()));
      const socketsClosed = [...this.sockets].map(
        (s) => new Promise<void>((resolve) => (s.destroyed && !this.sockets.has(s) ? resolve() : s.once('close', () => resolve()))),
      );
      for (const s of this.sockets) s.destroy();
      await Promise.all([serverClosed, ...socketsClosed]);
    })();
    return this.closing;
  }

  // ---- HTTP ---------------------------------------------------------------------------

  private onRequest(req: http.IncomingMessage, res: http.ServerResponse): void {
    this.inFlight++;
    res.once('close', () => this.inFlight--);
    const c = this.counters;
    c.total++;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q >= 0 ? url.slice(0, q) : url;
    const method = req.method ?? 'GET';
    switch (path) {
      case '/v1/completions':
      case '/v1/chat/completions': {
        const endpoint: GenerationEndpoint = path === '/v1/completions' ? 'completions' : 'chat';
        this.count(endpoint);
        if (method !== 'POST') return this.methodNotAllowed(res);
        return readBody(req, this.options.maxBodyBytes, res, (text) => {
          try {
            this.onGeneration(endpoint, req, res, text);
          } catch (err) {
            if (!res.headersSent) sendJson(res, 500, errorBody(`simulator error: ${(err as Error).message}`, 500, 'InternalServerError'));
            else res.destroy();
          }
        });
      }
      case '/health':
        this.count('health');
        return this.simple('health', req, res, () => {
          if (this.healthy) sendText(res, 200, '');
          else sendJson(res, 503, errorBody('worker marked unhealthy', 503, 'ServiceUnavailable'));
        });
      case '/server_info':
        this.count('server_info');
        return this.simple('server_info', req, res, () => sendJson(res, 200, JSON.stringify(this.serverInfo())));
      case '/v1/models':
        this.count('models');
        return this.simple('models', req, res, () =>
          sendJson(
            res,
            200,
            JSON.stringify({
              object: 'list',
              data: [{ id: this.options.model, object: 'model', created: 0, owned_by: 'tensorrt_llm' }],
            }),
          ),
        );
      case '/kv_cache_events':
        this.count('kv_cache_events');
        // Drain only when answering, so a failed poll does not lose events.
        return readBody(req, this.options.maxBodyBytes, res, () =>
          this.simple('kv_cache_events', req, res, () => sendJson(res, 200, serializeKvEvents(this.kv.drainEvents()))),
        );
      case '/perf_metrics':
      case '/steady_clock_offset':
        this.count('other');
        this.perf.handle(path, method, req, res);
        return;
      case '/sim/control':
        this.count('control');
        if (method !== 'POST') return this.methodNotAllowed(res);
        return readBody(req, this.options.maxBodyBytes, res, (text) => this.onControl(res, text));
      case '/sim/stats':
        this.count('stats');
        return sendJson(res, 200, JSON.stringify(this.stats));
      default:
        this.count('other');
        sendJson(res, 404, errorBody(`no route ${method} ${path}`, 404, 'NotFoundError'));
    }
  }

  private serverInfo(): Record<string, unknown> {
    return {
      kv_cache_hash_algo: this.options.kvHashAlgo,
      server_role: this.role,
      model: this.options.model,
      tokens_per_block: this.options.tokensPerBlock,
      max_batch_size: this.latencyOpts.maxBatchSize || null,
      disaggregated_params: {},
    };
  }

  /** Non-generation endpoints: apply a fault rule for them, if one fires, else answer. */
  private simple(endpoint: SimEndpoint, req: http.IncomingMessage, res: http.ServerResponse, answer: () => void): void {
    const fault = this.faults.empty ? undefined : this.faults.pick(endpoint);
    if (!fault) return answer();
    if (this.terminalFault(fault, req, res)) return;
    if (fault.kind === 'slow') {
      const scope = this.openScope(res);
      void scope.sleep(fault.delayMs ?? 1000).then(() => {
        if (!scope.closed) answer();
        scope.finish();
      });
      return;
    }
    answer();
  }

  /** error / close / hang / invalid_json / html: answered here. Returns true when handled. */
  private terminalFault(fault: FaultRule, req: http.IncomingMessage, res: http.ServerResponse): boolean {
    switch (fault.kind) {
      case 'error': {
        const status = fault.status ?? 500;
        sendJson(res, status, errorBody('injected failure', status, 'InternalServerError'));
        return true;
      }
      case 'close':
        req.socket.destroy();
        return true;
      case 'hang':
        this.openScope(res);
        return true;
      case 'invalid_json':
        sendJson(res, 200, '{"id": "cmpl-garbage", "object": "text_completion", "choices": [{"text": ');
        return true;
      case 'html':
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
        res.end('<!DOCTYPE html><html><head><title>502 Bad Gateway</title></head><body><h1>Bad Gateway</h1></body></html>');
        return true;
      default:
        return false;
    }
  }

  private onControl(res: http.ServerResponse, text: string): void {
    let result: ControlResult;
    try {
      result = applyControl(this, text ? JSON.parse(text) : {});
    } catch (err) {
      return sendJson(res, 400, errorBody(`invalid control request: ${(err as Error).message}`, 400));
    }
    sendJson(res, 200, JSON.stringify(result));
  }

  private onGeneration(endpoint: GenerationEndpoint, req: http.IncomingMessage, res: http.ServerResponse, text: string): void {
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return this.reject(res, 'request body is not valid JSON');
    }
    this.remember(body);
    let sr: SimRequest;
    try {
      sr = parseSimRequest(endpoint, body, this.tokenizer, this.options.defaultMaxTokens);
      const promptTokens = sr.prompts.reduce((n, p) => n + p.length, 0);
      if (promptTokens + sr.maxTokens > this.options.maxSeqLen) {
        throw new BadRequestError(`prompt (${promptTokens} tokens) plus max_tokens (${sr.maxTokens}) exceeds max_seq_len ${this.options.maxSeqLen}`);
      }
    } catch (err) {
      if (err instanceof BadRequestError) return this.reject(res, err.message);
      throw err;
    }
    this.counters.byType[sr.type]++;
    const fault = this.faults.empty ? undefined : this.faults.pick(endpoint, sr.type);
    if (fault && this.terminalFault(fault, req, res)) return;
    const refusal = this.checkRole(sr);
    if (refusal) return this.reject(res, refusal);
    const plan = this.plan(sr, fault);
    const lat = this.latencyOpts;
    const waits = plan.initialDelayMs > 0 || (lat.decodeMsPerToken > 0 && plan.decodeSteps > 0);
    if (!waits && this.slots.tryAcquire()) {
      try {
        this.writeAll(req, res, plan);
      } finally {
        this.slots.release();
      }
      return;
    }
    void this.answerLater(req, res, plan);
  }

  private checkRole(sr: SimRequest): string | undefined {
    if (sr.type === 'context_only' && this.role === 'generation') {
      return 'this is a generation server: it does not serve context_only requests';
    }
    if (sr.type === 'generation_only') {
      if (this.role === 'context') return 'this is a context server: it does not serve generation_only requests';
      const id = sr.disagg!.ctx_request_id as number;
      if (this.options.ctxCheck === 'registry' && !this.registry!.has(id)) {
        return `unknown ctx_request_id ${id}: no KV cache was transferred for it`;
      }
    }
    return undefined;
  }

  private generator(): TextGenerator {
    if (this.generatorRef) return this.generatorRef;
    const name = this.options.tokenizer;
    let gen = generators.get(name);
    if (!gen) {
      gen = new TextGenerator(this.tokenizer);
      generators.set(name, gen);
    }
    return (this.generatorRef = gen);
  }

  private plan(sr: SimRequest, fault: FaultRule | undefined): Plan {
    const generator = this.generator();
    const model = sr.model ?? this.options.model;
    const gens: Generation[] = [];
    let promptTokens = 0;
    let cachedTokens = 0;
    let completionTokens = 0;
    let prefillTokens = 0;
    const firstTokens = sr.type === 'generation_only' ? (sr.disagg!.first_gen_tokens ?? undefined) : undefined;
    for (const prompt of sr.prompts) {
      const admitted = this.kv.admit(prompt, this.kv.chainFor(prompt, sr.cacheSalt));
      const g = generator.generate(prompt, sr.type === 'context_only' ? 1 : sr.maxTokens, sr.stop, firstTokens);
      gens.push(g);
      promptTokens += prompt.length;
      cachedTokens += admitted.cachedTokens;
      completionTokens += g.tokenIds.length;
      // The generation phase received the prompt's KV: no prefill there.
      if (sr.type !== 'generation_only') prefillTokens += prompt.length - admitted.cachedTokens;
    }
    const usage = usageOf(promptTokens, completionTokens, cachedTokens);
    const meta = newResponseMeta(sr.endpoint, model);
    const lat = this.latencyOpts;
    const plan: Plan = {
      sr,
      fault,
      gens,
      initialDelayMs: lat.overheadMs + prefillTokens * lat.prefillMsPerToken + (fault?.kind === 'slow' ? (fault.delayMs ?? 1000) : 0),
      decodeSteps: sr.type === 'context_only' ? 0 : Math.max(0, ...gens.map((g) => g.tokenIds.length - 1)),
      arrivedAt: this.perf.now(),
    };
    if (sr.type === 'context_only') {
      const ctxRequestId = allocateCtxRequestId();
      plan.perfCtxId = ctxRequestId;
      const g = gens[0];
      this.registry?.publish(ctxRequestId, {
        promptLength: sr.prompts[0].length,
        firstGenTokens: g.tokenIds,
        contextUrl: this.url,
      });
      const disagg =
        fault?.kind === 'no_disagg_params'
          ? undefined
          : {
              request_type: 'context_only',
              first_gen_tokens: g.tokenIds,
              ctx_request_id: ctxRequestId,
              encoded_opaque_state: Buffer.from(`sim:${this.port}:${ctxRequestId}`).toString('base64'),
              draft_tokens: null,
              disagg_request_id: sr.disagg!.disagg_request_id ?? null,
            };
      plan.body = JSON.stringify(completionBody(sr.endpoint, meta, gens, usage, disagg, sr.prompts[0]));
      return plan;
    }
    if (sr.type === 'generation_only') plan.consumeCtxId = plan.perfCtxId = sr.disagg!.ctx_request_id as number;
    if (sr.stream) plan.steps = streamSteps(sr.endpoint, meta, gens, sr.includeUsage ? usage : undefined);
    else plan.body = JSON.stringify(completionBody(sr.endpoint, meta, gens, usage));
    return plan;
  }

  /** Zero-latency path: the whole answer in one go, no timers. */
  private writeAll(req: http.IncomingMessage, res: http.ServerResponse, plan: Plan): void {
    const truncated = plan.fault?.kind === 'truncated_stream';
    if (plan.body !== undefined) {
      if (truncated) return this.truncateBody(req, res, plan.body);
      sendJson(res, 200, plan.body);
    } else {
      const events = plan.steps!.flat();
      res.writeHead(200, SSE_HEADERS);
      if (truncated) {
        // Destroy only once the partial stream is flushed, so the client sees it cut short.
        res.write(events.slice(0, Math.max(1, Math.floor(events.length / 2))).join(''), () => req.socket.destroy());
        return;
      }
      res.end(events.join(''));
    }
    this.completed(plan);
  }

  private async answerLater(req: http.IncomingMessage, res: http.ServerResponse, plan: Plan): Promise<void> {
    const scope = this.openScope(res);
    try {
      await scope.acquireSlot();
      await scope.sleep(plan.initialDelayMs);
      if (scope.closed) return;
      const decodeMs = this.latencyOpts.decodeMsPerToken;
      if (plan.body !== undefined) {
        await scope.sleep(decodeMs * plan.decodeSteps);
        if (scope.closed) return;
        if (plan.fault?.kind === 'truncated_stream') return this.truncateBody(req, res, plan.body);
        sendJson(res, 200, plan.body);
        this.completed(plan);
        return;
      }
      const steps = plan.steps!;
      const cutAt = plan.fault?.kind === 'truncated_stream' ? Math.max(1, Math.floor(steps.length / 2)) : -1;
      res.writeHead(200, SSE_HEADERS);
      for (let s = 0; s < steps.length; s++) {
        if (s > 0) await scope.sleep(decodeMs);
        if (scope.closed) return;
        if (s === cutAt) {
          req.socket.destroy();
          return;
        }
        res.write(steps[s].join(''));
      }
      res.end();
      this.completed(plan);
    } finally {
      scope.finish();
    }
  }

  private truncateBody(req: http.IncomingMessage, res: http.ServerResponse, body: string): void {
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
    res.write(body.slice(0, Math.floor(body.length / 2)), () => req.socket.destroy());
  }

  private completed(plan: Plan): void {
    if (plan.consumeCtxId !== undefined) this.registry?.consume(plan.consumeCtxId);
    if (plan.perfCtxId !== undefined) this.perf.record(plan.perfCtxId, plan.arrivedAt, plan.arrivedAt + plan.initialDelayMs / 1000);
  }

  private openScope(res: http.ServerResponse): RequestScope {
    const scope = new RequestScope(this.slots, (s) => this.scopes.delete(s));
    this.scopes.add(scope);
    res.once('close', () => scope.finish());
    return scope;
  }

  private reject(res: http.ServerResponse, message: string): void {
    this.counters.rejected++;
    sendJson(res, 400, errorBody(message, 400));
  }

  private methodNotAllowed(res: http.ServerResponse): void {
    sendJson(res, 405, errorBody('method not allowed', 405, 'MethodNotAllowed'));
  }

  private count(endpoint: string): void {
    const by = this.counters.byEndpoint;
    by[endpoint] = (by[endpoint] ?? 0) + 1;
  }

  private remember(body: unknown): void {
    const keep = this.options.keepReceived;
    if (keep === 0) return;
    this.receivedRing.push(body);
    if (this.receivedRing.length > keep) this.receivedRing.shift();
  }
}

function freshCounters(): {
  total: number;
  byEndpoint: Record<string, number>;
  byType: Record<RequestType, number>;
  rejected: number;
} {
  return { total: 0, byEndpoint: {}, byType: { context_only: 0, generation_only: 0, plain: 0 }, rejected: 0 };
}

/** The request body, or a 413 once it passes `limit` bytes (the rest is not read). */
function readBody(req: http.IncomingMessage, limit: number, res: http.ServerResponse, done: (text: string) => void): void {
  const chunks: Buffer[] = [];
  let size = 0;
  let over = false;
  req.on('data', (c: Buffer) => {
    if (over) return;
    size += c.length;
    if (size <= limit) return void chunks.push(c);
    over = true;
    chunks.length = 0;
    res.once('finish', () => req.destroy());
    sendJson(res, 413, errorBody(`request body larger than ${limit} bytes`, 413, 'RequestTooLarge'));
  });
  req.on('end', () => {
    if (!over) done(chunks.length === 1 ? chunks[0].toString('utf8') : Buffer.concat(chunks).toString('utf8'));
  });
}

function sendJson(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function sendText(res: http.ServerResponse, status: number, body: string): void {
  res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(body) });
  res.end(body);
}

function urlHost(host: string): string {
  if (host === '0.0.0.0' || host === '' ) return '127.0.0.1';
  if (host === '::') return '[::1]';
  return host.includes(':') ? `[${host}]` : host;
}

export async function startSimWorker(opts: SimWorkerOptions = {}): Promise<SimWorker> {
  return SimWorker.start(opts);
}
