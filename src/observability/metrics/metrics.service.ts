import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { normalizeServerUrl, SERVER_ROLES, type ServerRole } from '../../config';
import { ServerRegistry, type CircuitState, type ServerState, type ServerStatus } from '../../servers';
import { AccumulatingCounter, AccumulatingHistogram, type CounterCell } from './accumulating-metrics';
import { BoundedLabel, OTHER_LABEL } from './bounded-label';
import { FIRST_TOKEN_BUCKETS, OVERHEAD_BUCKETS, RATIO_BUCKETS, REQUEST_BUCKETS } from './metric-buckets';
import { lastPhase, phaseDurations } from './request-timings';
import { registerTokenizerCacheMetrics } from './tokenizer-cache-metrics';
import { INFERENCE_PATH } from '../../common';
import type { RequestDoneEvent, RoutedEvent, UpstreamFailureEvent } from '../../request-events';

const NS = 'disagg_router_';
const SERVER_STATUSES: readonly ServerStatus[] = ['preparing', 'ready', 'draining', 'unhealthy'];
const CIRCUIT_STATES: readonly CircuitState[] = ['closed', 'open', 'half_open'];

/**
 * Routing tuples follow the known servers (removed ones are dropped), so they get more room
 * than the default cap of the other per-request series (see LabelCells).
 */
const MAX_ROUTING_TUPLES = 4096;

/**
 * The router's Prometheus metrics, in a registry of this app instance. Request-path updates
 * come from RequestEvents (see RequestMetricsListener); per-server load, health and breaker
 * state are read from the ServerRegistry at scrape time. Server labels are the URLs of known
 * servers only: anything else is `other`, and a removed server's series are dropped.
 *
 * The per-request series are accumulating metrics (plain cells, no label hashing per update);
 * the rarely updated ones are prom-client's. The admission, KV-event and discovery code report
 * through the small API below.
 */
@Injectable()
export class MetricsService implements OnModuleInit, OnModuleDestroy {
  readonly registry = new Registry();
  private readonly policies = new BoundedLabel(32);
  private readonly reasons = new BoundedLabel(16);
  private readonly queues = new BoundedLabel(8);
  private unsubscribe?: () => void;

  private readonly httpRequests = this.fastCounter('http_requests_total', 'HTTP responses of every endpoint, by route template', ['method', 'route', 'status']);
  private readonly requests = this.fastCounter('requests_total', 'Completion requests served by the disagg flow, by the phase they ended in', ['endpoint', 'status', 'phase', 'mode']);
  private readonly e2e = this.fastHistogram('request_duration_seconds', 'Arrival to the end of the answer, completion requests that got one', ['endpoint', 'stream'], REQUEST_BUCKETS);
  private readonly ttft = this.fastHistogram('time_to_first_token_seconds', 'Arrival to the first byte of a streamed generation answer', ['endpoint'], FIRST_TOKEN_BUCKETS);
  private readonly contextPhase = this.fastHistogram('context_phase_duration_seconds', 'Context (prefill) call: request sent to answer read', [], FIRST_TOKEN_BUCKETS);
  private readonly overhead = this.fastHistogram('overhead_seconds', "The router's own time per request: end-to-end minus the time in upstream calls", [], OVERHEAD_BUCKETS);
  private readonly routingTime = this.fastHistogram('routing_decision_seconds', 'Time a routing policy took to pick a server, tokenizing and hashing the prompt included', ['role', 'policy'], OVERHEAD_BUCKETS);
  private readonly routing = this.fastCounter('routing_decisions_total', 'Servers picked by the routing policies', ['role', 'policy', 'server'], MAX_ROUTING_TUPLES);
  private readonly matchedRatio = this.fastHistogram('kv_matched_token_ratio', 'Share of the prompt already in the picked server KV cache (KV-aware policies)', ['role'], RATIO_BUCKETS);
  private readonly matchedTokens = this.fastCounter('kv_matched_tokens_total', 'Prompt tokens found in the picked server KV cache', ['role']);
  private readonly promptTokens = this.fastCounter('kv_prompt_tokens_total', 'Prompt tokens of requests routed by KV-aware policies', ['role']);
  private readonly kvEvents = this.counter('kv_events_applied_total', 'KV cache events applied to the router block tables', ['server']);
  private readonly kvPolls = this.counter('kv_polls_total', '/kv_cache_events drains sent (finishes in a burst share one, see kv_events_min_poll_gap_s)', ['server']);
  private readonly kvPollErrors = this.counter('kv_poll_errors_total', 'Failed /kv_cache_events polls', ['server']);
  private readonly kvReports = this.counter('kv_reports_total', 'Reports the workers pushed to the centralized KV router endpoint and applied, by kind (events, load)', ['kind']);
  private readonly kvReportsDropped = this.counter('kv_reports_dropped_total', 'Pushed reports dropped: bad_hmac (signature missing or wrong), malformed, out_of_order (seq not newer)', ['reason']);
  private readonly kvEvicted = this.counter('kv_report_workers_evicted_total', 'Pushing workers forgotten after stale_timeout_s without a report', []);
  private readonly untokenized = this.counter('untokenized_prompts_total', 'Routed requests whose text the model tokenizer could not turn into ids (forwarded as text, routed by load), by reason', ['role', 'reason']);
  private readonly retries = this.counter('retries_total', 'Upstream calls retried on another server', ['role']);
  private readonly upstreamErrors = this.counter('upstream_errors_total', 'Failed upstream calls, by kind', ['role', 'server', 'kind']);
  private readonly rejections = this.counter('admission_rejections_total', 'Requests refused by admission control', ['reason', 'queue']);
  private readonly queueLength = this.gauge('admission_queue_length', 'Requests waiting for an admission slot', ['queue']);
  private readonly etcdConnected = this.gauge('etcd_connected', '1 while the metadata server (etcd) is reachable', []);

