/**
 * TensorRT-LLM's per-response metrics protocol (docs/protocol.md "Per-response metrics"): a client (or the
 * router, asking a worker) sends `X-TRTLLM-return-metrics: 1`; a non-streamed answer carries
 * four Server-Timing-style headers, a stream ends with a `trtllm.perf_metrics` event holding
 * the same four as JSON. Durations are milliseconds with 6 decimals, timestamps steady-clock
 * seconds with 9. A worker names its items `server_*`/`server-*`; the router renames them to
 * its phases `ctx`/`gen` and puts its own `disagg` items first.
 */

export const RETURN_METRICS_HEADER = 'x-trtllm-return-metrics';
export const SERVER_TIMING_HEADER = 'Server-Timing';
export const START_END_TIME_HEADER = 'X-TRTLLM-Start-End-Time';
export const STEP_METRICS_HEADER = 'X-TRTLLM-Step-Metrics';
export const CTX_CHUNK_METRICS_HEADER = 'X-TRTLLM-Ctx-Chunk-Metrics';
export const SSE_METRICS_EVENT = 'trtllm.perf_metrics';

/** The four headers, in the order they are built and serialised. */
export const METRICS_HEADERS = [SERVER_TIMING_HEADER, START_END_TIME_HEADER, STEP_METRICS_HEADER, CTX_CHUNK_METRICS_HEADER] as const;
export type MetricsHeaderName = (typeof METRICS_HEADERS)[number];
export type MetricsHeaders = Partial<Record<MetricsHeaderName, string>>;

/** Past this many bytes of headers, step and context-chunk metrics are left out. */
const PAYLOAD_BUDGET_BYTES = 80 * 1024;

export type WorkerPhaseName = 'ctx' | 'gen';

/** A worker's times as its metrics headers give them (steady-clock seconds). */
export interface WorkerTiming {
  arrival_time?: number;
  last_token_time?: number;
  first_scheduled_time?: number;
  first_token_time?: number;
}

/** One worker's part of a request: its headers renamed to the phase, and the times read from them. */
export interface WorkerPhase {
  headers: MetricsHeaders;
  timing: WorkerTiming;
}

/** The router's own times of a request, on its steady clock (seconds). */
export interface DisaggTiming {
  arrival: number;
  end: number;
  ctxDispatch: number | null;
  firstToken: number | null;
}

/** `X-TRTLLM-return-metrics: 1` (surrounding blanks allowed), as TensorRT-LLM checks it. */
export function asksForMetrics(value: string | string[] | undefined): boolean {
  return typeof value === 'string' && value.trim() === '1';
}

export function durationItem(name: string, ms: number): string {
  return `${name};dur=${ms.toFixed(6)}`;
}

export function timestampItem(name: string, seconds: number): string {
  return `${name};ts=${seconds.toFixed(9)}`;
}

/** Milliseconds from `start` to `end` (seconds), or undefined when either is missing or it is negative. */
export function elapsedMs(start: number | null | undefined, end: number | null | undefined): number | undefined {
  if (start == null || end == null) return undefined;
  const ms = (end - start) * 1000;
  return ms >= 0 && Number.isFinite(ms) ? ms : undefined;
}

/**
 * A worker's metrics (its answer's headers, or the JSON of its SSE event) as one phase: the
 * values renamed from `server` to the phase, the times read back from the start/end
 * timestamps and the queue/ttft/e2e durations. Undefined when it sent none.
 */
