import type * as http from 'node:http';
import { steadyNowSeconds } from '../observability/perf/steady-clock';

interface PerfEntry {
  request_id: number;
  ctx_request_id: number;
  perf_metrics: { timing_metrics: { arrival_time: number; first_token_time: number; last_token_time: number } };
}

/**
 * A worker's per-request metrics as trtllm-serve workers serve them: GET /perf_metrics (read
 * once, oldest first, bounded), and GET/POST /steady_clock_offset, through which the
 * disaggregated server aligns the worker's steady clock with its own (NTP-style exchange;
 * the offset it posts is added to every time the worker reports).
 */
export class SimPerfMetrics {
  private offset = 0;
  private entries: PerfEntry[] = [];
  private nextId = 1;

  constructor(private readonly capacity = 1000) {}

  /** The worker's clock, as it reports times (shifted by the posted offset). */
  now(): number {
    return steadyNowSeconds() + this.offset;
  }

  record(ctxRequestId: number, arrival: number, firstToken: number): void {
    this.entries.push({
      request_id: this.nextId++,
      ctx_request_id: ctxRequestId,
      perf_metrics: { timing_metrics: { arrival_time: arrival, first_token_time: firstToken, last_token_time: this.now() } },
    });
    if (this.entries.length > this.capacity) this.entries.shift();
  }

  /** Handles the two endpoints; false when the path is neither. */
  handle(path: string, method: string, req: http.IncomingMessage, res: http.ServerResponse): boolean {
    if (path === '/perf_metrics') {
      const out = this.entries;
      this.entries = [];
      send(res, 200, out);
      return true;
    }
    if (path !== '/steady_clock_offset') return false;
    if (method === 'GET') {
      const receive = this.now();
      send(res, 200, { receive_ts: receive, transmit_ts: this.now() });
      return true;
    }
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      try {
        const { offset } = JSON.parse(Buffer.concat(chunks).toString('utf8')) as { offset?: unknown };
        if (typeof offset !== 'number' || !Number.isFinite(offset)) return send(res, 400, { error: 'offset must be a number' });
        this.offset += offset;
        send(res, 200, {});
      } catch {
        send(res, 400, { error: 'invalid JSON' });
      }
    });
    return true;
  }
}

function send(res: http.ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