  /** Routing cells of known servers by server and policy (saves the label checks per request), dropped when a server goes. */
  private readonly routingCells = new Map<ServerState, Map<string, CounterCell>>();

  constructor(private readonly servers: ServerRegistry) {
    collectDefaultMetrics({ register: this.registry });
    this.serverGauges();
    registerTokenizerCacheMetrics(this.registry);
  }

  onModuleInit(): void {
    this.unsubscribe = this.servers.onEvent((event) => {
      if (event.type === 'removed') void this.forgetServer(event.server);
    });
  }

  onModuleDestroy(): void {
    this.unsubscribe?.();
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  // --- request path (RequestEvents and the HTTP hook) -------------------------------------

  httpResponse(method: string, route: string | undefined, status: number): void {
    const r = route ?? 'unmatched';
    this.httpRequests.cell(method, r, status).inc();
  }

  /** `preFlowMs`: time between the request's arrival and the disagg flow's start. */
  requestDone(done: RequestDoneEvent, preFlowMs: number): void {
    const endpoint = INFERENCE_PATH[done.kind];
    const phase = lastPhase(done);
    this.requests.cell(endpoint, done.status, phase, done.mode).inc();
    if (done.status === 499) return; // the client left: no answer, no latency to report
    const d = phaseDurations(done, preFlowMs);
    const stream = done.stream ? 'true' : 'false';
    this.e2e.cell(endpoint, stream).observe(d.e2e);
    if (done.stream && done.status < 400 && d.firstToken !== undefined) this.ttft.cell(endpoint).observe(d.firstToken);
    if (d.context !== undefined) this.contextPhase.cell().observe(d.context);
    this.overhead.cell().observe(d.overhead);
  }

  routed(event: RoutedEvent): void {
    this.routingCell(event.server, event.role, event.policy).inc();
    this.routingTime.cell(event.role, this.policies.of(event.policy)).observe(event.routingSeconds);
    if (event.untokenized !== undefined) this.untokenized.inc({ role: event.role, reason: event.untokenized });
    const prompt = event.promptTokens;
    if (prompt !== undefined && prompt > 0 && event.matchedTokens !== undefined) {
      const matched = Math.min(event.matchedTokens, prompt);
      this.matchedRatio.cell(event.role).observe(matched / prompt);
      this.matchedTokens.cell(event.role).inc(matched);
      this.promptTokens.cell(event.role).inc(prompt);
    }
  }

  upstreamFailure(event: UpstreamFailureEvent): void {
    this.upstreamErrors.inc({ role: event.role, server: this.serverLabel(event.server), kind: event.kind });
  }

  retry(role: ServerRole): void {
    this.retries.inc({ role });
  }

  // --- reported by other modules -----------------------------------------------------------

  /** Admission control refused a request (`queue_full`, `queue_timeout`, `rate_limited`...). */
  admissionRejected(reason: string, queue = 'router'): void {
    this.rejections.inc({ reason: this.reasons.of(reason), queue: this.queues.of(queue) });
  }

  /** Requests currently waiting in an admission queue (`router`, `context`, `generation`). */
  setQueueLength(length: number, queue = 'router'): void {
    this.queueLength.set({ queue: this.queues.of(queue) }, length);
  }

  /** KV cache events a poll of `server` applied to its block table. */
  kvEventsApplied(server: ServerState | string, count: number): void {
    if (count > 0) this.kvEvents.inc({ server: this.serverLabel(server) }, count);
  }

  kvPoll(server: ServerState | string): void {
    this.kvPolls.inc({ server: this.serverLabel(server) });
  }

  kvPollError(server: ServerState | string): void {
    this.kvPollErrors.inc({ server: this.serverLabel(server) });
  }

  kvReportReceived(kind: string): void {
    this.kvReports.inc({ kind: this.reasons.of(kind) });
  }

  kvReportDropped(reason: string): void {
    this.kvReportsDropped.inc({ reason: this.reasons.of(reason) });
  }

  kvReportWorkersEvicted(count: number): void {
    this.kvEvicted.inc(count);
  }

  setEtcdConnected(connected: boolean): void {
    this.etcdConnected.set(connected ? 1 : 0);
  }

  /** A known server's URL, or `other` for anything the registry does not hold. */
  serverLabel(server: ServerState | string): string {
    if (typeof server !== 'string') return this.servers.get(server.id) === server ? server.url : OTHER_LABEL;
    let url: string;
    try {
      url = normalizeServerUrl(server);
      for (const role of SERVER_ROLES) if (this.servers.findByUrl(role, url)) return url;
    } catch {
      /* not a URL: other */
    }
    return OTHER_LABEL;
  }

  // --- internals ---------------------------------------------------------------------------

  private routingCell(server: ServerState, role: ServerRole, policy: string): CounterCell {
    let byPolicy = this.routingCells.get(server);
    let cell = byPolicy?.get(policy);
    if (cell) return cell;
    const label = this.serverLabel(server);
    cell = this.routing.cell(role, this.policies.of(policy), label);
    // Only known servers are cached: their entry goes when they are removed.
    if (label !== OTHER_LABEL) {
      if (!byPolicy) this.routingCells.set(server, (byPolicy = new Map()));
      byPolicy.set(policy, cell);
    }
    return cell;
  }

  /** Per-server gauges, read from the registry at scrape time (never updated per request). */
  private serverGauges(): void {
    const servers = this.servers;
    const perServer = (name: string, help: string, read: (s: ServerState) => number): void => {
      this.gauge(name, help, ['role', 'server'], function (this: Gauge<string>) {
        this.reset();
        for (const s of servers.list()) this.set({ role: s.role, server: s.url }, read(s));
      });
    };
    perServer('server_active_requests', 'Requests a server is working on, as the router counts them', (s) => s.activeRequests);
    perServer('server_active_tokens', 'Prompt tokens of the requests a server is working on', (s) => s.activeTokens);
    perServer('server_kv_blocks', 'KV cache blocks the router believes a server holds', (s) => s.kvBlocksKnown);
    this.gauge('healthy_servers', 'Servers in rotation (ready), by role', ['role'], function (this: Gauge<string>) {
      for (const role of SERVER_ROLES) this.set({ role }, servers.ready(role).length);
    });
    this.gauge('servers', 'Known servers by role and status', ['role', 'status'], function (this: Gauge<string>) {
      for (const role of SERVER_ROLES) {
        const list = servers.list(role);
        for (const status of SERVER_STATUSES) this.set({ role, status }, list.filter((s) => s.status === status).length);
      }
    });
    this.gauge('circuit_breaker_state', 'Circuit breaker of each server: 1 for its current state', ['role', 'server', 'state'], function (this: Gauge<string>) {
      this.reset();
      for (const s of servers.list()) {
        const current = s.circuit?.state ?? 'closed';
        for (const state of CIRCUIT_STATES) this.set({ role: s.role, server: s.url, state }, state === current ? 1 : 0);
      }
    });
  }

  /** Drops the series of a server that left, so churn in discovery cannot grow them forever. */
  private async forgetServer(server: ServerState): Promise<void> {
    this.routingCells.delete(server);
    const stillKnown = SERVER_ROLES.some((role) => this.servers.findByUrl(role, server.url));
    if (stillKnown) return;
    // Routing cells are cached under known servers only, so no cache still holds these.
    this.routing.removeWhere((labels) => labels.server === server.url);
    for (const metric of [this.upstreamErrors, this.kvEvents, this.kvPolls, this.kvPollErrors]) {
      const { values } = await metric.get();
      for (const v of values) if (v.labels.server === server.url) metric.remove(v.labels as Record<string, string>);
    }
  }

  private counter(name: string, help: string, labelNames: string[]): Counter<string> {
    return new Counter({ name: NS + name, help, labelNames, registers: [this.registry] });
  }

  private gauge(name: string, help: string, labelNames: string[], collect?: (this: Gauge<string>) => void): Gauge<string> {
    return new Gauge({ name: NS + name, help, labelNames, registers: [this.registry], ...(collect ? { collect } : {}) });
  }

  private fastCounter(name: string, help: string, labelNames: string[], maxTuples?: number): AccumulatingCounter {
    return new AccumulatingCounter({ name: NS + name, help, labelNames, maxTuples }).registerIn(this.registry);
  }

  private fastHistogram(name: string, help: string, labelNames: string[], buckets: number[]): AccumulatingHistogram {
    return new AccumulatingHistogram({ name: NS + name, help, labelNames, buckets }).registerIn(this.registry);
  }
}
