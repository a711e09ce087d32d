import type { RequestType } from './faults';

/** Requests a worker received, for its stats; reset by the control API. */
export class SimCounters {
  total = 0;
  byEndpoint: Record<string, number> = {};
  byType: Record<RequestType, number> = { context_only: 0, generation_only: 0, plain: 0 };
  /** Answered with 4xx by the worker's own checks (bad body, unknown ctx_request_id, ...). */
  rejected = 0;
  /** Generation requests per data-parallel rank. */
  byDpRank: number[] = [];
  /** Generation request bodies decoded, by their encoding (docs/protocol.md "Body encoding"). */
  byEncoding = { json: 0, msgpack: 0 };
  private receivedRing: unknown[] = [];

  constructor(private readonly keepReceived: number) {}

  count(endpoint: string): void {
    const by = this.byEndpoint;
    by[endpoint] = (by[endpoint] ?? 0) + 1;
  }

  /** Keeps the most recent generation request bodies (`keepReceived` of them). */
  remember(body: unknown): void {
    const keep = this.keepReceived;
    if (keep === 0) return;
    this.receivedRing.push(body);
    if (this.receivedRing.length > keep) this.receivedRing.shift();
  }

  /** The most recent generation request bodies, oldest first. */
  get received(): unknown[] {
    return [...this.receivedRing];
  }

  reset(): void {
    this.total = 0;
    this.byEndpoint = {};
    this.byType = { context_only: 0, generation_only: 0, plain: 0 };
    this.rejected = 0;
    this.byDpRank = [];
    this.byEncoding = { json: 0, msgpack: 0 };
    this.receivedRing = [];
  }
}
