import { Injectable } from '@nestjs/common';
import type { RequestContext } from './request-context';
import type { RequestDoneEvent } from '../../request-events';

/** More entries than this means some were never finished: the oldest go first. */
const MAX_ENTRIES = 65_536;

/**
 * The context of each request in flight, by request id: how observers of RequestEvents
 * (which carry the id) find when a request arrived without an async context per request.
 * Two concurrent requests with the same client-given id share an entry; the second one's
 * arrival time is then approximate.
 */
@Injectable()
export class InFlightRequests {
  private readonly byId = new Map<string, RequestContext>();
  /** Entries to end at the next turn: one setImmediate per batch, not one per request. */
  private ending: RequestContext[] = [];
  private readonly endBatch = (): void => {
    const batch = this.ending;
    this.ending = [];
    for (const ctx of batch) this.end(ctx);
  };

  start(ctx: RequestContext): void {
    this.byId.delete(ctx.requestId);
    this.byId.set(ctx.requestId, ctx);
    if (this.byId.size > MAX_ENTRIES) this.byId.delete(this.byId.keys().next().value!);
  }

  get(requestId: string): RequestContext | undefined {
    return this.byId.get(requestId);
  }

  /** Removes the entry, only if it is still this request's (not a later one with the same id). */
  end(ctx: RequestContext): void {
    if (this.byId.get(ctx.requestId) === ctx) this.byId.delete(ctx.requestId);
  }

  /**
   * Ends the entry at the next turn, after the I/O callbacks of this one: observers of the
   * request's last events may still read it until then.
   */
  endSoon(ctx: RequestContext): void {
    if (this.ending.push(ctx) === 1) setImmediate(this.endBatch);
  }

  /** Time between the request's arrival and the flow's start. */
  preFlowMs(done: RequestDoneEvent): number {
    const ctx = this.byId.get(done.requestId);
    if (!ctx) return 0;
    // requestDone is emitted synchronously at the flow's end: now - end = the flow's start.
    const pre = Math.max(0, performance.now() - done.timings.end - ctx.arrivedAt);
    // A client that left gets no answer, so no onResponse ends the entry. Several observers
    // read it within this emit: it goes at the next turn.
    if (done.status === 499) this.endSoon(ctx);
    return pre;
  }

  get size(): number {
    return this.byId.size;
  }
}
