import { BatchSlots, SlotWaiter } from './latency-model';

/**
 * The timers and batch slot of one request answered asynchronously. Cancelled when the client
 * leaves or the worker closes: timers are cleared and the slot goes back to the pool.
 */
export class RequestScope implements SlotWaiter {
  closed = false;
  private readonly timers = new Set<NodeJS.Timeout>();
  private holdsSlot = false;

  constructor(
    private readonly slots: BatchSlots,
    private readonly onDone: (scope: RequestScope) => void,
  ) {}

  async acquireSlot(): Promise<void> {
    await this.slots.acquire(this);
    if (this.closed) {
      this.slots.release();
      return;
    }
    this.holdsSlot = true;
  }

  /** Resolves after `ms`; never resolves once the scope is cancelled. */
  sleep(ms: number): Promise<void> {
    if (ms <= 0 || this.closed) return this.closed ? new Promise(() => undefined) : Promise.resolve();
    return new Promise((resolve) => {
      const t = setTimeout(() => {
        this.timers.delete(t);
        resolve();
      }, ms);
      this.timers.add(t);
    });
  }

  /** The request is over (answered or abandoned). Idempotent. */
  finish(): void {
    if (this.holdsSlot) {
      this.holdsSlot = false;
      this.slots.release();
    }
    if (!this.closed) {
      this.closed = true;
      for (const t of this.timers) clearTimeout(t);
      this.timers.clear();
      this.slots.prune();
      this.onDone(this);
    }
  }
}
