import { Injectable } from '@nestjs/common';
import { AnswerTooLargeError, HttpSessionProvider, readBoundedBody } from '../http-session';
import { ArrivingText } from './arriving-text';
import { healthErrorOf, type HealthResult } from './worker-health';

/** The worker's clock readings of GET /steady_clock_offset (seconds on its steady clock). */
export interface SteadyClockReading {
  status: number;
  receiveTs?: number;
  transmitTs?: number;
}

const KV_EVENTS_HEADERS = { 'content-type': 'application/json' };
/** A health answer is a status; its body is read only to free the connection. */
const HEALTH_ANSWER_BYTES = 64 * 1024;
/** Default bound of a KV drain (limits.max_kv_events_bytes). */
export const DEFAULT_KV_EVENTS_BYTES = 64 * 1024 * 1024;

/**
 * The control calls to a worker (see docs/protocol.md "Worker endpoints"), made through the
 * session's axios face (the KV drain excepted, below); inference requests take the session's
 * raw request path.
 * Every method takes the worker's base URL. A closed session throws HttpSessionClosedError
 * (a lifecycle error, never a worker fault); upstream failures are reported per method.
 */
@Injectable()
export class WorkerClient {
  constructor(private readonly session: HttpSessionProvider) {}

  /** GET /health. A failure is a negative result, never an exception. */
  async health(url: string, timeoutMs: number): Promise<HealthResult> {
    const axios = this.session.axios;
    const started = performance.now();
    try {
      const res = await axios.get(`${url}/health`, { timeout: timeoutMs, validateStatus: () => true, responseType: 'text', maxContentLength: HEALTH_ANSWER_BYTES });
      const result: HealthResult = { ok: res.status === 200, status: res.status, at: Date.now(), latencyMs: performance.now() - started };
      if (!result.ok) result.error = `HTTP ${res.status}`;
      return result;
    } catch (err) {
      return { ok: false, at: Date.now(), latencyMs: performance.now() - started, error: healthErrorOf(err) };
    }
  }

  /**
   * GET /server_info; undefined when the worker answers 404 (older TensorRT-LLM, other
   * engines: it runs on the defaults). Other failures throw.
   */
  async serverInfo(url: string, timeoutMs: number): Promise<Record<string, unknown> | undefined> {
    const res = await this.session.axios.get<unknown>(`${url}/server_info`, {
      timeout: timeoutMs,
      responseType: 'json',
      validateStatus: (status) => (status >= 200 && status < 300) || status === 404,
    });
    if (res.status === 404) return undefined;
    return typeof res.data === 'object' && res.data !== null && !Array.isArray(res.data) ? (res.data as Record<string, unknown>) : {};
  }

  /**
   * POST /kv_cache_events: a destructive read of the events since the last call, as text
   * (its 64-bit hashes need the KV event parsers). Not a 2xx: throws. A KV-aware router
   * drains a worker after every finished request, so this one call takes the session's raw
   * path, as inference does: through axios it costs about 4x the CPU per call
   * (test/bench/routing/kv-drain-cost.ts). `timeoutMs` bounds the answer's head and each
   * silence in its body; an answer over `maxBytes` throws AnswerTooLargeError unread.
   */
  async drainKvEvents(url: string, timeoutMs: number, maxBytes = DEFAULT_KV_EVENTS_BYTES): Promise<string> {
    return (await this.openKvEvents(url, timeoutMs, maxBytes)).whole();
  }

  /**
   * drainKvEvents with the answer's text given as it arrives, once its head says 2xx (the
   * KV poller parses a large drain as it comes; README "KV block tables").
   */
  async openKvEvents(url: string, timeoutMs: number, maxBytes = DEFAULT_KV_EVENTS_BYTES): Promise<ArrivingText> {
    const target = new URL(url);
    const res = await this.session.request({
      origin: target.origin,
      path: `${target.pathname.replace(/\/+$/, '')}/kv_cache_events`,
      method: 'POST',
      headers: KV_EVENTS_HEADERS,
      body: '',
      headersTimeoutMs: timeoutMs,
      bodyTimeoutMs: timeoutMs,
    });
    if (res.statusCode < 200 || res.statusCode >= 300) {
      // Read (within the bound) so the connection is reused, as for any answer.
      await readBoundedBody(res.body, res.headers['content-length'], maxBytes);
      throw new Error(`Request failed with status code ${res.statusCode}`);
    }
    const length = res.headers['content-length'];
    const declared = Number(Array.isArray(length) ? length[0] : length);
    if (declared > maxBytes) {
      res.body.destroy();
      throw new AnswerTooLargeError(maxBytes);
    }
    return new ArrivingText(res.body, maxBytes);
  }

  /** GET /perf_metrics: the worker's per-request metrics, as it answers them. Not a 2xx: throws. */
  async perfMetrics(url: string, timeoutMs: number): Promise<unknown> {
    const res = await this.session.axios.get<unknown>(`${url}/perf_metrics`, { timeout: timeoutMs });
    return res.data;
  }

  /** GET /steady_clock_offset: when the worker received and answered the call. */
  async readSteadyClock(url: string, timeoutMs: number): Promise<SteadyClockReading> {
    const res = await this.session.axios.get<{ receive_ts?: unknown; transmit_ts?: unknown } | undefined>(`${url}/steady_clock_offset`, {
      timeout: timeoutMs,
      validateStatus: () => true,
    });
    const { receive_ts: receive, transmit_ts: transmit } = res.data ?? {};
    return {
      status: res.status,
      receiveTs: typeof receive === 'number' ? receive : undefined,
      transmitTs: typeof transmit === 'number' ? transmit : undefined,
    };
  }

  /** POST /steady_clock_offset: the worker adds `offset` seconds to the times it reports. Answers the status. */
  async setSteadyClockOffset(url: string, offset: number, timeoutMs: number): Promise<number> {
    const res = await this.session.axios.post(`${url}/steady_clock_offset`, { offset }, { timeout: timeoutMs, validateStatus: () => true });
    return res.status;
  }
}