export function workerPhaseFrom(get: (name: MetricsHeaderName) => unknown, phase: WorkerPhaseName): WorkerPhase | undefined {
  const headers: MetricsHeaders = {};
  let any = false;
  for (const name of METRICS_HEADERS) {
    const value = get(name);
    if (typeof value !== 'string' || value === '') continue;
    headers[name] = value.replaceAll('server_', `${phase}_`).replaceAll('server-', `${phase}-`);
    any = true;
  }
  if (!any) return undefined;
  const timing: WorkerTiming = {};
  for (const item of (headers[START_END_TIME_HEADER] ?? '').split(',')) {
    const [name, ts] = splitItem(item, ';ts=');
    const value = Number(ts);
    if (ts === undefined || !Number.isFinite(value)) continue;
    if (name === `${phase}-start`) timing.arrival_time = value;
    else if (name === `${phase}-end`) timing.last_token_time = value;
  }
  const durations = new Map<string, number>();
  for (const item of (headers[SERVER_TIMING_HEADER] ?? '').split(',')) {
    const [name, dur] = splitItem(item, ';dur=');
    const value = Number(dur);
    if (dur !== undefined && name.startsWith(`${phase}_`) && Number.isFinite(value)) durations.set(name.slice(phase.length + 1), value / 1000);
  }
  const arrival = timing.arrival_time;
  if (arrival !== undefined) {
    const queue = durations.get('queue');
    const ttft = durations.get('ttft');
    const e2e = durations.get('e2e');
    if (queue !== undefined) timing.first_scheduled_time ??= arrival + queue;
    if (ttft !== undefined) timing.first_token_time ??= arrival + ttft;
    if (e2e !== undefined) timing.last_token_time ??= arrival + e2e;
  }
  return { headers, timing };
}

function splitItem(item: string, separator: string): [string, string | undefined] {
  const trimmed = item.trim();
  const at = trimmed.indexOf(separator);
  return at < 0 ? [trimmed, undefined] : [trimmed.slice(0, at), trimmed.slice(at + separator.length)];
}

/**
 * The headers of a disaggregated answer: the router's `disagg` start/end, queue (arrival to
 * the context call) and ttft, then each worker's items once, context first.
 */
export function disaggMetricsHeaders(t: DisaggTiming, ctx: WorkerPhase | undefined, gen: WorkerPhase | undefined): MetricsHeaders {
  const lists: Record<MetricsHeaderName, string[]> = {
    [SERVER_TIMING_HEADER]: [],
    [START_END_TIME_HEADER]: [timestampItem('disagg-start', t.arrival), timestampItem('disagg-end', t.end)],
    [STEP_METRICS_HEADER]: [],
    [CTX_CHUNK_METRICS_HEADER]: [],
  };
  const queue = elapsedMs(t.arrival, t.ctxDispatch);
  if (queue !== undefined) lists[SERVER_TIMING_HEADER].push(durationItem('disagg_queue', queue));
  const ttft = elapsedMs(t.arrival, t.firstToken);
  if (ttft !== undefined) lists[SERVER_TIMING_HEADER].push(durationItem('disagg_ttft', ttft));
  for (const phase of [ctx, gen]) {
    if (!phase) continue;
    for (const name of METRICS_HEADERS) {
      const value = phase.headers[name];
      if (value) lists[name].push(value);
    }
  }
  const out: MetricsHeaders = {};
  for (const name of METRICS_HEADERS) if (lists[name].length) out[name] = lists[name].join(', ');
  return out;
}

/** Within the payload budget, or only Server-Timing and the start/end times (as TensorRT-LLM trims). */
export function limitMetricsHeaders(headers: MetricsHeaders): MetricsHeaders {
  let size = 0;
  for (const name of METRICS_HEADERS) {
    const value = headers[name];
    if (value !== undefined) size += Buffer.byteLength(name) + Buffer.byteLength(value) + 4;
  }
  if (size <= PAYLOAD_BUDGET_BYTES) return headers;
  const out: MetricsHeaders = {};
  if (headers[SERVER_TIMING_HEADER] !== undefined) out[SERVER_TIMING_HEADER] = headers[SERVER_TIMING_HEADER];
  if (headers[START_END_TIME_HEADER] !== undefined) out[START_END_TIME_HEADER] = headers[START_END_TIME_HEADER];
  return out;
}

/** The SSE event that ends a stream (after `data: [DONE]`); empty when there is nothing to send. */
export function metricsSseEvent(headers: MetricsHeaders): string {
  const limited = limitMetricsHeaders(headers);
  if (Object.keys(limited).length === 0) return '';
  return `event: ${SSE_METRICS_EVENT}\ndata: ${JSON.stringify(limited)}\n\n`;
}
